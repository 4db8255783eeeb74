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

// MaxNodesIn is the largest domain of each level in nodes, whatever their
// health; out-of-range levels hold none.
func TestMaxNodesIn(t *testing.T) {
	n := func(name string, path ...string) NodeSpec {
		return NodeSpec{Name: name, Path: path, GPUs: 8, Flavor: "H100"}
	}
	f, err := New(Spec{Levels: []string{"spine", "leaf", "node"}, Nodes: []NodeSpec{
		n("a", "s0", "l0"), n("b", "s0", "l0"), n("c", "s0", "l1"),
		n("d", "s1", "l2"), n("e", "s1", "l3"), n("f", "s1", "l4"), n("g", "s1", "l4"), n("h", "s1", "l4")}})
	require.NoError(t, err)
	require.NoError(t, f.SetHealth(6, Down))
	for l, want := range []int{8, 5, 3, 1} {
		require.Equal(t, want, f.MaxNodesIn(Level(l)), "level %d", l)
	}
	require.Zero(t, f.MaxNodesIn(-1))
	require.Zero(t, f.MaxNodesIn(4))
}
