package placement_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// fuzzFleet is a small fleet of two spines with H100 (some MIG), L4 and
// GPU-less nodes, cpu and memory, partly held by whole GPUs, shares and
// slices.
func fuzzFleet(t testing.TB) *topology.Fleet {
	var spec topology.Spec
	spec.Levels = []string{"spine", "leaf", "node"}
	models := []string{"H100", "L4", "H100", ""}
	for i := range 8 {
		ns := topology.NodeSpec{Name: "n" + string(rune('a'+i)), Path: []string{"s" + string(rune('0'+i/4)), "l" + string(rune('0'+i/2))},
			GPUs: 4, Flavor: models[i%4], MIG: i == 2,
			Resources: map[string]int64{"cpu": int64(8+8*(i%3)) * 1000, "memory": int64(16+16*(i%2)) << 30}}
		if ns.Flavor == "" {
			ns.GPUs = 0
		}
		spec.Nodes = append(spec.Nodes, ns)
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	cpu, _ := f.Resource("cpu")
	for _, c := range []topology.Claim{
		{Node: 0, Whole: 0b11, Resources: []topology.ResourceAmount{{Resource: cpu, Amount: 4000}}},
		{Node: 1, GPU: 1, Share: 500},
		{Node: 2, GPU: 0, MIG: "3g.40gb", Slice: 4},
		{Node: 4, GPU: 3, Share: 700, Resources: []topology.ResourceAmount{{Resource: cpu, Amount: 6000}}},
	} {
		require.NoError(t, f.AllocateClaim(c))
	}
	return f
}

// FuzzPlace drives Place, PlaceAvoiding and PlaceWithin with any pod
// sets, levels, spread, models, bounds and amounts (zero, negative,
// huge): they never panic, never change the fleet, refuse what they
// cannot place with a *NoFit (a malformed request with ErrInvalid), and
// every placement they return is valid.
func FuzzPlace(f *testing.F) {
	f.Add(1, 1, 0, uint8(0), int64(1000), int64(0), 0, 0, uint8(0), uint8(3), 0, 0, uint8(0), uint8(0), false, -1, -1, 0)
	f.Add(2, 0, 300, uint8(0), int64(2000), int64(1<<30), 1, 2, uint8(1), uint8(2), 1, 0, uint8(0), uint8(1), true, 3, -1, 0)
	f.Add(1, 0, 0, uint8(2), int64(0), int64(0), 0, 0, uint8(0), uint8(3), 0, 2, uint8(1), uint8(2), true, -1, 1, 2)
	f.Add(1, 0, 0, uint8(0), int64(0), int64(-5), 0, 0, uint8(2), uint8(2), 0, 0, uint8(0), uint8(0), false, -1, -1, 0)
	f.Add(4, 2, 0, uint8(0), int64(-1), int64(0), 3, 0, uint8(0), uint8(3), 0, 0, uint8(0), uint8(3), true, 0, 0, 4)
	f.Fuzz(func(t *testing.T, count, gpus, share int, mig uint8, cpu, mem int64, count2, gpus2 int,
		req, pref uint8, maxPerNode, maxPerDom int, spreadLevel, models uint8, ranked bool, avoid, within, rank int) {
		fl := fuzzFleet(t)
		levels := []string{"", "spine", "leaf", "node", "rack"}
		profiles := []string{"", "1g.10gb", "3g.40gb", "7g.80gb", "9g"}
		ps := gang.PodSet{Name: "a", Count: count, GPUsPerPod: gpus, GPUShare: share, MIG: profiles[int(mig)%len(profiles)]}
		if cpu != 0 {
			ps.Resources = append(ps.Resources, gang.Resource{Name: "cpu", Amount: cpu})
		}
		if mem != 0 {
			ps.Resources = append(ps.Resources, gang.Resource{Name: "memory", Amount: mem})
		}
		if rank != 0 {
			ps.RankGroups = []gang.RankGroup{{Size: rank, Level: levels[int(req)%len(levels)]}}
		}
		w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{ps},
			Topology: gang.TopologyRequest{Required: levels[int(req)%len(levels)], Preferred: levels[int(pref)%len(levels)]},
			Spread:   gang.Spread{MaxPerNode: maxPerNode, MaxPerDomain: maxPerDom, Level: levels[int(spreadLevel)%len(levels)]}}
		if count2 != 0 {
			w.PodSets = append(w.PodSets, gang.PodSet{Name: "b", Count: count2, GPUsPerPod: gpus2,
				Resources: []gang.Resource{{Name: "cpu", Amount: cpu}}})
		}
		switch models % 4 {
		case 1:
			w.Flavors = []string{"L4"}
		case 2:
			w.Flavors, w.FlavorsInOrder = []string{"L4", "H100"}, true
		case 3:
			w.Pools = []string{"none"}
		}
		var opt placement.Options
		if ranked {
			fr := placement.NewFragmentation()
			fr.Observe(w)
			opt.Ranker = fr
		}
		before := fl.String()
		p := placement.NewPlacer(opt)
		var a placement.Assignment
		var err error
		switch {
		case within >= 0:
			a, err = p.PlaceWithin(fl, w, topology.DomainID(within), topology.DomainID(avoid))
		case avoid >= 0:
			a, err = p.PlaceAvoiding(fl, w, topology.DomainID(avoid))
		default:
			a, err = p.Place(fl, w)
		}
		require.Equal(t, before, fl.String(), "Place changed the fleet")
		if err != nil {
			var nf *placement.NoFit
			require.ErrorAs(t, err, &nf)
			require.ErrorIs(t, err, placement.ErrNoFit)
			if !amountsValid(w) {
				require.Equal(t, placement.CauseInvalid, nf.Cause, "a bad amount refused as %v", err)
				require.ErrorIs(t, err, placement.ErrInvalid)
			}
			return
		}
		require.True(t, amountsValid(w), "a request with a bad amount was placed")
		out := outOfBounds(fl, avoidList(fl, avoid, within), boundedWithin(fl, within))
		reqLvl, _ := fl.Level(w.Topology.Required)
		checkAnswer(t, fl, w, out, reqLvl, a)
	})
}

