package placement_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// checkRankOrder checks the rank-order guarantee of an assignment: every
// pod set's pods carry the ranks 0..Count-1 once each, and at every level
// the pods of one domain hold consecutive ranks, so neighbours share the
// lowest domain they can and a domain once left is never re-entered.
func checkRankOrder(t require.TestingT, f *topology.Fleet, w *gang.Workload, a placement.Assignment) {
	for ps, set := range w.PodSets {
		order := a.RankOrder(ps)
		require.Len(t, order, set.Count)
		for r, p := range order {
			require.Equal(t, r, p.Index, "pod set %d: rank %d missing or repeated", ps, r)
			require.Equal(t, ps, p.PodSet)
		}
		if ps == w.SegmentedPodSet() && w.Spread.MaxPerDomain > 0 {
			continue // segments spread before they are ordered
		}
		for l := topology.Level(1); l <= topology.Level(f.Depth()); l++ {
			left := map[topology.DomainID]bool{}
			for r := 1; r < len(order); r++ {
				prev, cur := f.DomainOf(order[r-1].Node, l), f.DomainOf(order[r].Node, l)
				if prev != cur {
					left[prev] = true
					require.False(t, left[cur], "pod set %d: rank %d re-enters %s", ps, r, f.DomainName(cur))
				}
			}
		}
	}
}

// checkGroups checks that every rank group in gs (of pod set ps) lies
// inside one domain of its level.
func checkGroups(t require.TestingT, f *topology.Fleet, a placement.Assignment, ps int, gs []gang.RankGroup) {
	order := a.RankOrder(ps)
	for _, g := range gs {
		l, ok := f.Level(g.Level)
		require.True(t, ok)
		for r := 0; r < len(order); r += g.Size {
			d := f.DomainOf(order[r].Node, l)
			for _, p := range order[r : r+g.Size] {
				require.Equal(t, f.DomainName(d), f.DomainName(f.DomainOf(p.Node, l)),
					"ranks %d-%d of group size %d cross %s", r, r+g.Size-1, g.Size, g.Level)
			}
		}
	}
}

// genRanks draws one or two nested rank groups for a pod set of count pods.
func genRanks(t *rapid.T, f *topology.Fleet, count int) []gang.RankGroup {
	var divisors []int
	for d := 1; d <= count; d++ {
		if count%d == 0 {
			divisors = append(divisors, d)
		}
	}
	lv := f.Levels()
	var gs []gang.RankGroup
	size, level := 1, len(lv)-1
	for range rapid.IntRange(1, 2).Draw(t, "groups") {
		var next []int
		for _, d := range divisors {
			if d > size && d%size == 0 || len(gs) == 0 && d == size {
				next = append(next, d)
			}
		}
		if len(next) == 0 {
			break
		}
		size = rapid.SampledFrom(next).Draw(t, "rankSize")
		level = rapid.IntRange(0, level).Draw(t, "rankLevel")
		gs = append(gs, gang.RankGroup{Size: size, Level: lv[level], Required: rapid.Bool().Draw(t, "rankRequired")})
	}
	return gs
}

func genRankWork(t *rapid.T, f *topology.Fleet) *gang.Workload {
	w := genWork(t, f)
	w.Topology.Segment = gang.Segment{}
	w.PodSets[0].RankGroups = genRanks(t, f, w.PodSets[0].Count)
	return w
}

// Rank groups land inside their domains whenever the policy's level has a
// domain that holds them: the choice of level, domain, group and of the
// preferred groups given up agrees with the naive reference, and the groups
// kept hold in the assignment.
func TestPropertyRankGroupsAgreeWithNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFleet(t)
		w := genRankWork(t, f)
		require.NoError(t, w.ValidateFor(f.Levels(), 0))
		before := f.String()
		a, err := placement.Place(f, w, placement.Options{})
		require.Equal(t, before, f.String(), "Place changed the fleet")
		ref := naive{f: f, w: w}
		l, d, g, relax, ok := ref.placeRanked()
		require.Equal(t, ok, err == nil, "feasibility: naive %v, fast %v", ok, err)
		if !ok {
			require.ErrorIs(t, err, placement.ErrNoFit)
			return
		}
		require.Equal(t, l, a.Level, "level")
		require.Equal(t, g, a.Group, "group")
		requireKeepsBlocks(t, f, w, a, d)
		checkValid(t, f, w, a)
		ref.relax = relax
		checkGroups(t, f, a, 0, ref.groups())
		if relax == 0 {
			checkGroups(t, f, a, 0, w.PodSets[0].RankGroups)
		}
	})
}

