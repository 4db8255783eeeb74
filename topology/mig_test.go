package topology_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/topology"
)

// What each slice is charged: its compute slices, 143 thousandths each
// but the last compute slice's 142.
func TestMIGSliceChargedByItsComputeSlices(t *testing.T) {
	prof := map[string]topology.MIGProfile{}
	for _, p := range topology.MIGProfiles("H100") {
		prof[p.Name] = p
	}
	for _, tt := range []struct {
		profile string
		start   int
		want    int
	}{
		{"1g.10gb", 0, 143},
		{"1g.10gb", 5, 143},
		{"1g.10gb", 6, 142},
		{"1g.20gb", 4, 143},
		{"1g.20gb", 6, 142},
		{"2g.20gb", 0, 286},
		{"2g.20gb", 4, 286},
		{"3g.40gb", 0, 429},
		{"3g.40gb", 4, 428},
		{"4g.40gb", 0, 572},
		{"7g.80gb", 0, 1000},
	} {
		t.Run(fmt.Sprintf("%s@%d", tt.profile, tt.start), func(t *testing.T) {
			assert.Equal(t, tt.want, prof[tt.profile].ShareAt(tt.start))
		})
	}
}

// Every way to carve a GPU (each profile at each start it may take, in
// any combination that does not overlap) is charged at most one GPU,
// exactly one when all seven compute slices are taken, and each slice
// between its seventh parts rounded down and rounded up.
func TestMIGCarvingNeverChargedAboveOneGPU(t *testing.T) {
	for _, model := range []string{"H100", "A100-40"} {
		profiles := topology.MIGProfiles(model)
		require.NotEmpty(t, profiles)
		type slice struct {
			span    uint8
			compute uint8
			share   int
		}
		var all []slice
		for _, p := range profiles {
			for s := range topology.MIGSlices {
				if p.Starts&(1<<s) == 0 {
					continue
				}
				span := uint8(0xFF)
				if p.Slices < topology.MIGSlices {
					span = uint8(1<<p.Slices-1) << s
				}
				compute := uint8(1<<p.Compute-1) << s
				require.Zero(t, compute&^span, "%s@%d: compute slices outside its memory slices", p.Name, s)
				require.Less(t, s+p.Compute, topology.MIGCompute+1, "%s@%d: beyond the seventh compute slice", p.Name, s)
				share := p.ShareAt(s)
				fair := float64(p.Compute) * topology.MilliGPU / topology.MIGCompute
				assert.GreaterOrEqual(t, float64(share), float64(int(fair)), "%s@%d below its part rounded down", p.Name, s)
				assert.LessOrEqual(t, float64(share), math.Ceil(fair), "%s@%d above its part rounded up", p.Name, s)
				all = append(all, slice{span, compute, share})
			}
		}
		carvings, full := 0, 0
		var walk func(i int, used, compute uint8, milli int)
		walk = func(i int, used, compute uint8, milli int) {
			if i == len(all) {
				carvings++
				require.LessOrEqual(t, milli, topology.MilliGPU, "%s: carving %#x charged %d", model, used, milli)
				if compute == 1<<topology.MIGCompute-1 {
					full++
					require.Equal(t, topology.MilliGPU, milli, "%s: carving %#x takes every compute slice", model, used)
				}
				return
			}
			walk(i+1, used, compute, milli)
			if s := all[i]; used&s.span == 0 {
				walk(i+1, used|s.span, compute|s.compute, milli+s.share)
			}
		}
		walk(0, 0, 0, 0)
		assert.Positive(t, full, "%s: no carving took every compute slice", model)
		t.Logf("%s: %d carvings, %d take every compute slice", model, carvings, full)
	}
}

// Seven 1g slices carve a GPU fully: together they are charged one GPU,
// on the fleet as in the claim's own count.
func TestSevenOneGSlicesChargeOneGPU(t *testing.T) {
	f := sharedFleet(t)
	h, _ := f.Node("h")
	total := 0
	for s := range 7 {
		c := topology.Claim{Node: h, GPU: 3, MIG: "1g.10gb", Slice: s}
		total += c.MilliGPUs(f)
		require.NoError(t, f.AllocateClaim(c))
	}
	used, slices := f.GPUUsed(h, 3)
	assert.Equal(t, topology.MilliGPU, used)
	assert.Equal(t, topology.MilliGPU, total)
	assert.Equal(t, uint8(0x7F), slices)
	assert.Equal(t, int64(topology.MilliGPU), f.MilliAllocated(topology.Root, topology.AllGroups))
	for s := range 7 {
		require.NoError(t, f.ReleaseClaim(topology.Claim{Node: h, GPU: 3, MIG: "1g.10gb", Slice: s}))
	}
	used, _ = f.GPUUsed(h, 3)
	assert.Zero(t, used)
}

// AscendMIGGPUs lists the partly carved GPUs fewest free memory slices
// first (the best-fit order for a slice), with their free slices, and
// leaves out GPUs with none free or none carved.
func TestAscendMIGGPUsIsFewestFreeSlicesFirst(t *testing.T) {
	f := sharedFleet(t)
	h, _ := f.Node("h")
	g, ok := f.Group("H100", "")
	require.True(t, ok)
	for s := range 7 {
		require.NoError(t, f.AllocateClaim(topology.Claim{Node: h, GPU: 0, MIG: "1g.10gb", Slice: s}))
	}
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: h, GPU: 1, MIG: "1g.10gb", Slice: 0}))
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: h, GPU: 2, MIG: "3g.40gb", Slice: 0}))
	type seen struct{ gpu, free int }
	var got []seen
	f.AscendMIGGPUs(g, 1, func(n topology.NodeID, gpu, free int) bool {
		require.Equal(t, h, n)
		got = append(got, seen{gpu, free})
		return true
	})
	assert.Equal(t, []seen{{0, 1}, {2, 4}, {1, 7}}, got)

	got = got[:0]
	f.AscendMIGGPUs(g, 5, func(_ topology.NodeID, gpu, free int) bool {
		got = append(got, seen{gpu, free})
		return true
	})
	assert.Equal(t, []seen{{1, 7}}, got, "at least 5 free slices")
}

// MIGStart finds a profile's first allowed start whose slices are free,
// up to a span that ends on the GPU's last memory slice.
func TestMIGStartReachesTheLastSlice(t *testing.T) {
	f := sharedFleet(t)
	h, _ := f.Node("h")
	for _, tc := range []struct {
		profile string
		used    uint8
		start   int
		ok      bool
	}{
		{"7g.80gb", 0, 0, true},
		{"7g.80gb", 0x01, 0, false},
		{"3g.40gb", 0x0F, 4, true},
		{"3g.40gb", 0x1F, 0, false},
		{"1g.10gb", 0x3F, 6, true},
	} {
		t.Run(fmt.Sprintf("%s/%02x", tc.profile, tc.used), func(t *testing.T) {
			p, ok := f.NodeMIGProfile(h, tc.profile)
			require.True(t, ok)
			s, ok := topology.MIGStart(tc.used, p)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.start, s)
		})
	}
}
