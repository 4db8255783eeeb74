package placement_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// naive is the reference placer: the same policy as Placer.Place for one
// pod set (optionally segmented or rank-grouped), by scanning every node of
// every domain.
type naive struct {
	f *topology.Fleet
	w *gang.Workload
	// relax is how many of the largest preferred rank groups a trial gives
	// up (place tries 0, 1, ... per level).
	relax int
}

// groups returns the rank groups in force after giving up the relax
// largest preferred ones, smallest first.
func (n naive) groups() []gang.RankGroup {
	var out []gang.RankGroup
	drop := n.relax
	all := n.w.PodSets[0].RankGroups
	for j := len(all) - 1; j >= 0; j-- {
		if !all[j].Required && drop > 0 {
			drop--
			continue
		}
		out = append([]gang.RankGroup{all[j]}, out...)
	}
	return out
}

// units counts the whole groups of gs[j] (pods for j < 0) that domain d
// can hold: every domain of the group's level inside d (or the one d lies
// in) holds as many as its smaller groups make up.
func (n naive) units(d topology.DomainID, g topology.GroupID, gs []gang.RankGroup, j int) int {
	k := n.w.PodSets[0].GPUsPerPod
	if j < 0 {
		return n.domainCap(d, g, k)
	}
	inner := 1
	if j > 0 {
		inner = gs[j-1].Size
	}
	gl, _ := n.f.Level(gs[j].Level)
	dl := n.f.DomainLevel(d)
	if dl >= gl {
		return n.units(d, g, gs, j-1) / (gs[j].Size / inner)
	}
	c := 0
	lo, hi := n.f.DomainsAt(gl)
	for e := lo; e < hi; e++ {
		if first, _ := n.f.Nodes(e); n.f.DomainOf(first, dl) == d {
			c += n.units(e, g, gs, j-1) / (gs[j].Size / inner)
		}
	}
	return c
}

func (n naive) nodeCap(x topology.NodeID, g topology.GroupID, k int) int {
	if n.f.Health(x) != topology.Healthy || n.f.NodeGroup(x) != g {
		return 0
	}
	return n.f.Free(x) / k
}

func (n naive) domainCap(d topology.DomainID, g topology.GroupID, k int) int {
	lo, hi := n.f.Nodes(d)
	c := 0
	for x := lo; x < hi; x++ {
		c += n.nodeCap(x, g, k)
	}
	return c
}

func (n naive) fits(d topology.DomainID, g topology.GroupID) bool {
	ps := n.w.PodSets[0]
	if gs := n.groups(); len(gs) > 0 {
		return n.units(d, g, gs, len(gs)-1) >= ps.Count/gs[len(gs)-1].Size
	}
	seg := n.w.Topology.Segment
	if seg.Size > 0 {
		sl, _ := n.f.Level(seg.Level)
		if sl > n.f.DomainLevel(d) {
			units := 0
			lo, hi := n.f.DomainsAt(sl)
			for e := lo; e < hi; e++ {
				if first, _ := n.f.Nodes(e); n.f.DomainOf(first, n.f.DomainLevel(d)) == d {
					units += n.domainCap(e, g, ps.GPUsPerPod) / seg.Size
				}
			}
			return units >= ps.Count/seg.Size
		}
	}
	return n.domainCap(d, g, ps.GPUsPerPod) >= ps.Count
}

// place returns the level and domain the policy should choose.
func (n naive) place() (topology.Level, topology.DomainID, topology.GroupID, bool) {
	l, d, g, _, ok := n.placeRanked()
	return l, d, g, ok
}

// placeRanked is place that also returns how many of the largest
// preferred rank groups the choice gives up.
func (n naive) placeRanked() (topology.Level, topology.DomainID, topology.GroupID, int, bool) {
	f, w := n.f, n.w
	req, pref := topology.Level(0), topology.Level(f.Depth())
	if w.Topology.Required != "" {
		req, _ = f.Level(w.Topology.Required)
	}
	if w.Topology.Preferred != "" {
		pref, _ = f.Level(w.Topology.Preferred)
	}
	k := w.PodSets[0].GPUsPerPod
	preferred := 0
	for _, rg := range w.PodSets[0].RankGroups {
		if !rg.Required {
			preferred++
		}
	}
	// Across groups: the lowest span, then the fewest rank groups given
	// up, then the fewest pods that still fit in the chosen domain, then
	// group order.
	bestL, bestD, bestG, bestTight, bestK, found := topology.Level(0), topology.DomainID(0), topology.GroupID(0), 0, 0, false
	for g := range topology.GroupID(f.NumGroups()) {
		s := f.Stats(topology.Root, g)
		whole := k == f.MaxGPUsPerNode() && s.GPUs == s.Nodes*k
	levels:
		for l := pref; l >= req; l-- {
			if l == topology.Level(f.Depth()) && w.GPUs() > f.MaxGPUsPerNode() {
				continue
			}
			for n.relax = 0; n.relax <= preferred; n.relax++ {
				lo, hi := f.DomainsAt(l)
				// Best fit: whole-node gangs by free whole nodes; others
				// by the pods of k GPUs that still fit, then free GPUs;
				// then the lowest ID.
				type cand struct {
					pods, free int
					d          topology.DomainID
				}
				var cs []cand
				for d := lo; d < hi; d++ {
					st := f.Stats(d, g)
					if st.Nodes == 0 || !n.fits(d, g) {
						continue
					}
					c := cand{n.domainCap(d, g, k), st.FreeGPUs, d}
					if whole && l > 0 && l < topology.Level(f.Depth()) {
						c.pods, c.free = st.FreeNodes, 0
					}
					cs = append(cs, c)
				}
				if len(cs) > 0 {
					slices.SortFunc(cs, func(a, b cand) int {
						if a.pods != b.pods {
							return a.pods - b.pods
						}
						if a.free != b.free {
							return a.free - b.free
						}
						return int(a.d - b.d)
					})
					tight := n.domainCap(cs[0].d, g, k)
					if !found || l > bestL || l == bestL && (n.relax < bestK || n.relax == bestK && tight < bestTight) {
						bestL, bestD, bestG, bestTight, bestK, found = l, cs[0].d, g, tight, n.relax, true
					}
					break levels
				}
			}
		}
	}
	return bestL, bestD, bestG, bestK, found
}

