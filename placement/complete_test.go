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

// coresFleet is one rack of nodes with gpus[i] GPUs and cores[i] cores.
func coresFleet(t *testing.T, gpus []int, cores []int64) *topology.Fleet {
	spec := topology.Spec{Levels: []string{"rack", "node"}}
	for i := range gpus {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%03d", i), Path: []string{"r0"},
			GPUs: gpus[i], Flavor: "G2", Resources: map[string]int64{"cpu": cores[i] * 1000}})
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	return f
}

func cores(c int64) []gang.Resource { return []gang.Resource{{Name: "cpu", Amount: c * 1000}} }

// TestEightGPUPodFindsTheOnlyNodeWithItsCores: 40 free 8-GPU nodes of 96
// cores come first in the best-fit order, and only the last node has 128;
// a 120-core 8-GPU pod goes there, with and without a Ranker, however
// far past the walk's bound it is.
func TestEightGPUPodFindsTheOnlyNodeWithItsCores(t *testing.T) {
	gpus, cs := make([]int, 41), make([]int64, 41)
	for i := range gpus {
		gpus[i], cs[i] = 8, 96
	}
	cs[40] = 128
	f := coresFleet(t, gpus, cs)
	w := onePod("w", gang.PodSet{GPUsPerPod: 8, Resources: cores(120)})
	fr := placement.NewFragmentation()
	fr.Observe(w)
	for _, opt := range []placement.Options{{}, {Ranker: fr}, {Ranker: sameRanker{}}} {
		a, err := placement.Place(f, w, opt)
		require.NoError(t, err)
		assert.Equal(t, topology.NodeID(40), a.Pods[0].Node)
	}
}

// TestSharePodFindsRoomPastTheSharedGPUBound: GPU 0 of nodes 0-199 has
// 500 thousandths left but no core beside it; node 200 has as much and
// a core. A 300 share with a core goes to node 200, past the 64 shared
// GPUs the walk reads.
func TestSharePodFindsRoomPastTheSharedGPUBound(t *testing.T) {
	gpus, cs := make([]int, 201), make([]int64, 201)
	for i := range gpus {
		gpus[i], cs[i] = 1, 1
	}
	f := coresFleet(t, gpus, cs)
	cpu, _ := f.Resource("cpu")
	for n := range 201 {
		c := topology.Claim{Node: topology.NodeID(n), Share: 500}
		if n < 200 {
			c.Resources = []topology.ResourceAmount{{Resource: cpu, Amount: 1000}}
		}
		require.NoError(t, f.AllocateClaim(c))
	}
	w := onePod("w", gang.PodSet{GPUShare: 300, Resources: cores(1)})
	for _, opt := range []placement.Options{{}, {Ranker: sameRanker{}}} {
		a, err := placement.Place(f, w, opt)
		require.NoError(t, err)
		assert.Equal(t, topology.NodeID(200), a.Pods[0].Node)
		assert.Equal(t, 300, a.Pods[0].Share)
	}
}

// TestGPUlessGangUsesNodesWithoutFreeGPUs: pods that ask no whole GPU
// fit on nodes with none free (GPU-less nodes, or nodes whose GPUs are
// held), at the node level and above: a fleet without GPUs is not one of
// whole-node pods.
func TestGPUlessGangUsesNodesWithoutFreeGPUs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gpus     []int
		req, pre string
	}{
		{"no GPUs, required spine", []int{0, 0}, "rack", "rack"},
		{"no GPUs, node level", []int{0, 0}, "", ""},
		{"held GPUs, node level", []int{2, 2}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := coresFleet(t, tc.gpus, []int64{2, 1})
			for n := range tc.gpus {
				if tc.gpus[n] > 0 {
					require.NoError(t, f.Allocate(topology.NodeID(n), tc.gpus[n]))
				}
			}
			require.NoError(t, f.SetHealth(1, topology.Cordoned))
			w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch,
				Topology: gang.TopologyRequest{Required: tc.req, Preferred: tc.pre},
				PodSets:  []gang.PodSet{{Name: "p", Count: 2, Resources: cores(1)}}}
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, []topology.NodeID{0, 0}, []topology.NodeID{a.Pods[0].Node, a.Pods[1].Node})
		})
	}
}

// A NoFit names what is short with the true figures: GPU thousandths
// for shares (never "0 GPUs"), the resource and its totals when cpu or
// memory runs out, "no GPU" for CPU-only pods.
func TestNoFitNamesWhatIsShort(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ps    gang.PodSet
		short string
		text  string
	}{
		{"share beyond the free thousandths", gang.PodSet{Count: 3, GPUShare: 600}, "gpu-milli",
			"needs 1.8 GPUs in 3 pods, 1.5 GPUs free, short 0.3"},
		{"cores run out", gang.PodSet{Count: 1, GPUsPerPod: 1, Resources: cores(5)}, "cpu",
			"needs 1 GPUs in 1 pods, cpu short: needs 5000, 4000 free"},
		{"cpu-only pods", gang.PodSet{Count: 5, Resources: cores(1)}, "cpu",
			"needs no GPU in 5 pods, cpu short: needs 5000, 4000 free"},
		{"whole GPUs", gang.PodSet{Count: 3, GPUsPerPod: 1}, "gpu", "needs 3 GPUs in 3 pods, 1 free, short 2"},
		{"shares apart", gang.PodSet{Count: 1, GPUShare: 800}, "",
			"needs 0.8 GPUs in 1 pods, 1.5 GPUs free but not together within one fleet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := coresFleet(t, []int{2, 1}, []int64{2, 2})
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, Whole: 1}))
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 1, Share: 250}))
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 1, GPU: 0, Share: 250}))
			ps := tc.ps
			ps.Name = "p"
			w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{ps}}
			if tc.ps.GPUsPerPod > 0 {
				require.NoError(t, f.ReleaseClaim(topology.Claim{Node: 1, GPU: 0, Share: 250}))
			}
			_, err := placement.Place(f, w, placement.Options{})
			var nf *placement.NoFit
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, tc.short, nf.Short)
			assert.Contains(t, err.Error(), tc.text)
		})
	}
}

// TestPodSetsTriedInAnotherOrder: a 4-GPU pod with 10 cores and a
// CPU-only pod with 95 cores fit only as 4-GPU pod on the 8-GPU node of
// 20 cores and CPU pod on the 4-GPU node of 100 cores. Largest pods
// first takes the 4-GPU node (the tighter) for the GPU pod and leaves no
// node for the other; the other order finds the fit.
func TestPodSetsTriedInAnotherOrder(t *testing.T) {
	f := coresFleet(t, []int{4, 8}, []int64{100, 20})
	w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{
		{Name: "gpu", Count: 1, GPUsPerPod: 4, Resources: cores(10)},
		{Name: "cpu", Count: 1, Resources: cores(95)},
	}}
	for _, req := range []string{"", "rack"} {
		w.Topology.Required = req
		a, err := placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		nodes := map[int]topology.NodeID{}
		for _, pod := range a.Pods {
			nodes[pod.PodSet] = pod.Node
		}
		assert.Equal(t, map[int]topology.NodeID{0: 1, 1: 0}, nodes)
	}
}