// Every placement numbers pods in rank order, rank groups or not, mixed
// pod sets, spreads and shares included (checkValid checks it too).
func TestPropertyRankOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFleet(t)
		w := genWork(t, f)
		if rapid.Bool().Draw(t, "ranked") {
			w.Topology.Segment = gang.Segment{}
			w.PodSets[0].RankGroups = genRanks(t, f, w.PodSets[0].Count)
		}
		if rapid.Bool().Draw(t, "mixed") {
			n := rapid.IntRange(1, 4).Draw(t, "n2")
			ps := gang.PodSet{Name: "extra", Count: n, GPUsPerPod: rapid.SampledFrom([]int{1, 2, 8}).Draw(t, "k2")}
			if rapid.Bool().Draw(t, "extraRanked") {
				ps.RankGroups = genRanks(t, f, n)
			}
			w.PodSets = append(w.PodSets, ps)
			if w.Topology.Segment.Enabled() {
				w.Topology.Segment.PodSet = w.PodSets[0].Name
			}
		}
		if rapid.Bool().Draw(t, "spread") {
			w.Spread.MaxPerNode = rapid.IntRange(1, 3).Draw(t, "perNode")
		}
		require.NoError(t, w.ValidateFor(f.Levels(), 0))
		a, err := placement.Place(f, w, placement.Options{})
		if err != nil {
			require.ErrorIs(t, err, placement.ErrNoFit)
			return
		}
		checkValid(t, f, w, a)
		for ps, set := range w.PodSets {
			for _, g := range set.RankGroups {
				if g.Required {
					checkGroups(t, f, a, ps, []gang.RankGroup{g})
				}
			}
		}
	})
}

// sliceUplinks is an Uplinks from a count per leaf.
type sliceUplinks struct {
	lo topology.DomainID
	n  []int
}

func (u sliceUplinks) Crossing(d topology.DomainID) int {
	if i := int(d - u.lo); i >= 0 && i < len(u.n) {
		return u.n[i]
	}
	return 0
}

// Uplinks only breaks ties: the level, domain, group and how many pods go
// to each leaf (as a multiset) are as without it, and with no crossings
// at all, or as many on every leaf, the assignment is the same pod for
// pod.
func TestPropertyUplinksOnlyBreakTies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFleet(t)
		w := genWork(t, f)
		if rapid.Bool().Draw(t, "ranked") {
			w.Topology.Segment = gang.Segment{}
			w.PodSets[0].RankGroups = genRanks(t, f, w.PodSets[0].Count)
		}
		if f.Depth() < 2 {
			return
		}
		leaf := topology.Level(f.Depth() - 1)
		lo, hi := f.DomainsAt(leaf)
		u := sliceUplinks{lo: lo, n: make([]int, hi-lo)}
		// zero: no leaf crossed; uniform: every leaf crossed alike, which
		// breaks no tie either.
		mode := rapid.IntRange(0, 2).Draw(t, "mode")
		zero := mode < 2
		for i := range u.n {
			switch mode {
			case 1:
				u.n[i] = 2
			case 2:
				u.n[i] = rapid.IntRange(0, 3).Draw(t, "crossing")
			}
		}
		plain, err1 := placement.Place(f, w, placement.Options{})
		spread, err2 := placement.Place(f, w, placement.Options{Uplinks: u})
		require.Equal(t, err1 == nil, err2 == nil)
		if err1 != nil {
			return
		}
		checkValid(t, f, w, spread)
		require.Equal(t, plain.Level, spread.Level)
		require.Equal(t, plain.Domain, spread.Domain)
		require.Equal(t, plain.Group, spread.Group)
		if zero {
			require.Equal(t, plain.Pods, spread.Pods)
			return
		}
		perLeaf := func(a placement.Assignment) []int {
			m := map[topology.DomainID]int{}
			for _, p := range a.Pods {
				m[f.DomainOf(p.Node, leaf)]++
			}
			var out []int
			for _, c := range m {
				out = append(out, c)
			}
			slices.Sort(out)
			return out
		}
		require.Equal(t, perLeaf(plain), perLeaf(spread))
	})
}

