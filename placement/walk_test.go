package placement_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// How far a one-pod workload's walk over a capacity class (GPUs with as
// much left, nodes with as many free GPUs) goes past nodes that cannot
// take the pod before it moves on to the next, looser class.

// sameRanker ranks every option alike: ties go to the tightest fit.
type sameRanker struct{}

func (sameRanker) Rank(*topology.Fleet, *gang.Workload, placement.Option) float64 { return 0 }

// coresTaken takes every core of node n.
func coresTaken(t *testing.T, f *topology.Fleet, n int) {
	cpu, _ := f.Resource("cpu")
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: topology.NodeID(n),
		Resources: []topology.ResourceAmount{{Resource: cpu, Amount: 8000}}}))
}

// TestRankedSharePodLooksPastManyNodesThatCannotTakeIt: GPU 0 of nodes
// 0-99 has 500 thousandths left (the tightest class for a 300 share with
// a core), node 100's has 600. Nodes 0-95 have no core free. With a
// Ranker (MaxRanked 4) the walk reads up to 16 x 8 x 4 GPUs of a class,
// so it reaches nodes 96-99 and the pod goes to the tightest of them,
// not to the next class.
func TestRankedSharePodLooksPastManyNodesThatCannotTakeIt(t *testing.T) {
	flavors := make([]string, 101)
	for i := range flavors {
		flavors[i] = "H100"
	}
	f := mixedFleet(t, false, flavors...)
	for n := range 101 {
		used := 500
		if n == 100 {
			used = 400
		}
		require.NoError(t, f.AllocateClaim(topology.Claim{Node: topology.NodeID(n), GPU: 0, Share: used}))
		if n < 96 {
			coresTaken(t, f, n)
		}
	}
	w := onePod("w", gang.PodSet{GPUShare: 300, Resources: []gang.Resource{{Name: "cpu", Amount: 1000}}})
	a, err := placement.Place(f, w, placement.Options{Ranker: sameRanker{}})
	require.NoError(t, err)
	assert.Equal(t, topology.NodeID(96), a.Pods[0].Node)
	assert.Equal(t, 0, a.Pods[0].GPU)
}

// TestWholeFreeClassWalkGivesUpAfterEightNodes: no GPU is partly used,
// so a 300 share with a core takes a whole-free GPU. Nodes 0-8 have one
// free GPU (the tightest class), node 9 has two. Without a Ranker the
// walk reads at most 8 nodes of a class: when the first busy nodes (no
// core free) fill those 8, node 8 is not reached and the pod goes to the
// next class, node 9.
func TestWholeFreeClassWalkGivesUpAfterEightNodes(t *testing.T) {
	for _, tc := range []struct {
		busy int // nodes 0..busy-1 have no core free
		want topology.NodeID
	}{
		{6, 6},
		{7, 7}, // the 8th node read
		{8, 9},
	} {
		t.Run(fmt.Sprintf("%d busy", tc.busy), func(t *testing.T) {
			flavors := make([]string, 10)
			for i := range flavors {
				flavors[i] = "H100"
			}
			f := mixedFleet(t, false, flavors...)
			for n := range 10 {
				held := 3
				if n == 9 {
					held = 2
				}
				require.NoError(t, f.Allocate(topology.NodeID(n), held))
				if n < tc.busy {
					coresTaken(t, f, n)
				}
			}
			w := onePod("w", gang.PodSet{GPUShare: 300, Resources: []gang.Resource{{Name: "cpu", Amount: 1000}}})
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, a.Pods[0].Node)
		})
	}
}

// TestPerNodeCountsOnlyUnderASpreadLimit: a Placer keeps per-node (and
// per-domain) pod counts only for a workload with a spread limit, so a
// fresh Placer placing one without allocates less than for the same
// gang under a limit that does not bind; a reused Placer allocates
// nothing for either.
func TestPerNodeCountsOnlyUnderASpreadLimit(t *testing.T) {
	f := mixedFleet(t, false, "H100", "H100", "H100", "H100")
	allocs := func(sp gang.Spread) (fresh, reused float64) {
		w := &gang.Workload{ID: "w", Queue: "q", Spread: sp, PodSets: []gang.PodSet{{Name: "p", Count: 3, GPUsPerPod: 2}}}
		fresh = testing.AllocsPerRun(20, func() { _, _ = placement.Place(f, w, placement.Options{}) })
		p := placement.NewPlacer(placement.Options{})
		reused = testing.AllocsPerRun(20, func() { _, _ = p.Place(f, w) })
		return fresh, reused
	}
	free, freeReused := allocs(gang.Spread{})
	limited, limitedReused := allocs(gang.Spread{MaxPerNode: 8})
	assert.Less(t, free, limited)
	assert.Zero(t, freeReused)
	assert.Zero(t, limitedReused)
}
