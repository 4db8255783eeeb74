package topology

import (
	"testing"

	"github.com/google/btree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// checkAggregates recounts every aggregate, histogram and index from the
// nodes alone and compares with the incremental state.
func checkAggregates(t require.TestingT, f *Fleet) {
	for n := range f.NumNodes() {
		require.True(t, f.nalloc[n] >= 0 && f.nalloc[n] <= f.ncap[n], "node %d alloc %d cap %d", n, f.nalloc[n], f.ncap[n])
	}
	for d := range DomainID(f.NumDomains()) {
		for s := range f.slots {
			var want aggregate
			hist := make([]int32, f.maxGPUs+1)
			lo, hi := f.Nodes(d)
			for n := lo; n < hi; n++ {
				if s != f.allSlot && int(f.ngroup[n]) != s {
					continue
				}
				if f.slots == 1 || s == f.allSlot || int(f.ngroup[n]) == s {
					want.nodes++
					want.gpus += f.ncap[n]
					want.alloc += f.nalloc[n]
					if f.nhealth[n] == Healthy {
						free := f.ncap[n] - f.nalloc[n]
						want.healthyNodes++
						want.healthyGPUs += f.ncap[n]
						want.free += free
						hist[free]++
						if free == f.ncap[n] {
							want.freeNodes++
						} else if free > 0 {
							want.stranded += free
						}
					}
				}
			}
			require.Equal(t, want, f.agg[int(d)*f.slots+s], "domain %d slot %d", d, s)
			b := f.histBase(d, s)
			require.Equal(t, hist, f.hist[b:b+f.maxGPUs+1], "histogram of domain %d slot %d", d, s)
			require.Equal(t, want.healthyGPUs, want.free+allocHealthy(f, d, s), "free + allocated = capacity on healthy nodes")
		}
	}
	for l := 1; l < f.depth; l++ {
		for g := range f.groups {
			var wantNodes, wantGPUs []uint64
			lo, hi := f.DomainsAt(Level(l))
			for d := lo; d < hi; d++ {
				a := f.agg[int(d)*f.slots+f.slot(GroupID(g))]
				if a.nodes == 0 {
					continue
				}
				wantNodes = append(wantNodes, key(a.freeNodes, int32(d)))
				wantGPUs = append(wantGPUs, key(a.free, int32(d)))
			}
			require.ElementsMatch(t, wantNodes, items(f.byFreeNodes[l][g].Ascend), "level %d group %d by free nodes", l, g)
			require.ElementsMatch(t, wantGPUs, items(f.byFreeGPUs[l][g].Ascend), "level %d group %d by free GPUs", l, g)
		}
	}
	for g := range f.groups {
		var want []uint64
		for n := range f.NumNodes() {
			if int(f.ngroup[n]) == g && f.nhealth[n] == Healthy && f.ncap[n] > f.nalloc[n] {
				want = append(want, key(f.ncap[n]-f.nalloc[n], int32(n)))
			}
		}
		require.ElementsMatch(t, want, items(f.nodesByFree[g].Ascend), "nodes of group %d", g)
	}
}

func allocHealthy(f *Fleet, d DomainID, s int) int32 {
	var a int32
	lo, hi := f.Nodes(d)
	for n := lo; n < hi; n++ {
		if (f.slots == 1 || s == f.allSlot || int(f.ngroup[n]) == s) && f.nhealth[n] == Healthy {
			a += f.nalloc[n]
		}
	}
	return a
}

func items(ascend func(btree.ItemIteratorG[uint64])) []uint64 {
	var out []uint64
	ascend(func(k uint64) bool { out = append(out, k); return true })
	return out
}

// genSpec draws a small random fleet: 1-4 levels, uneven fanouts, mixed
// GPU counts, flavors and pools.
func genSpec(t *rapid.T) Spec {
	depth := rapid.IntRange(1, 4).Draw(t, "depth")
	levels := []string{"a", "b", "c", "d"}[:depth]
	var nodes []NodeSpec
	var walk func(path []string, l int)
	walk = func(path []string, l int) {
		fan := rapid.IntRange(1, 3).Draw(t, "fanout")
		for i := range fan {
			name := levels[l] + string(rune('0'+len(nodes))) + "-" + string(rune('0'+i))
			for _, p := range path {
				name += p
			}
			if l == depth-1 {
				nodes = append(nodes, NodeSpec{
					Name:   "n" + name,
					Path:   append([]string(nil), path...),
					GPUs:   rapid.SampledFrom([]int{1, 4, 8}).Draw(t, "gpus"),
					Flavor: rapid.SampledFrom([]string{"H100", "H200"}).Draw(t, "flavor"),
					Pool:   rapid.SampledFrom([]string{"", "inference"}).Draw(t, "pool"),
				})
				continue
			}
			walk(append(path, name), l+1)
		}
	}
	walk(nil, 0)
	return Spec{Levels: levels, Nodes: nodes}
}

func TestPropertyAggregatesMatchRecount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f, err := New(genSpec(t))
		require.NoError(t, err)
		fleets := []*Fleet{f}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			i := rapid.IntRange(0, len(fleets)-1).Draw(t, "fleet")
			f := fleets[i]
			n := NodeID(rapid.IntRange(-1, f.NumNodes()).Draw(t, "node"))
			gpus := rapid.IntRange(-1, 9).Draw(t, "gpus")
			before := f.Clone()
			var err error
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); op {
			case 0:
				err = f.Allocate(n, gpus)
			case 1:
				err = f.Release(n, gpus)
			case 2:
				err = f.SetHealth(n, Health(rapid.IntRange(0, 2).Draw(t, "health")))
			case 3:
				fleets = append(fleets, f.Clone())
			}
			if err != nil {
				assertSameState(t, before, f)
			}
			for _, g := range fleets {
				checkAggregates(t, g)
			}
		}
	})
}

func TestPropertyRefusedAllocateMatchesCapacity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f, err := New(genSpec(t))
		require.NoError(t, err)
		n := NodeID(rapid.IntRange(0, f.NumNodes()-1).Draw(t, "node"))
		gpus := rapid.IntRange(1, 9).Draw(t, "gpus")
		err = f.Allocate(n, gpus)
		assert.Equal(t, gpus > f.Capacity(n), err != nil)
	})
}
