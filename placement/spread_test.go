package placement_test

import (
	"fmt"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// A spread limit counted per node-level domain is a per-node limit.
func TestSpreadAtNodeLevelLimitsPodsPerNode(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	w := work("r", 4, 1, "", "")
	w.Spread = gang.Spread{MaxPerDomain: 1, Level: "node"}
	require.NoError(t, w.ValidateFor(f.Levels(), 8))
	_, err := placement.Place(f, w, placement.Options{})
	require.ErrorIs(t, err, placement.ErrNoFit, "two nodes cannot hold four pods at one per node")

	w.PodSets[0].Count = 2
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"node-0-0-0=1", "node-0-0-1=1"}, nodesOf(f, a))
}

// Segments confined to leaves still respect a per-spine spread limit.
func TestSegmentsRespectSpreadPerDomain(t *testing.T) {
	f := fleet(t, 2, 2, 2)
	w := work("s", 4, 1, "", "")
	w.Topology.Segment = gang.Segment{Size: 2, Level: "leaf"}
	w.Spread = gang.Spread{MaxPerDomain: 2, Level: "spine"}
	require.NoError(t, w.ValidateFor(f.Levels(), 8))
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	per := map[topology.DomainID]int{}
	spine, _ := f.Level("spine")
	for _, p := range a.Pods {
		per[f.DomainOf(p.Node, spine)]++
	}
	for d, n := range per {
		require.LessOrEqual(t, n, 2, "spine %s holds %d pods", f.DomainName(d), n)
	}
	checkValid(t, f, w, a)

	// One spine only: four pods at two per spine cannot fit.
	f1 := fleet(t, 1, 2, 2)
	_, err = placement.Place(f1, w, placement.Options{})
	require.ErrorIs(t, err, placement.ErrNoFit)
}

// NoFit's largest blocks describe the fleet as it is, not the pods of a
// trial that failed.
func TestExplainIgnoresFailedTrial(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	w := &gang.Workload{ID: "m", Queue: "q", Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "a", Count: 2, GPUsPerPod: 2}, {Name: "b", Count: 1, GPUsPerPod: 1}},
		Spread:  gang.Spread{MaxPerNode: 1}}
	_, err := placement.Place(f, w, placement.Options{Explain: true})
	var nf *placement.NoFit
	require.ErrorAs(t, err, &nf)
	var largest []int
	for _, tr := range nf.Tried {
		largest = append(largest, tr.Largest)
	}
	require.Equal(t, []int{1, 2, 2, 2}, largest, "node, leaf, spine, fleet")
}

// A request whose segments cannot be whole is refused, never placed short
// of pods.
func TestSegmentsThatDoNotDivideAreRefused(t *testing.T) {
	f := fleet(t, 1, 2, 2)
	for _, seg := range []gang.Segment{
		{Size: 2, Level: "leaf"},                  // 3 pods
		{Size: 1, Level: "leaf", PodSet: "other"}, // no such pod set
	} {
		w := work("s", 3, 8, "", "")
		w.Topology.Segment = seg
		a, err := placement.Place(f, w, placement.Options{})
		require.ErrorIs(t, err, placement.ErrInvalid, "%+v placed %d pods", seg, len(a.Pods))
	}
}

// TestNodeSegmentsUnderALeafLimitFillEachNodeOnce: segments of one
// node each, at most 4 pods per leaf, and two nodes up with 2 GPUs free
// each, in two leaves. The node that holds the most takes all it can,
// and the next choice, counted again for the leaf limits, does not offer
// it again: the gang takes the other node, or, when that one is avoided,
// does not fit. It never puts more pods on a node than it holds.
func TestNodeSegmentsUnderALeafLimitFillEachNodeOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pods  int
		avoid bool // node-0-1-1, the only node of leaf 1 up, is avoided
		want  []string
	}{
		{"four pods: two nodes of two", 4, false, []string{"node-0-0-0=2", "node-0-1-1=2"}},
		{"four pods, the second node avoided", 4, true, nil},
		{"two pods: node 0 holds both", 2, true, []string{"node-0-0-0=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fleet(t, 1, 2, 2)
			require.NoError(t, f.Allocate(node(t, f, "node-0-0-0"), 6))
			require.NoError(t, f.Allocate(node(t, f, "node-0-1-1"), 6))
			require.NoError(t, f.SetHealth(node(t, f, "node-0-0-1"), topology.Down))
			require.NoError(t, f.SetHealth(node(t, f, "node-0-1-0"), topology.Down))
			w := work("s", tc.pods, 1, "", "")
			w.Topology.Segment = gang.Segment{Size: 1, Level: "node"}
			w.Spread = gang.Spread{MaxPerDomain: 4, Level: "leaf"}
			require.NoError(t, w.ValidateFor(f.Levels(), 8))
			var avoid []topology.DomainID
			if tc.avoid {
				avoid = append(avoid, f.NodeDomain(node(t, f, "node-0-1-1")))
			}
			a, err := placement.NewPlacer(placement.Options{}).PlaceAvoiding(f, w, avoid...)
			if tc.want == nil {
				require.ErrorIs(t, err, placement.ErrNoFit)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, nodesOf(f, a))
			require.NoError(t, placement.Apply(f.Clone(), a))
		})
	}
}

