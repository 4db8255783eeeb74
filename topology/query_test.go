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

// A negative minimum asks for every domain, as zero does.
func TestAscendDomainsNegativeMinimum(t *testing.T) {
	f, err := New(Uniform(UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{3, 2}, GPUsPerNode: 8}))
	require.NoError(t, err)
	count := func(asc func(Level, GroupID, int, func(DomainID, int) bool), min int) int {
		n := 0
		asc(1, 0, min, func(DomainID, int) bool { n++; return true })
		return n
	}
	for _, min := range []int{0, -1} {
		require.Equal(t, 3, count(f.AscendDomainsByFreeNodes, min), "by free nodes, min %d", min)
		require.Equal(t, 3, count(f.AscendDomainsByFreeGPUs, min), "by free GPUs, min %d", min)
	}
}
