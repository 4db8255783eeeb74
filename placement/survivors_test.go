package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// twoModelFleet has an A100 node with 2 cores and an H100 node with 64.
func twoModelFleet(t *testing.T) *topology.Fleet {
	f, err := topology.New(topology.Spec{Levels: []string{"rack", "node"}, Nodes: []topology.NodeSpec{
		{Name: "a", Path: []string{"r"}, GPUs: 8, Flavor: "A100", Resources: map[string]int64{"cpu": 2000}},
		{Name: "h", Path: []string{"r"}, GPUs: 8, Flavor: "H100", Resources: map[string]int64{"cpu": 64000}},
	}})
	require.NoError(t, err)
	return f
}

// A pod that asks for no GPU still runs only on the models it accepts:
// when none of them has its cores, it does not fit, though another
// model's node has them.
func TestGPUlessPodStaysOnTheModelsItAccepts(t *testing.T) {
	f := twoModelFleet(t)
	for _, tc := range []struct {
		name  string
		cores int64
		node  string
	}{
		{"fits on its model", 1, "a"},
		{"its model is short", 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, Flavor: "A100",
				PodSets: []gang.PodSet{{Name: "p", Count: 1, Resources: cores(tc.cores)}}}
			a, err := placement.Place(f, w, placement.Options{})
			if tc.node == "" {
				var nf *placement.NoFit
				require.ErrorAs(t, err, &nf)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.node, f.NodeName(a.Pods[0].Node))
		})
	}
}

// Whole GPUs are named on nodes of up to 64 GPUs (a claim's mask holds
// 64): a 64-GPU node's pod names its GPUs, a 65-GPU node's does not.
func TestWholeGPUsAreNamedOnNodesOfUpTo64GPUs(t *testing.T) {
	for _, tc := range []struct {
		gpus int
		mask uint64
	}{{8, 0b11}, {64, 0b11}, {65, 0}} {
		f, err := topology.New(topology.Spec{Levels: []string{"rack", "node"}, Nodes: []topology.NodeSpec{
			{Name: "n", Path: []string{"r"}, GPUs: tc.gpus, Flavor: "H100"}}})
		require.NoError(t, err)
		a, err := placement.Place(f, onePod("w", gang.PodSet{GPUsPerPod: 2}), placement.Options{})
		require.NoError(t, err)
		assert.Equal(t, tc.mask, a.Pods[0].GPUMask, "%d GPUs", tc.gpus)
	}
}

// Crossing counts leaves only: any other domain, the first one after the
// leaves included, has none.
func TestCrossingIsZeroOutsideTheLeaves(t *testing.T) {
	f := twoModelFleet(t)
	c := placement.NewCrossings(f)
	lo, hi := c.Leaves()
	require.Equal(t, topology.DomainID(1), hi-lo)
	for d := topology.DomainID(0); d < topology.DomainID(f.NumDomains()); d++ {
		assert.Zero(t, c.Crossing(d), "domain %d", d)
	}
}

// A pod that asks for no GPU goes to the node where it leaves the least
// GPU capacity idle, so that it keeps no GPU pod out; among equals, the
// first node.
func TestGPUlessPodGoesWhereTheLeastGPUCapacityIsIdle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alloc []int // GPUs in use per node, of 8
		node  string
	}{
		{"last node full", []int{0, 4, 8}, "n002"},
		{"first node full", []int{8, 4, 0}, "n000"},
		{"middle node tightest", []int{2, 6, 0}, "n001"},
		{"a tie goes to the first", []int{4, 0, 4}, "n000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := coresFleet(t, []int{8, 8, 8}, []int64{16, 16, 16})
			for n, g := range tc.alloc {
				if g > 0 {
					require.NoError(t, f.Allocate(topology.NodeID(n), g))
				}
			}
			a, err := placement.Place(f, onePod("w", gang.PodSet{Resources: cores(1)}), placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.node, f.NodeName(a.Pods[0].Node))
		})
	}
}

// Pods placed GPU by GPU (whole-GPU pods that also ask for cores, and
// shares) take only what the node has free: whole-GPU pods its free GPUs
// over their GPUs each, a share a GPU with that much left, never a GPU
// held whole.
func TestPodsThatAskForResourcesTakeOnlyFreeGPUs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ps    gang.PodSet
		alloc int // whole GPUs in use on each node
		want  []int
	}{
		{"three 2-GPU pods on two 4-GPU nodes", gang.PodSet{Name: "p", Count: 3, GPUsPerPod: 2, Resources: cores(1)}, 0, []int{2, 1}},
		{"a thousandth of a GPU beside GPUs held whole", gang.PodSet{Name: "p", Count: 1, GPUShare: 1, Resources: cores(1)}, 3, []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := coresFleet(t, []int{4, 4}, []int64{64, 64})
			if tc.alloc > 0 {
				require.NoError(t, f.Allocate(0, tc.alloc))
				require.NoError(t, f.Allocate(1, 4))
			}
			w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{tc.ps}}
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			got := make([]int, 2)
			for _, pod := range a.Pods {
				got[pod.Node]++
				if pod.Share > 0 {
					assert.False(t, f.GPUWhole(pod.Node, pod.GPU), "a share on GPU %d, held whole", pod.GPU)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