func genFleet(t *rapid.T) *topology.Fleet {
	depth := rapid.IntRange(2, 3).Draw(t, "depth")
	levels := []string{"spine", "leaf", "node"}[3-depth:]
	fan := make([]int, depth)
	for i := range fan {
		fan[i] = rapid.IntRange(1, 4).Draw(t, "fanout")
	}
	spec := topology.Uniform(topology.UniformSpec{Levels: levels, Fanout: fan, GPUsPerNode: 8, Flavor: "H100"})
	for i := range spec.Nodes {
		if rapid.IntRange(0, 5).Draw(t, "pool") == 0 {
			spec.Nodes[i].Pool = "inference"
		}
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	for n := range topology.NodeID(f.NumNodes()) {
		if g := rapid.SampledFrom([]int{0, 0, 0, 1, 3, 4, 7, 8}).Draw(t, "alloc"); g > 0 {
			require.NoError(t, f.Allocate(n, g))
		}
		if rapid.IntRange(0, 12).Draw(t, "sick") == 0 {
			require.NoError(t, f.SetHealth(n, topology.Health(rapid.IntRange(1, 2).Draw(t, "health"))))
		}
	}
	return f
}

func genWork(t *rapid.T, f *topology.Fleet) *gang.Workload {
	k := rapid.SampledFrom([]int{1, 2, 3, 4, 8}).Draw(t, "gpus")
	count := rapid.IntRange(1, 12).Draw(t, "count")
	w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: count, GPUsPerPod: k}}}
	lv := f.Levels()
	req := rapid.IntRange(-1, len(lv)-1).Draw(t, "req")
	if req >= 0 {
		w.Topology.Required = lv[req]
	}
	pref := rapid.IntRange(max(req, 0), len(lv)-1).Draw(t, "pref")
	if rapid.Bool().Draw(t, "hasPref") {
		w.Topology.Preferred = lv[pref]
	}
	if rapid.IntRange(0, 3).Draw(t, "seg") == 0 && len(lv) >= 2 {
		size := rapid.SampledFrom([]int{1, 2, 3}).Draw(t, "segsize")
		if count%size == 0 {
			sl := rapid.IntRange(max(req, 0), len(lv)-1).Draw(t, "seglevel")
			w.Topology.Segment = gang.Segment{Size: size, Level: lv[sl]}
		}
	}
	return w
}

func TestPropertyFastAgreesWithNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFleet(t)
		w := genWork(t, f)
		require.NoError(t, w.ValidateFor(f.Levels(), 0))
		before := f.Clone()
		a, err := placement.Place(f, w, placement.Options{})
		require.Equal(t, before.String(), f.String(), "Place changed the fleet")
		l, d, g, ok := naive{f: f, w: w}.place()
		require.Equal(t, ok, err == nil, "feasibility: naive %v, fast %v", ok, err)
		if !ok {
			require.ErrorIs(t, err, placement.ErrNoFit)
			return
		}
		require.Equal(t, l, a.Level, "level")
		require.Equal(t, g, a.Group, "group")
		requireKeepsBlocks(t, f, w, a, d)
		checkValid(t, f, w, a)
		require.NoError(t, placement.Apply(f, a))
		require.NoError(t, placement.Unapply(f, a))
		require.Equal(t, before.String(), f.String(), "Apply then Unapply")
	})
}