// A gang that spans leaves takes, among equally good leaves, those that
// fewer other cross-leaf gangs already use.
func TestUplinksAvoidCrossedLeaves(t *testing.T) {
	f := fleet(t, 1, 4, 4)
	// Two cross-leaf gangs: one over leaves 0 and 1, one over leaves 1 and
	// 2; leaf 3 is used by a gang inside it, which crosses no uplink.
	first := placement.Assignment{Workload: "a", Pods: []placement.Pod{
		{Node: node(t, f, "node-0-0-0"), GPUs: 8}, {Node: node(t, f, "node-0-1-0"), GPUs: 8}}}
	second := placement.Assignment{Workload: "b", Pods: []placement.Pod{
		{Node: node(t, f, "node-0-1-1"), GPUs: 8}, {Node: node(t, f, "node-0-2-0"), GPUs: 8}}}
	inside := placement.Assignment{Workload: "c", Pods: []placement.Pod{{Node: node(t, f, "node-0-3-0"), GPUs: 8}}}
	for _, a := range []placement.Assignment{first, second, inside} {
		require.NoError(t, placement.Apply(f, a))
	}
	c := placement.CountCrossings(f, []placement.Assignment{first, second, inside})
	var counts []int
	lo, hi := c.Leaves()
	for d := lo; d < hi; d++ {
		counts = append(counts, c.Crossing(d))
	}
	assert.Equal(t, []int{1, 2, 1, 0}, counts)

	// Leaves 0, 2 and 3 have 3 free nodes each; a 5-node gang takes one
	// whole and 2 nodes of another.
	w := work("g", 5, 8, "spine", "")
	plain, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-1=8", "node-0-0-2=8", "node-0-0-3=8", "node-0-1-2=8", "node-0-1-3=8"}, nodesOf(f, plain))
	spread, err := placement.Place(f, w, placement.Options{Uplinks: c})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-1-2=8", "node-0-1-3=8", "node-0-3-1=8", "node-0-3-2=8", "node-0-3-3=8"}, nodesOf(f, spread))
	assert.True(t, c.Add(f, spread))
	assert.Equal(t, 3, c.Crossing(f.DomainOf(node(t, f, "node-0-1-2"), 2)))
	require.NoError(t, c.Remove(f, spread))
	assert.Equal(t, 0, c.Crossing(f.DomainOf(node(t, f, "node-0-3-1"), 2)))
	assert.Error(t, c.Remove(f, spread), "removing what was not added")
	assert.Equal(t, 0, c.Crossing(topology.Root))
}

// Leaves crossed by as many gangs tie as they do without Uplinks: the
// lowest first. A 5-node gang over four free leaves, each crossed twice,
// takes leaf 0 whole and one node of leaf 1.
func TestUplinksTieBetweenEquallyCrossedLeavesGoesToTheLowest(t *testing.T) {
	f := fleet(t, 1, 4, 4)
	lo, _ := f.DomainsAt(2)
	u := sliceUplinks{lo: lo, n: []int{2, 2, 2, 2}}
	w := work("g", 5, 8, "spine", "")
	a, err := placement.Place(f, w, placement.Options{Uplinks: u})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=8", "node-0-0-1=8", "node-0-0-2=8", "node-0-0-3=8", "node-0-1-0=8"}, nodesOf(f, a))
	checkValid(t, f, w, a)
}

func TestRankGroupsPlacementRefusesMalformed(t *testing.T) {
	f := fleet(t, 1, 2, 2)
	for name, gs := range map[string][]gang.RankGroup{
		"not dividing":  {{Size: 3, Level: "leaf"}},
		"unknown level": {{Size: 2, Level: "rack"}},
		"not nesting":   {{Size: 2, Level: "spine"}, {Size: 4, Level: "leaf"}},
	} {
		w := work("g", 4, 8, "", "")
		w.PodSets[0].RankGroups = gs
		_, err := placement.Place(f, w, placement.Options{})
		assert.ErrorIs(t, err, placement.ErrInvalid, name)
		assert.ErrorIs(t, err, placement.ErrBadRequest, name)
	}
}

// Crossings kept up to date with Add and Remove equals a recount from the
// assignments held, as gangs placed with it as their Uplinks come and go.
func TestPropertyCrossingsMatchRecount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFleet(t)
		c := placement.NewCrossings(f)
		var held []placement.Assignment
		recount := func() {
			lo, hi := c.Leaves()
			for d := lo; d < hi; d++ {
				want := 0
				for _, a := range held {
					leaves := map[topology.DomainID]bool{}
					for _, p := range a.Pods {
						leaves[f.DomainOf(p.Node, f.DomainLevel(d))] = true
					}
					if len(leaves) > 1 && leaves[d] {
						want++
					}
				}
				require.Equal(t, want, c.Crossing(d), "leaf %s", f.DomainName(d))
			}
		}
		for range rapid.IntRange(1, 6).Draw(t, "gangs") {
			w := genWork(t, f)
			a, err := placement.Place(f, w, placement.Options{Uplinks: c})
			if err != nil {
				continue
			}
			a = a.Clone()
			require.NoError(t, placement.Apply(f, a))
			c.Add(f, a)
			held = append(held, a)
			recount()
		}
		for len(held) > 0 {
			i := rapid.IntRange(0, len(held)-1).Draw(t, "exit")
			require.NoError(t, c.Remove(f, held[i]))
			require.NoError(t, placement.Unapply(f, held[i]))
			held = append(held[:i], held[i+1:]...)
			recount()
		}
	})
}
