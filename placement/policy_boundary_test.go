package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// preferRank is a Ranker that prefers one node by name.
type preferRank string

func (p preferRank) Rank(f *topology.Fleet, _ *gang.Workload, o placement.Option) float64 {
	if f.NodeName(o.Node) == string(p) {
		return 1
	}
	return 0
}

// MaxScored and MaxRanked bound what Scorer and Ranker see: a caller's
// positive bound is kept, and the zero value means the default.
func TestScoredAndRankedBoundsAreKept(t *testing.T) {
	f := fleet(t, 1, 1, 4)
	for _, c := range []struct {
		name string
		opt  placement.Options
		node string
	}{
		{"default: the scorer sees all four", placement.Options{Scorer: preferNode("node-0-0-3")}, "node-0-0-3=8"},
		{"a bound of 1: only the first", placement.Options{Scorer: preferNode("node-0-0-3"), MaxScored: 1}, "node-0-0-0=8"},
		{"a bound of 4: the fourth", placement.Options{Scorer: preferNode("node-0-0-3"), MaxScored: 4}, "node-0-0-3=8"},
		{"a bound of 3: not the fourth", placement.Options{Scorer: preferNode("node-0-0-3"), MaxScored: 3}, "node-0-0-0=8"},
		{"ranker, default: four per class", placement.Options{Ranker: preferRank("node-0-0-3")}, "node-0-0-3=8"},
		{"ranker, a bound of 1", placement.Options{Ranker: preferRank("node-0-0-3"), MaxRanked: 1}, "node-0-0-0=8"},
	} {
		a, err := placement.NewPlacer(c.opt).Place(f, work("r", 1, 8, "", ""))
		require.NoError(t, err, c.name)
		assert.Equal(t, []string{c.node}, nodesOf(f, a), c.name)
		a, err = placement.Place(f, work("r", 1, 8, "", ""), c.opt)
		require.NoError(t, err, c.name)
		assert.Equal(t, []string{c.node}, nodesOf(f, a), c.name)
	}
}

// A refused domain ID still names the workload in its NoFit.
func TestBadDomainNoFitNamesTheWorkload(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	_, err := placement.NewPlacer(placement.Options{}).PlaceWithin(f, work("w", 3, 2, "", ""), -1)
	var nf *placement.NoFit
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, "w", nf.Workload)
	assert.Equal(t, 3, nf.Pods)
	assert.Equal(t, 6, nf.NeedGPUs)
}

// groupsFleet has leaf-0-0 of one group and leaf-0-1 of another: either
// pool x and pool y of H100, or models H100 and A100.
func groupsFleet(t *testing.T, byPool bool) *topology.Fleet {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"spine", "leaf", "node"}, Fanout: []int{1, 2, 2}, GPUsPerNode: 8, Flavor: "H100"})
	for i := range spec.Nodes {
		switch {
		case byPool && i < 2:
			spec.Nodes[i].Pool = "x"
		case byPool:
			spec.Nodes[i].Pool = "y"
		case i >= 2:
			spec.Nodes[i].Flavor = "A100"
		}
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	return f
}

// The workload's pool order and, with FlavorsInOrder, its model order
// outrank best fit: the tighter group of a less preferred pool or model
// is not taken while a preferred one has room.
func TestPoolAndModelOrderOutrankBestFit(t *testing.T) {
	f := groupsFleet(t, true)
	alloc(t, f, map[string]int{"node-0-0-0": 6})
	w := work("w", 1, 2, "", "")
	w.Pools = []string{"y", "x"}
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-1", f.DomainName(f.DomainOf(a.Pods[0].Node, 2)), "pool y first")
	w.Pools = nil
	a, err = placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=2"}, nodesOf(f, a), "no pool order: the tightest")

	f = groupsFleet(t, false)
	alloc(t, f, map[string]int{"node-0-0-0": 6})
	w = work("w", 1, 2, "", "")
	w.Flavors, w.FlavorsInOrder = []string{"A100", "H100"}, true
	a, err = placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "A100", f.GroupFlavor(a.Group), "A100 first")
	w.FlavorsInOrder = false
	a, err = placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=2"}, nodesOf(f, a), "any model: the tightest")
}

// A spread limit per node-level domain is a limit per node.
func TestSpreadPerNodeLevelDomain(t *testing.T) {
	f := fleet(t, 1, 1, 3)
	alloc(t, f, map[string]int{"node-0-0-1": 4})
	w := work("w", 2, 2, "", "leaf")
	w.Spread = gang.Spread{MaxPerDomain: 1, Level: "node"}
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=2", "node-0-0-1=2"}, nodesOf(f, a))
	w.Spread = gang.Spread{MaxPerDomain: 2, Level: "node", MaxPerNode: 3}
	a, err = placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-1=4"}, nodesOf(f, a), "the smaller of the two limits")
	f = fleet(t, 1, 1, 3)
	w = work("w", 3, 2, "", "leaf")
	w.Spread = gang.Spread{MaxPerDomain: 2, Level: "node", MaxPerNode: 3}
	a, err = placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=4", "node-0-0-1=2"}, nodesOf(f, a), "2 per node, not 3")
}

// A pod set of no pods is refused as invalid, not placed as nothing.
func TestEmptyPodSetIsInvalid(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	w := work("w", 1, 2, "", "")
	w.PodSets = append(w.PodSets, gang.PodSet{Name: "none", Count: 0, GPUsPerPod: 1})
	_, err := placement.Place(f, w, placement.Options{})
	assert.ErrorIs(t, err, placement.ErrInvalid)
}

// Whole-node gangs count free whole nodes only: free GPUs on partly used
// nodes do not break a tie between domains, the lowest ID does.
func TestWholeNodeTieIgnoresStrandedGPUs(t *testing.T) {
	f := fleet(t, 1, 2, 3)
	alloc(t, f, map[string]int{"node-0-0-0": 1, "node-0-1-0": 7})
	a, err := placement.Place(f, work("g", 2, 8, "", "leaf"), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-0", f.DomainName(a.Domain), "2 free nodes each; 7 stranded GPUs against 1")
}

// Pod sets that ask for a share of a GPU, not whole ones, are valid.
func TestSharedPodSetsOfSeveralPods(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	w := &gang.Workload{ID: "s", Queue: "q", PodSets: []gang.PodSet{{Name: "p", Count: 3, GPUShare: 500}}}
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Len(t, a.Pods, 3)
}

// A Scorer only breaks ties among equally tight nodes, also when the
// tightest node is node 0.
func TestScorerNeverOverridesBestFitOnNodeZero(t *testing.T) {
	f := fleet(t, 1, 1, 3)
	alloc(t, f, map[string]int{"node-0-0-0": 4})
	a, err := placement.Place(f, work("r", 1, 2, "", ""), placement.Options{Scorer: preferNode("node-0-0-1")})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=2"}, nodesOf(f, a))
}
