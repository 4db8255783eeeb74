package topology

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Allocate and Release accept exactly what is there and not one GPU
// more; node IDs are valid from 0 to NumNodes()-1.
func TestAllocateReleaseBoundaries(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	last := NodeID(f.NumNodes() - 1)
	for _, c := range []struct {
		name string
		do   func() error
		want error
	}{
		{"zero GPUs", func() error { return f.Allocate(0, 0) }, ErrBadAmount},
		{"negative GPUs", func() error { return f.Allocate(0, -1) }, ErrBadAmount},
		{"one more than free", func() error { return f.Allocate(0, 9) }, ErrOverAlloc},
		{"every free GPU", func() error { return f.Allocate(0, 8) }, nil},
		{"one on a full node", func() error { return f.Allocate(0, 1) }, ErrOverAlloc},
		{"one more than held", func() error { return f.Release(0, 9) }, ErrOverRelease},
		{"every held GPU", func() error { return f.Release(0, 8) }, nil},
		{"release on an empty node", func() error { return f.Release(0, 1) }, ErrOverRelease},
		{"release zero", func() error { return f.Release(0, 0) }, ErrBadAmount},
		{"the last node", func() error { return f.Allocate(last, 1) }, nil},
		{"past the last node", func() error { return f.Allocate(last+1, 1) }, ErrUnknownNode},
		{"a negative node", func() error { return f.Allocate(-1, 1) }, ErrUnknownNode},
		{"release past the last node", func() error { return f.Release(last+1, 1) }, ErrUnknownNode},
		{"health of the last node", func() error { return f.SetHealth(last, Cordoned) }, nil},
		{"a cordoned node still records work", func() error { return f.Allocate(last, 1) }, nil},
		{"health past the last node", func() error { return f.SetHealth(last+1, Healthy) }, ErrUnknownNode},
		{"health of a negative node", func() error { return f.SetHealth(-1, Healthy) }, ErrUnknownNode},
		{"the last health", func() error { return f.SetHealth(1, Absent) }, nil},
		{"past the last health", func() error { return f.SetHealth(1, Absent+1) }, ErrInvalidSpec},
		{"an absent node takes nothing", func() error { return f.Allocate(1, 1) }, ErrNodeDown},
		{"a down node takes nothing", func() error { _ = f.SetHealth(1, Down); return f.Allocate(1, 1) }, ErrNodeDown},
	} {
		err := c.do()
		if c.want == nil {
			assert.NoError(t, err, c.name)
		} else {
			assert.ErrorIs(t, err, c.want, c.name)
		}
	}
	assert.Equal(t, 2, f.Allocated(last))
	assert.Equal(t, 0, f.Allocated(0))
}

// A node counts as free (for whole-node gangs) only with every GPU free,
// and as stranded only while partly used; a full node is neither, nor
// is a node that is not healthy.
func TestFreeAndStrandedAtTheEdges(t *testing.T) {
	for _, c := range []struct {
		alloc      int
		health     Health
		freeNodes  int
		stranded   int
		freeGPUs   int
		atLeast8   int
		fraction   float64
		pods3      int
		largestAt1 int
	}{
		{0, Healthy, 1, 0, 8, 1, 0, 2, 1},
		{1, Healthy, 0, 7, 7, 0, 7.0 / 8, 2, 0},
		{7, Healthy, 0, 1, 1, 0, 1.0 / 8, 0, 0},
		{8, Healthy, 0, 0, 0, 0, 0, 0, 0},
		{1, Cordoned, 0, 0, 0, 0, 0, 0, 0},
	} {
		f, err := New(Uniform(UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{1, 1}, GPUsPerNode: 8}))
		require.NoError(t, err)
		if c.alloc > 0 {
			require.NoError(t, f.Allocate(0, c.alloc))
		}
		require.NoError(t, f.SetHealth(0, c.health))
		s := f.Stats(Root, AllGroups)
		assert.Equal(t, c.freeNodes, s.FreeNodes, "alloc %d %s", c.alloc, c.health)
		assert.Equal(t, c.stranded, s.Stranded, "alloc %d %s", c.alloc, c.health)
		assert.Equal(t, c.freeGPUs, s.FreeGPUs, "alloc %d %s", c.alloc, c.health)
		assert.Equal(t, c.atLeast8, f.NodesWithAtLeast(Root, 0, 8), "alloc %d %s", c.alloc, c.health)
		assert.Equal(t, c.pods3, f.PodsThatFit(Root, 0, 3), "alloc %d %s", c.alloc, c.health)
		gpus, frac := f.Stranded()
		assert.Equal(t, c.stranded, gpus)
		assert.InDelta(t, c.fraction, frac, 1e-12, "alloc %d %s", c.alloc, c.health)
		n, _ := f.LargestFreeBlock(1, 0)
		assert.Equal(t, c.largestAt1, n, "alloc %d %s", c.alloc, c.health)
	}
}

