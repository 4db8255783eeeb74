package placement_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// warmList is a Warm of fixed lists per model.
type warmList map[string][]topology.NodeID

func (w warmList) WarmNodes(model string) []topology.NodeID { return w[model] }

// A replica naming its model goes to the tightest warm node with room;
// without one, or without a model, best fit decides as before.
func TestWarmNodesPreferred(t *testing.T) {
	warm := warmList{"llama": {1, 3, 5}, "gone": {200}}
	cases := []struct {
		name  string
		model string
		gpus  int
		share int
		busy  map[topology.NodeID]int // GPUs held per node
		want  topology.NodeID
	}{
		{name: "no model: best fit", gpus: 4, busy: map[topology.NodeID]int{0: 4}, want: 0},
		{name: "warm beats a tighter cold node", model: "llama", gpus: 4, busy: map[topology.NodeID]int{0: 4}, want: 1},
		{name: "tightest warm node", model: "llama", gpus: 2, busy: map[topology.NodeID]int{3: 6, 5: 4}, want: 3},
		{name: "warm nodes full: best fit", model: "llama", gpus: 4, busy: map[topology.NodeID]int{0: 4, 1: 8, 3: 8, 5: 6}, want: 0},
		{name: "a share on a warm node", model: "llama", share: 500, want: 1},
		{name: "unknown model: best fit", model: "mistral", gpus: 8, busy: map[topology.NodeID]int{0: 1}, want: 1},
		{name: "warm node outside the fleet is ignored", model: "gone", gpus: 1, want: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := smallFleet(t)
			for n, g := range c.busy {
				require.NoError(t, f.Allocate(n, g))
			}
			w := &gang.Workload{ID: "r", Queue: "q", Shape: gang.Inference, Model: c.model,
				PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: c.gpus, GPUShare: c.share}}}
			before := f.String()
			a, err := placement.Place(f, w, placement.Options{Warm: warm})
			require.NoError(t, err)
			require.Len(t, a.Pods, 1)
			require.Equal(t, c.want, a.Pods[0].Node, "placed on %s", f.NodeName(a.Pods[0].Node))
			require.Equal(t, before, f.String(), "Place leaves the fleet as it was")
			require.NoError(t, placement.Apply(f, a))
		})
	}
}

// Several interchangeable pods go to warm nodes, tightest first, when the
// warm nodes hold them all; otherwise, and for gangs with a topology
// request, placement is as without warmth.
func TestWarmNodesForSeveralPods(t *testing.T) {
	cases := []struct {
		name string
		pods int
		gpus int
		topo gang.TopologyRequest
		warm []topology.NodeID
		busy map[topology.NodeID]int
		want []topology.NodeID // nil: as without warmth
	}{
		{name: "two replicas on two warm nodes", pods: 2, gpus: 8, warm: []topology.NodeID{5, 7}, want: []topology.NodeID{5, 7}},
		{name: "tightest warm node first", pods: 3, gpus: 4, warm: []topology.NodeID{2, 6}, busy: map[topology.NodeID]int{6: 4},
			want: []topology.NodeID{6, 2, 2}},
		{name: "too little warm room", pods: 3, gpus: 8, warm: []topology.NodeID{5, 7}},
		{name: "a topology request", pods: 2, gpus: 8, topo: gang.TopologyRequest{Preferred: "leaf"}, warm: []topology.NodeID{1, 5}},
		// Out of the contract's ascending order, a node listed again is
		// read once: its room is not counted twice.
		{name: "a warm node listed twice counts once", pods: 2, gpus: 8, warm: []topology.NodeID{5, 5}},
		{name: "a repeat among others", pods: 3, gpus: 4, warm: []topology.NodeID{2, 2, 6}, busy: map[topology.NodeID]int{6: 4},
			want: []topology.NodeID{6, 2, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := smallFleet(t)
			for n, g := range c.busy {
				require.NoError(t, f.Allocate(n, g))
			}
			w := &gang.Workload{ID: "g", Queue: "q", Shape: gang.Inference, Model: "llama", Topology: c.topo,
				PodSets: []gang.PodSet{{Name: "p", Count: c.pods, GPUsPerPod: c.gpus}}}
			a, err := placement.Place(f, w, placement.Options{Warm: warmList{"llama": c.warm}})
			require.NoError(t, err)
			var got []topology.NodeID
			for _, p := range a.Pods {
				got = append(got, p.Node)
			}
			if c.want == nil {
				plain, err := placement.Place(f, w, placement.Options{})
				require.NoError(t, err)
				c.want = nil
				for _, p := range plain.Pods {
					c.want = append(c.want, p.Node)
				}
			}
			require.Equal(t, c.want, got)
			require.NoError(t, placement.Apply(f, a))
		})
	}
}

// smallFleet is 2 leaves x 4 nodes x 8 GPUs.
func smallFleet(t *testing.T) *topology.Fleet {
	f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{2, 4}, GPUsPerNode: 8, Flavor: "H100"}))
	require.NoError(t, err)
	return f
}