// TestSegmentsUnderALeafLimitKeepEachUnitOnOneNode: units of two pods,
// each on one node, at most 4 pods per leaf. The leaf's nodes have 2, 2,
// 4 and 4 GPUs free: the units take the two nodes of 4, not the
// fewest-free nodes a plain fill would start with.
func TestSegmentsUnderALeafLimitKeepEachUnitOnOneNode(t *testing.T) {
	f := fleet(t, 1, 1, 4)
	for n, busy := range []int{6, 6, 4, 4} {
		require.NoError(t, f.Allocate(topology.NodeID(n), busy))
	}
	w := work("s", 4, 2, "", "")
	w.Topology.Segment = gang.Segment{Size: 2, Level: "node"}
	w.Spread = gang.Spread{MaxPerDomain: 4, Level: "leaf"}
	require.NoError(t, w.ValidateFor(f.Levels(), 8))
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"node-0-0-2=4", "node-0-0-3=4"}, nodesOf(f, a))
}

// TestSegmentsDescendLevelByLevel: a gang preferring the spine level is
// placed down the tree by the fewest-domains rule at every level: leaf 1
// holds the pod with fewer pods to spare (8) than leaf 0 (6 + 4), so its
// node takes it, although node 1 alone is the tightest node. A segment of
// one pod per node asks nothing more, and changes nothing.
func TestSegmentsDescendLevelByLevel(t *testing.T) {
	for _, seg := range []int{0, 1} {
		t.Run(fmt.Sprintf("segment %d", seg), func(t *testing.T) {
			f := fleet(t, 1, 2, 2)
			require.NoError(t, f.Allocate(node(t, f, "node-0-0-0"), 2))
			require.NoError(t, f.Allocate(node(t, f, "node-0-0-1"), 4))
			require.NoError(t, f.SetHealth(node(t, f, "node-0-1-1"), topology.Down))
			w := work("s", 1, 1, "spine", "spine")
			if seg > 0 {
				w.Topology.Segment = gang.Segment{Size: seg, Level: "node"}
			}
			require.NoError(t, w.ValidateFor(f.Levels(), 8))
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			require.Equal(t, []string{"node-0-1-0=1"}, nodesOf(f, a))
		})
	}
}

// A limit per spine counts the room of every node below it: with 4 of
// node 0's 8 GPUs in use, three 4-GPU pods fit in the one spine, one
// on node 0 and two on node 1.
func TestSpreadPerSpineCountsEveryNodesRoom(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	require.NoError(t, f.Allocate(0, 4))
	w := work("s", 3, 4, "", "")
	w.Spread = gang.Spread{MaxPerDomain: 3, Level: "spine"}
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"node-0-0-0=4", "node-0-0-1=8"}, nodesOf(f, a))
	checkValid(t, f, w, a)
}

// A segment may be confined to the required level itself, but not to a
// level above it.
func TestSegmentLevelAtOrBelowTheRequiredLevel(t *testing.T) {
	for _, tc := range []struct {
		segment string
		valid   bool
	}{{"leaf", true}, {"node", true}, {"spine", false}} {
		t.Run(tc.segment, func(t *testing.T) {
			f := fleet(t, 1, 2, 2)
			w := work("s", 4, 1, "leaf", "")
			w.Topology.Segment = gang.Segment{Size: 2, Level: tc.segment}
			a, err := placement.Place(f, w, placement.Options{})
			if !tc.valid {
				require.ErrorIs(t, err, placement.ErrInvalid)
				return
			}
			require.NoError(t, err)
			checkValid(t, f, w, a)
		})
	}
}