// Edges of the queries: sizes 0 and below, levels out of range, ties.
func TestQueryEdges(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	require.NoError(t, f.Allocate(0, 3))
	assert.Equal(t, 8, f.NodesWithAtLeast(Root, 0, 0), "0 GPUs: every healthy node")
	assert.Equal(t, 8, f.NodesWithAtLeast(Root, 0, -1))
	assert.Equal(t, 7, f.NodesWithAtLeast(Root, 0, 6))
	assert.Equal(t, 8, f.NodesWithAtLeast(Root, 0, 5))
	assert.Equal(t, 0, f.PodsThatFit(Root, 0, 0), "no pods of 0 GPUs")
	assert.Equal(t, 0, f.PodsThatFit(Root, 0, -1))
	assert.Equal(t, 61, f.PodsThatFit(Root, 0, 1))
	assert.Equal(t, 30, f.PodsThatFit(Root, 0, 2), "5 free hold two pods of 2")

	assert.Equal(t, "fleet", f.LevelName(0))
	assert.Equal(t, "fleet", f.LevelName(-1))
	assert.Equal(t, "spine", f.LevelName(1))
	assert.Equal(t, "node", f.LevelName(Level(f.Depth())))
	assert.Equal(t, "fleet", f.LevelName(Level(f.Depth()+1)))
	_, ok := f.Domain(-1, "spine-0")
	assert.False(t, ok)
	_, ok = f.Domain(Level(f.Depth()+1), "node-0-0-0")
	assert.False(t, ok)
	d, ok := f.Domain(Level(f.Depth()), "node-0-0-0")
	assert.True(t, ok)
	assert.Equal(t, f.NodeDomain(0), d)
	assert.Equal(t, "node-1-1-1", f.DomainName(f.NodeDomain(7)))
	assert.Equal(t, NodeID(7), NodeID(f.NodeDomain(7)-f.NodeDomain(0)))
	d, ok = f.Domain(0, "")
	assert.True(t, ok)
	assert.Equal(t, Root, d)

	// Ties go to the lowest ID, by the index and by the scan alike.
	for _, g := range []GroupID{0, AllGroups} {
		n, d := f.LargestFreeBlock(1, g)
		assert.Equal(t, 4, n)
		assert.Equal(t, "spine-1", f.DomainName(d), "group %d: spine-0 has a partly used node", g)
		n, d = f.LargestFreeBlock(2, g)
		assert.Equal(t, 2, n)
		assert.Equal(t, "leaf-0-1", f.DomainName(d), "group %d", g)
	}
	n, d := f.LargestFreeBlock(Level(f.Depth()), 0)
	assert.Equal(t, 1, n)
	assert.Equal(t, "node-0-0-1", f.DomainName(d), "nodes: the first free one")
	n, _ = f.LargestFreeBlock(0, 0)
	assert.Equal(t, 7, n)

	require.NoError(t, f.Allocate(1, 8))
	var seen []NodeID
	f.AscendNodesByFree(0, 0, func(n NodeID, free int) bool {
		seen = append(seen, n)
		return true
	})
	assert.NotContains(t, seen, NodeID(1), "a minimum of 0 still skips full nodes")
	assert.Equal(t, NodeID(0), seen[0], "5 free: the tightest")

	assert.Equal(t, Level(f.Depth()), f.Span(nil))
	assert.Equal(t, Level(f.Depth()), f.Span([]NodeID{3}))
	assert.Equal(t, Level(2), f.Span([]NodeID{0, 1}))
	assert.Equal(t, Level(1), f.Span([]NodeID{0, 3}))
	assert.Equal(t, Level(0), f.Span([]NodeID{0, 7}))
}

// Release frees the highest whole-held GPUs of its own node, never a
// neighbour's, and Allocate the lowest free ones.
func TestReleaseAndAllocateStayOnTheirNode(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	for n := range NodeID(3) {
		require.NoError(t, f.Allocate(n, 8))
	}
	require.NoError(t, f.Release(1, 2))
	assert.Equal(t, uint64(0b11000000), f.FreeMask(1), "the two highest GPUs of node 1")
	assert.Zero(t, f.FreeMask(0))
	assert.Zero(t, f.FreeMask(2))
	assert.Equal(t, []int{8, 6, 8}, []int{f.Allocated(0), f.Allocated(1), f.Allocated(2)})
	require.NoError(t, f.Release(2, 8))
	require.NoError(t, f.Allocate(2, 1))
	assert.Equal(t, uint64(0b11111110), f.FreeMask(2), "the lowest GPU")
	assert.Equal(t, uint64(0b11000000), f.FreeMask(1))
}

