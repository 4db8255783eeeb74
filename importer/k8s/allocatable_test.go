package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/k8s"
)

// A node whose allocatable GPUs are 0 (the device plugin reports none
// healthy) has no GPUs to give, whatever nvidia.com/gpu.count says: the
// label is a fallback for nodes without the resource, not an override.
func TestAllocatableZeroIsNotReplacedByCountLabel(t *testing.T) {
	y := "kind: List\nitems:\n" +
		"- metadata: {name: a, labels: {nvidia.com/gpu.count: \"8\"}}\n  status: {allocatable: {nvidia.com/gpu: \"0\"}, capacity: {nvidia.com/gpu: \"8\"}}\n" +
		"- metadata: {name: b, labels: {nvidia.com/gpu.count: \"8\"}}\n  status: {allocatable: {nvidia.com/gpu: \"8\"}}\n" +
		"- metadata: {name: c, labels: {nvidia.com/gpu.count: \"8\"}}\n"
	nodes, err := k8s.ParseNodes([]byte(y), "")
	require.NoError(t, err)
	res, err := k8s.Import(nodes, k8s.Options{})
	require.NoError(t, err)
	got := map[string]int{}
	for _, n := range res.Spec.Nodes {
		got[n.Name] = n.GPUs
	}
	require.Equal(t, map[string]int{"b": 8, "c": 8}, got)
}
