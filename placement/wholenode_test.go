package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Pods of the most GPUs any node has take the nodes of a leaf whose every
// GPU is free, in ID order, each pod all of its node's GPUs: by name on
// nodes of up to 64 GPUs, by count above. A node with a shared GPU, a
// cordoned node and a smaller node are passed over.
func TestWholeNodePodsTakeFreeNodesInOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		gpus int
		mask uint64
	}{
		{"named", 8, 0xff},
		{"counted", 72, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := topology.Spec{Levels: []string{"leaf", "node"}}
			for i, name := range []string{"shared", "cordoned", "small", "a", "b", "c"} {
				gpus := c.gpus
				if i == 2 {
					gpus /= 2
				}
				spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: name, Path: []string{"l0"}, GPUs: gpus, Flavor: "H100"})
			}
			f, err := topology.New(spec)
			require.NoError(t, err)
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 3, Share: 300}))
			require.NoError(t, f.SetHealth(1, topology.Cordoned))
			a, err := placement.Place(f, work("g", 2, c.gpus, "leaf", ""), placement.Options{})
			require.NoError(t, err)
			require.Len(t, a.Pods, 2)
			for i, want := range []string{"a", "b"} {
				p := a.Pods[i]
				assert.Equal(t, want, f.NodeName(p.Node), "pod %d", i)
				assert.Equal(t, i, p.Index)
				assert.Equal(t, c.gpus, p.GPUs)
				assert.Equal(t, c.mask, p.GPUMask, "pod %d", i)
			}
			require.NoError(t, placement.Apply(f, a))
			assert.Zero(t, f.Free(3)+f.Free(4))
		})
	}
}