// With several groups each domain keeps one set of figures per group
// and one for all: Stats reads the right one.
func TestStatsPerGroup(t *testing.T) {
	s := small()
	for i := range s.Nodes {
		if i%4 == 3 {
			s.Nodes[i].Pool = "inference"
		}
	}
	f, err := New(s)
	require.NoError(t, err)
	require.NoError(t, f.Allocate(3, 2))
	inf, ok := f.Group("H100", "inference")
	require.True(t, ok)
	leaf, _ := f.Domain(2, "leaf-0-1")
	assert.Equal(t, Stats{Nodes: 1, HealthyNodes: 1, GPUs: 8, HealthyGPUs: 8, FreeGPUs: 6, Allocated: 2, Stranded: 6}, f.Stats(leaf, inf))
	assert.Equal(t, Stats{Nodes: 1, HealthyNodes: 1, FreeNodes: 1, GPUs: 8, HealthyGPUs: 8, FreeGPUs: 8}, f.Stats(leaf, 0))
	assert.Equal(t, 14, f.Stats(leaf, AllGroups).FreeGPUs)
	assert.Equal(t, 62, f.Stats(Root, AllGroups).FreeGPUs)
	assert.Equal(t, 14, f.Stats(Root, inf).FreeGPUs)
	for _, d := range []DomainID{Root, leaf, f.NodeDomain(3), f.NodeDomain(7)} {
		for _, g := range []GroupID{0, inf, AllGroups} {
			s := f.Stats(d, g)
			assert.Equal(t, s.FreeGPUs, f.FreeGPUs(d, g), "%s group %d", f.DomainName(d), g)
			assert.Equal(t, s.FreeNodes, f.FreeNodes(d, g), "%s group %d", f.DomainName(d), g)
		}
	}
}

// LargestFreeBlock answers by the index at the middle levels and by a
// scan elsewhere; both give the most free nodes of the group and the
// lowest domain of the level with that count, also when no domain has a
// free node of the group (0 and the level's first domain, though it
// holds none of the group's nodes). LargestFreeBlockBesides is the scan's
// count with one domain left out.
func TestLargestFreeBlockIndexAgreesWithTheScan(t *testing.T) {
	spec := Spec{Levels: []string{"spine", "leaf", "node"}}
	for i, x := range []struct{ spine, leaf, flavor string }{
		{"s0", "l0", "H100"}, {"s0", "l0", "H100"}, {"s0", "l1", "H100"},
		{"s1", "l2", "L4"}, {"s1", "l2", "L4"}, {"s1", "l3", "L4"}, {"s1", "l3", "H100"},
	} {
		spec.Nodes = append(spec.Nodes, NodeSpec{Name: fmt.Sprintf("n%d", i), Path: []string{x.spine, x.leaf}, GPUs: 8, Flavor: x.flavor})
	}
	want := func(f *Fleet, l Level, g GroupID) (int, DomainID) {
		lo, hi := f.DomainsAt(l)
		best, bestD := 0, lo
		for d := lo; d < hi; d++ {
			if n := f.FreeNodes(d, g); n > best {
				best, bestD = n, d
			}
		}
		return best, bestD
	}
	for _, tc := range []struct {
		name string
		busy []string
	}{
		{"all free", nil},
		{"the first leaf busy", []string{"n0"}},
		{"every L4 node busy", []string{"n3", "n4", "n5"}},
		{"every node busy", []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(spec)
			require.NoError(t, err)
			for _, name := range tc.busy {
				n, _ := f.Node(name)
				require.NoError(t, f.Allocate(n, 1))
			}
			for l := Level(0); int(l) <= f.Depth(); l++ {
				for _, g := range []GroupID{0, 1, AllGroups} {
					n, d := f.LargestFreeBlock(l, g)
					wn, wd := want(f, l, g)
					assert.Equal(t, wn, n, "level %d group %d", l, g)
					assert.Equal(t, f.DomainName(wd), f.DomainName(d), "level %d group %d", l, g)
				}
			}
			// Besides d: the scan's count over the other domains.
			for l := Level(1); int(l) < f.Depth(); l++ {
				lo, hi := f.DomainsAt(l)
				for _, g := range []GroupID{0, 1} {
					for d := lo; d < hi; d++ {
						want := 0
						for e := lo; e < hi; e++ {
							if e != d {
								want = max(want, f.FreeNodes(e, g))
							}
						}
						assert.Equal(t, want, f.LargestFreeBlockBesides(l, g, d), "level %d group %d besides %s", l, g, f.DomainName(d))
					}
				}
			}
		})
	}
}