// checkValid checks an assignment against the workload's request and the
// fleet's capacity.
func checkValid(t require.TestingT, f *topology.Fleet, w *gang.Workload, a placement.Assignment) {
	require.Len(t, a.Pods, w.Pods())
	used := map[topology.NodeID]int{}
	for _, p := range a.Pods {
		require.Equal(t, w.PodSets[p.PodSet].GPUsPerPod, p.GPUs)
		require.Equal(t, topology.Healthy, f.Health(p.Node))
		require.Equal(t, a.Group, f.NodeGroup(p.Node))
		require.Equal(t, a.Domain, f.DomainOf(p.Node, a.Level))
		used[p.Node] += p.GPUs
	}
	for n, g := range used {
		require.LessOrEqual(t, g, f.Free(n), "node %s over-allocated", f.NodeName(n))
	}
	if w.Topology.Required != "" {
		req, _ := f.Level(w.Topology.Required)
		require.GreaterOrEqual(t, a.Span, req)
	}
	checkRankOrder(t, f, w, a)
	if seg := w.Topology.Segment; seg.Size > 0 {
		sl, _ := f.Level(seg.Level)
		pods := a.RankOrder(w.SegmentedPodSet())
		for i := 0; i < len(pods); i += seg.Size {
			for _, p := range pods[i : i+seg.Size] {
				require.Equal(t, f.DomainOf(pods[i].Node, sl), f.DomainOf(p.Node, sl), "segment crosses %s", seg.Level)
			}
		}
	}
}

// Mixed pod sets and spreads have no exact reference; every assignment must
// still be valid and placement must never change the fleet.
func TestPropertyMixedAndSpreadAreValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFleet(t)
		w := genWork(t, f)
		w.Topology.Segment = gang.Segment{}
		if rapid.Bool().Draw(t, "mixed") {
			w.PodSets = append(w.PodSets, gang.PodSet{Name: "extra", Count: rapid.IntRange(1, 3).Draw(t, "n2"), GPUsPerPod: rapid.SampledFrom([]int{1, 2, 8}).Draw(t, "k2")})
		}
		if rapid.Bool().Draw(t, "spread") {
			w.Spread.MaxPerNode = rapid.IntRange(1, 3).Draw(t, "perNode")
		}
		before := f.String()
		a, err := placement.Place(f, w, placement.Options{})
		require.Equal(t, before, f.String())
		if err != nil {
			require.ErrorIs(t, err, placement.ErrNoFit)
			return
		}
		checkValid(t, f, w, a)
		per := map[topology.NodeID]int{}
		for _, p := range a.Pods {
			per[p.Node]++
			if w.Spread.MaxPerNode > 0 {
				require.LessOrEqual(t, per[p.Node], w.Spread.MaxPerNode)
			}
		}
	})
}

// PlaceAvoiding places around a held domain: it never uses its nodes, and
// it finds a placement exactly when one exists on the fleet with those
// nodes cordoned.
func TestPropertyPlaceAvoidingKeepsOutOfTheDomain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFleet(t)
		w := genWork(t, f)
		lo, hi := f.DomainsAt(topology.Level(rapid.IntRange(1, f.Depth()-1).Draw(t, "level")))
		avoid := topology.DomainID(rapid.IntRange(int(lo), int(hi)-1).Draw(t, "avoid"))
		before := f.String()
		a, err := placement.NewPlacer(placement.Options{}).PlaceAvoiding(f, w, avoid)
		require.Equal(t, before, f.String(), "PlaceAvoiding changed the fleet")

		cordoned := f.Clone()
		nlo, nhi := f.Nodes(avoid)
		for n := nlo; n < nhi; n++ {
			if cordoned.Health(n) == topology.Healthy {
				require.NoError(t, cordoned.SetHealth(n, topology.Cordoned))
			}
		}
		_, want := placement.Place(cordoned, w, placement.Options{})
		require.Equal(t, want == nil, err == nil, "feasibility: around the domain %v, cordoned %v", err, want)
		if err != nil {
			return
		}
		checkValid(t, f, w, a)
		for _, p := range a.Pods {
			require.False(t, p.Node >= nlo && p.Node < nhi, "pod on %s, inside the avoided %s", f.NodeName(p.Node), f.DomainName(avoid))
		}
	})
}

// PlaceWithin places inside one domain only: it finds a placement
// exactly when one exists on the fleet with every other node cordoned,
// and never leaves the domain.
func TestPropertyPlaceWithinStaysInTheDomain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFleet(t)
		w := genWork(t, f)
		lo, hi := f.DomainsAt(topology.Level(rapid.IntRange(1, f.Depth()-1).Draw(t, "level")))
		in := topology.DomainID(rapid.IntRange(int(lo), int(hi)-1).Draw(t, "within"))
		before := f.String()
		a, err := placement.NewPlacer(placement.Options{}).PlaceWithin(f, w, in)
		require.Equal(t, before, f.String(), "PlaceWithin changed the fleet")
		cordoned := f.Clone()
		nlo, nhi := f.Nodes(in)
		for n := range topology.NodeID(f.NumNodes()) {
			if (n < nlo || n >= nhi) && cordoned.Health(n) == topology.Healthy {
				require.NoError(t, cordoned.SetHealth(n, topology.Cordoned))
			}
		}
		_, want := placement.Place(cordoned, w, placement.Options{})
		require.Equal(t, want == nil, err == nil, "feasibility: within %v, cordoned %v", err, want)
		if err != nil {
			return
		}
		checkValid(t, f, w, a)
		for _, p := range a.Pods {
			require.True(t, p.Node >= nlo && p.Node < nhi, "pod on %s, outside %s", f.NodeName(p.Node), f.DomainName(in))
		}
	})
}
