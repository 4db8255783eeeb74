package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/k8s"
)

// GKE labels a GPU node's model cloud.google.com/gke-accelerator and
// carries no nvidia.com/gpu.product without the GPU operator: the preset
// reads the former, so GKE nodes get their model as flavor, not "".
func TestGKEPresetReadsFlavorFromGKEAccelerator(t *testing.T) {
	labels := func(extra map[string]string) map[string]string {
		l := map[string]string{
			"cloud.google.com/gce-topology-block":    "b1",
			"cloud.google.com/gce-topology-subblock": "s1",
			"cloud.google.com/gce-topology-host":     "h1",
		}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	nodes := []k8s.Node{
		{Name: "a", GPUs: 8, Labels: labels(map[string]string{k8s.GKEAcceleratorLabel: "nvidia-h100-80gb"})},
		{Name: "b", GPUs: 8, Labels: labels(map[string]string{k8s.GKEAcceleratorLabel: "nvidia-h200-141gb", k8s.ProductLabel: "NVIDIA-H200"})},
	}
	res, err := k8s.Import(nodes, k8s.GKE())
	require.NoError(t, err)
	assert.Equal(t, "nvidia-h100-80gb", res.Spec.Nodes[0].Flavor)
	assert.Equal(t, "nvidia-h200-141gb", res.Spec.Nodes[1].Flavor)
	assert.Empty(t, res.Warnings)

	gke, err := k8s.Preset("gke", nodes)
	require.NoError(t, err)
	assert.Equal(t, k8s.GKEAcceleratorLabel, gke.FlavorLabel)
}

// A node left with flavor "" (no flavor label, no DefaultFlavor) is named
// in one WarnNoFlavor; a DefaultFlavor or the label silences it.
func TestNodesWithoutFlavorAreWarned(t *testing.T) {
	nodes := []k8s.Node{
		{Name: "a", GPUs: 8, Labels: map[string]string{"rack": "r1", k8s.ProductLabel: "H100"}},
		{Name: "b", GPUs: 8, Labels: map[string]string{"rack": "r1"}},
		{Name: "c", GPUs: 8, Labels: map[string]string{"rack": "r2"}},
	}
	tests := []struct {
		name string
		opts k8s.Options
		want []k8s.Warning
	}{
		{"no default", k8s.Options{Levels: []k8s.Level{{"rack", "rack"}}}, []k8s.Warning{{Kind: k8s.WarnNoFlavor,
			Detail: `2 of 3 nodes (first "b") lack nvidia.com/gpu.product and no DefaultFlavor is set; their flavor is ""`}}},
		{"default", k8s.Options{Levels: []k8s.Level{{"rack", "rack"}}, DefaultFlavor: "H100"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := k8s.Import(nodes, tt.opts)
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Warnings)
			assert.Equal(t, "H100", res.Spec.Nodes[0].Flavor)
		})
	}
}
