package packing_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/packing"
	"github.com/fleetsched/fleet/topology"
)

// The held-out variants are derived from the list alone: gpuspec binds
// every third GPU pod to one model with nodes that hold it, multigpu
// repeats the multi-GPU pods to 30% of the GPUs asked; the rest of the
// list is kept as it was.
func TestOpenbVariants(t *testing.T) {
	spec := topology.Spec{Levels: []string{"rack", "node"}}
	for i, n := range []struct {
		gpus  int
		model string
		cpu   int64
	}{{8, "G2", 96000}, {2, "T4", 104000}, {4, "V100M16", 32000}, {0, "", 32000}} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: string(rune('a' + i)), Path: []string{"r"}, GPUs: n.gpus, Flavor: n.model,
			Resources: map[string]int64{"cpu": n.cpu, "memory": 1 << 20}})
	}
	pod := func(k, share int, cpu int64) gang.Workload {
		return gang.Workload{ID: "p", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: k, GPUShare: share,
			Resources: []gang.Resource{{Name: "cpu", Amount: cpu}}}}}
	}
	var pods []gang.Workload
	for i := range 30 {
		pods = append(pods, pod(0, 500, 4000), pod(1, 0, 40000), pod(0, 0, 2000))
		if i%10 == 0 {
			pods = append(pods, pod(8, 0, 8000))
		}
	}
	tests := []struct {
		name  string
		check func(t *testing.T, out []gang.Workload)
	}{
		{"default", func(t *testing.T, out []gang.Workload) { require.Equal(t, pods, out) }},
		{"gpuspec", func(t *testing.T, out []gang.Workload) {
			require.Len(t, out, len(pods))
			gpu, bound := 0, 0
			for i, w := range out {
				ps := w.PodSets[0]
				require.Equal(t, pods[i].PodSets, w.PodSets)
				if ps.NoGPU() {
					require.Empty(t, w.Flavors)
					continue
				}
				if gpu++; gpu%3 != 0 {
					require.Empty(t, w.Flavors)
					continue
				}
				bound++
				require.Len(t, w.Flavors, 1)
				switch {
				case ps.GPUsPerPod == 8:
					require.Equal(t, "G2", w.Flavors[0], "only G2 nodes have 8 GPUs")
				case ps.Resource("cpu") > 32000:
					require.NotEqual(t, "V100M16", w.Flavors[0], "V100M16 nodes lack the cores")
				}
			}
			require.Equal(t, gpu/3, bound)
		}},
		{"multigpu", func(t *testing.T, out []gang.Workload) {
			require.Equal(t, pods, out[:len(pods)])
			var all, multi int64
			for _, w := range out {
				all += w.MilliGPUs()
				if w.PodSets[0].GPUsPerPod > 1 {
					multi += w.MilliGPUs()
				}
			}
			require.GreaterOrEqual(t, 10*multi, 3*all)
			for _, w := range out[len(pods):] {
				require.Greater(t, w.PodSets[0].GPUsPerPod, 1)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := packing.OpenbVariant(spec, pods, tc.name)
			require.NoError(t, err)
			again, err := packing.OpenbVariant(spec, pods, tc.name)
			require.NoError(t, err)
			require.Equal(t, out, again, "a variant is the same every run")
			tc.check(t, out)
		})
	}
	_, err := packing.OpenbVariant(spec, pods, "nosuch")
	require.Error(t, err)
}
