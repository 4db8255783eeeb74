package topology

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Asking for more free GPUs than any node has counts no nodes.
func TestNodesWithAtLeastAboveNodeSize(t *testing.T) {
	f, err := New(Uniform(UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{1, 2}, GPUsPerNode: 8}))
	require.NoError(t, err)
	require.Equal(t, 2, f.NodesWithAtLeast(Root, 0, 8))
	require.Equal(t, 0, f.NodesWithAtLeast(Root, 0, 9))
	require.Equal(t, 0, f.NodesWithAtLeast(Root, 0, 10))
}
