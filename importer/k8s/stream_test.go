package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/k8s"
)

// kubeNode is a core/v1 Node as `kubectl get node X -o yaml` prints it
// (trimmed).
func kubeNode(name, gpus string) string {
	return `apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels:
    kubernetes.io/hostname: ` + name + `
    cloud.google.com/gke-accelerator: nvidia-h100-80gb
spec:
  podCIDR: 10.0.0.0/24
status:
  allocatable:
    cpu: "206"
    nvidia.com/gpu: "` + gpus + `"
  capacity:
    nvidia.com/gpu: "8"
`
}

// One Node (`kubectl get node X -o yaml`) and a "---" stream of Nodes and
// Lists are node lists too, read in order; a stream of anything else is
// refused, naming the document and its line.
func TestParseNodesReadsSingleNodeAndStream(t *testing.T) {
	type want struct {
		name string
		gpus int
	}
	tests := []struct {
		name string
		in   string
		want []want
	}{
		{"single node", kubeNode("a", "8"), []want{{"a", 8}}},
		{"single node after ---", "---\n" + kubeNode("a", "4"), []want{{"a", 4}}},
		{"stream of nodes", kubeNode("a", "8") + "---\n" + kubeNode("b", "4") + "---\n# trailing comment\n", []want{{"a", 8}, {"b", 4}}},
		{"stream of a list and a node", "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n  status: {allocatable: {nvidia.com/gpu: 2}}\n" +
			"---\n" + kubeNode("b", "8"), []want{{"a", 2}, {"b", 8}}},
		{"JSON node", `{"kind": "Node", "metadata": {"name": "a"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}`, []want{{"a", 8}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, err := k8s.ParseNodes([]byte(tt.in), "")
			require.NoError(t, err)
			var got []want
			for _, n := range nodes {
				got = append(got, want{n.Name, n.GPUs})
			}
			assert.Equal(t, tt.want, got)
		})
	}

	// The labels come through, and the GKE preset reads the flavor.
	nodes, err := k8s.ParseNodes([]byte(kubeNode("a", "8")), "")
	require.NoError(t, err)
	assert.Equal(t, "nvidia-h100-80gb", nodes[0].Labels[k8s.GKEAcceleratorLabel])

	// Errors name the entry across the stream, or the document.
	_, err = k8s.ParseNodes([]byte(kubeNode("a", "8")+"---\n"+kubeNode("b", "1K")), "")
	require.ErrorIs(t, err, k8s.ErrBadGPUs)
	var ke *k8s.Error
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "b", ke.Node)
	assert.Equal(t, 1, ke.Index)

	_, err = k8s.ParseNodes([]byte(kubeNode("a", "8")+"---\n- {name: b, gpus: 8}\n"), "")
	require.ErrorIs(t, err, k8s.ErrSyntax)
	require.ErrorAs(t, err, &ke)
	assert.Contains(t, ke.Detail, "document 1 (line 17)")

	_, err = k8s.ParseNodes([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"), "")
	require.ErrorIs(t, err, k8s.ErrSyntax)
}
