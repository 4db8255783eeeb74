package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
)

// NodeGPUs lists whole GPUs only: pods holding a share of a GPU leave no
// entry, and whole-GPU pods on one node merge into one entry.
func TestNodeGPUsCountsWholeGPUsOnly(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	w := &gang.Workload{ID: "s", Queue: "q", PodSets: []gang.PodSet{
		{Name: "whole", Count: 2, GPUsPerPod: 2},
		{Name: "half", Count: 1, GPUShare: 500},
	}}
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	require.Len(t, a.Pods, 3)
	assert.Equal(t, []string{"node-0-0-0=4"}, nodesOf(f, a))

	w = &gang.Workload{ID: "h", Queue: "q", PodSets: []gang.PodSet{{Name: "half", Count: 1, GPUShare: 500}}}
	a, err = placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Empty(t, a.NodeGPUs())
}