// amountsValid reports whether every number of w is in range, as
// gang.Workload.Validate has it: counts, GPUs, shares, one GPU form,
// positive and unique resources, minimum counts, spread limits, segment
// size.
func amountsValid(w *gang.Workload) bool {
	if w.Spread.MaxPerNode < 0 || w.Spread.MaxPerDomain < 0 || w.Topology.Segment.Size < 0 {
		return false
	}
	for _, ps := range w.PodSets {
		forms := 0
		for _, set := range []bool{ps.GPUsPerPod > 0, ps.GPUShare > 0, ps.MIG != ""} {
			if set {
				forms++
			}
		}
		if ps.Count < 1 || ps.Count > gang.MaxGPUs || ps.GPUsPerPod < 0 || ps.GPUShare < 0 ||
			ps.GPUShare > gang.MilliGPU || forms > 1 || ps.MinCount < 0 || ps.MinCount > ps.Count {
			return false
		}
		for i, r := range ps.Resources {
			if r.Amount <= 0 || slices.ContainsFunc(ps.Resources[:i], func(q gang.Resource) bool { return q.Name == r.Name }) {
				return false
			}
		}
	}
	return true
}

// avoidList is the avoided domain of a fuzz call, if any.
func avoidList(f *topology.Fleet, avoid, within int) []topology.DomainID {
	if avoid < 0 || avoid >= f.NumDomains() || within >= 0 && avoid < 0 {
		return nil
	}
	return []topology.DomainID{topology.DomainID(avoid)}
}

// boundedWithin is the domain a fuzz call stays within, -1 for none.
func boundedWithin(f *topology.Fleet, within int) topology.DomainID {
	if within < 0 || within >= f.NumDomains() {
		return -1
	}
	return topology.DomainID(within)
}

// Zero, negative and unknown amounts, and malformed pod sets, are
// refused with a typed error naming the kind, never a panic.
func TestPlaceRefusesBadAmounts(t *testing.T) {
	f := fuzzFleet(t)
	for _, tc := range []struct {
		name string
		ps   gang.PodSet
		want error
	}{
		{"zero memory", gang.PodSet{GPUsPerPod: 1, Resources: []gang.Resource{{Name: "memory", Amount: 0}}}, placement.ErrBadAmount},
		{"zero memory on a share", gang.PodSet{GPUShare: 500, Resources: []gang.Resource{{Name: "memory", Amount: 0}}}, placement.ErrBadAmount},
		{"negative cpu", gang.PodSet{Resources: []gang.Resource{{Name: "cpu", Amount: -1}}}, placement.ErrBadAmount},
		{"unknown resource", gang.PodSet{GPUsPerPod: 1, Resources: []gang.Resource{{Name: "fpga", Amount: 1}}}, placement.ErrUnknownResource},
		{"resource twice", gang.PodSet{Resources: []gang.Resource{{Name: "cpu", Amount: 1}, {Name: "cpu", Amount: 1}}}, placement.ErrBadRequest},
		{"two GPU forms", gang.PodSet{GPUsPerPod: 1, GPUShare: 500}, placement.ErrBadShare},
		{"negative share", gang.PodSet{GPUShare: -1}, placement.ErrBadShare},
		{"no pods", gang.PodSet{Count: -1, GPUsPerPod: 1}, placement.ErrBadRequest},
		{"nothing asked", gang.PodSet{}, placement.ErrBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.ps
			ps.Name = "p"
			if ps.Count == 0 {
				ps.Count = 1
			}
			w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{ps}}
			for _, opt := range []placement.Options{{}, {Ranker: placement.NewFragmentation()}, {Terse: true}} {
				_, err := placement.Place(f, w, opt)
				require.ErrorIs(t, err, tc.want)
				require.ErrorIs(t, err, placement.ErrInvalid)
				var nf *placement.NoFit
				require.ErrorAs(t, err, &nf)
				require.Equal(t, placement.CauseInvalid, nf.Cause)
			}
			_, err := placement.NewPlacer(placement.Options{}).PlaceAvoiding(f, w, 1)
			require.ErrorIs(t, err, tc.want)
			_, err = placement.NewPlacer(placement.Options{}).PlaceWithin(f, w, 1)
			require.ErrorIs(t, err, tc.want)
		})
	}
	_, err := placement.Place(f, nil, placement.Options{})
	require.ErrorIs(t, err, placement.ErrBadRequest)
	_, err = placement.NewPlacer(placement.Options{}).PlaceAvoiding(nil, nil)
	require.ErrorIs(t, err, placement.ErrBadRequest)
}
