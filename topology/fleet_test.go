package topology

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func small() Spec {
	return Uniform(UniformSpec{Levels: []string{"spine", "leaf", "node"}, Fanout: []int{2, 2, 2}, GPUsPerNode: 8, Flavor: "H100"})
}

func TestNewRefusesBadSpecs(t *testing.T) {
	node := func(name string, gpus int, path ...string) NodeSpec {
		return NodeSpec{Name: name, GPUs: gpus, Path: path}
	}
	levels := []string{"spine", "leaf", "node"}
	tests := []struct {
		name   string
		spec   Spec
		err    error
		node   string
		detail string
	}{
		{"no levels", Spec{Nodes: []NodeSpec{node("a", 8)}}, ErrInvalidSpec, "", "no levels"},
		{"duplicate level", Spec{Levels: []string{"leaf", "leaf"}, Nodes: []NodeSpec{node("a", 8, "l")}}, ErrInvalidSpec, "", ""},
		{"empty level", Spec{Levels: []string{"", "node"}, Nodes: []NodeSpec{node("a", 8, "l")}}, ErrInvalidSpec, "", ""},
		{"unknown nvlink", Spec{Levels: levels, NVLink: "rack", Nodes: []NodeSpec{node("a", 8, "s", "l")}}, ErrUnknownLevel, "", ""},
		{"empty fleet", Spec{Levels: levels}, ErrEmptyFleet, "", ""},
		{"empty node name", Spec{Levels: levels, Nodes: []NodeSpec{node("", 8, "s", "l")}}, ErrInvalidSpec, "", "empty name"},
		{"duplicate node", Spec{Levels: levels, Nodes: []NodeSpec{node("a", 8, "s", "l"), node("a", 8, "s", "l")}}, ErrDuplicate, "a", "also nodes[0]"},
		{"short path", Spec{Levels: levels, Nodes: []NodeSpec{node("a", 8, "s")}}, ErrBadPath, "a", "path has 1 entries, levels above the node are 2"},
		{"long path", Spec{Levels: levels, Nodes: []NodeSpec{node("a", 8, "s", "l", "x")}}, ErrBadPath, "a", ""},
		{"empty domain", Spec{Levels: levels, Nodes: []NodeSpec{node("a", 8, "s", "")}}, ErrBadPath, "a", "empty domain"},
		{"two parents", Spec{Levels: levels, Nodes: []NodeSpec{node("a", 8, "s0", "l"), node("b", 8, "s1", "l")}}, ErrTwoParents, "b", `"l" is under "s0" and "s1"`},
		{"zero gpus", Spec{Levels: levels, Nodes: []NodeSpec{node("a", 0, "s", "l")}}, ErrBadGPUs, "a", "gpus=0"},
		{"negative gpus", Spec{Levels: levels, Nodes: []NodeSpec{node("a", -8, "s", "l")}}, ErrBadGPUs, "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(tt.spec)
			require.Error(t, err)
			assert.Nil(t, f)
			assert.ErrorIs(t, err, tt.err)
			var se *SpecError
			require.True(t, errors.As(err, &se))
			assert.Equal(t, tt.node, se.Node)
			assert.Contains(t, err.Error(), tt.detail)
		})
	}
}

func TestUniformAndReference(t *testing.T) {
	f, err := New(Reference())
	require.NoError(t, err)
	assert.Equal(t, 256, f.NumNodes())
	assert.Equal(t, 1+4+32+256, f.NumDomains())
	s := f.Stats(Root, AllGroups)
	assert.Equal(t, Stats{Nodes: 256, HealthyNodes: 256, FreeNodes: 256, GPUs: 2048, HealthyGPUs: 2048, FreeGPUs: 2048}, s)
	assert.Equal(t, Level(3), f.NVLinkLevel())
	n, ok := f.Node("node-1-2-3")
	require.True(t, ok)
	assert.Equal(t, "leaf-1-2", f.DomainName(f.DomainOf(n, 2)))
	assert.Equal(t, "spine-1", f.DomainName(f.DomainOf(n, 1)))

	for _, tt := range []struct{ gpus, spines, leaves int }{{2048, 4, 8}, {16384, 8, 32}, {131072, 32, 64}, {262144, 64, 64}} {
		sp := Scaled(tt.gpus)
		assert.Len(t, sp.Nodes, tt.gpus/8)
		f, err := New(sp)
		require.NoError(t, err)
		lo, hi := f.DomainsAt(1)
		assert.Equal(t, tt.spines, int(hi-lo), "spines at %d", tt.gpus)
		assert.Equal(t, tt.leaves, int(f.dom[lo].childHi-f.dom[lo].childLo), "leaves per spine at %d", tt.gpus)
	}
}

func TestNVLinkLevelAndRacks(t *testing.T) {
	// A GB200 NVL72 style fleet: racks of 18 nodes x 4 GPUs form one NVLink domain.
	f, err := New(func() Spec {
		s := Uniform(UniformSpec{Levels: []string{"spine", "rack", "node"}, Fanout: []int{2, 2, 18}, GPUsPerNode: 4, Flavor: "GB200"})
		s.NVLink = "rack"
		return s
	}())
	require.NoError(t, err)
	assert.Equal(t, Level(2), f.NVLinkLevel())
	assert.Equal(t, 2*2*18*4, f.Stats(Root, AllGroups).GPUs)
	rack, ok := f.Domain(2, "rack-1-0")
	require.True(t, ok)
	assert.Equal(t, 72, f.Stats(rack, AllGroups).FreeGPUs)
}

func TestAllocateReleaseAndQueries(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	n := func(name string) NodeID { id, ok := f.Node(name); require.True(t, ok, name); return id }
	require.NoError(t, f.Allocate(n("node-0-0-0"), 8))
	require.NoError(t, f.Allocate(n("node-0-0-1"), 3))
	require.NoError(t, f.Allocate(n("node-1-1-1"), 1))

	leaf00, _ := f.Domain(2, "leaf-0-0")
	spine0, _ := f.Domain(1, "spine-0")
	assert.Equal(t, 5, f.FreeGPUs(leaf00, AllGroups))
	assert.Equal(t, 0, f.FreeNodes(leaf00, AllGroups))
	assert.Equal(t, 2, f.FreeNodes(spine0, AllGroups))
	assert.Equal(t, 5, f.FreeNodes(Root, AllGroups))
	assert.Equal(t, 7, f.NodesWithAtLeast(Root, AllGroups, 5))
	assert.Equal(t, 6, f.NodesWithAtLeast(Root, AllGroups, 6))
	assert.Equal(t, 5*8+5+7, f.FreeGPUs(Root, AllGroups))
	assert.Equal(t, 5*4+2+3, f.PodsThatFit(Root, AllGroups, 2))

	gpus, frac := f.Stranded()
	assert.Equal(t, 12, gpus)
	assert.InDelta(t, 12.0/64, frac, 1e-9)

	// Largest free block per level.
	nodes, d := f.LargestFreeBlock(2, 0)
	assert.Equal(t, 2, nodes)
	assert.Equal(t, "leaf-0-1", f.DomainName(d))
	nodes, d = f.LargestFreeBlock(1, 0)
	assert.Equal(t, 3, nodes)
	assert.Equal(t, "spine-1", f.DomainName(d))

	// Refusals leave everything unchanged.
	before := f.Clone()
	var ne *NodeError
	err = f.Allocate(n("node-0-0-1"), 6)
	assert.ErrorIs(t, err, ErrOverAlloc)
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, NodeError{Node: "node-0-0-1", Requested: 6, Available: 5, Err: ErrOverAlloc}, *ne)
	assert.ErrorIs(t, f.Release(n("node-1-1-1"), 2), ErrOverRelease)
	assert.ErrorIs(t, f.Allocate(NodeID(99), 1), ErrUnknownNode)
	assert.ErrorIs(t, f.Allocate(NodeID(-1), 1), ErrUnknownNode)
	assert.ErrorIs(t, f.Allocate(n("node-0-1-0"), 0), ErrBadAmount)
	assert.ErrorIs(t, f.Release(n("node-0-1-0"), -1), ErrBadAmount)
	assert.ErrorIs(t, f.SetHealth(NodeID(99), Down), ErrUnknownNode)
	assertSameState(t, before, f)
	require.NoError(t, f.Release(n("node-0-0-1"), 3))
	assert.Equal(t, 8, f.FreeGPUs(leaf00, AllGroups))
}

func TestHealth(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	a, _ := f.Node("node-0-0-0")
	b, _ := f.Node("node-0-0-1")
	require.NoError(t, f.Allocate(a, 2))
	require.NoError(t, f.SetHealth(a, Cordoned))
	require.NoError(t, f.SetHealth(b, Down))
	leaf, _ := f.Domain(2, "leaf-0-0")
	s := f.Stats(leaf, AllGroups)
	assert.Equal(t, Stats{Nodes: 2, GPUs: 16, Allocated: 2}, s, "cordoned and down nodes offer nothing")
	assert.ErrorIs(t, f.Allocate(b, 1), ErrNodeDown)
	require.NoError(t, f.Allocate(a, 1), "a cordoned node still records adopted work")
	require.NoError(t, f.SetHealth(a, Healthy))
	assert.Equal(t, 5, f.FreeGPUs(leaf, AllGroups))
	assert.Equal(t, 5, f.Stats(leaf, AllGroups).Stranded)
	assert.Contains(t, f.String(), "  leaf-0-0  5x\n")
}

func TestSpan(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	n := func(names ...string) []NodeID {
		var out []NodeID
		for _, s := range names {
			id, ok := f.Node(s)
			require.True(t, ok)
			out = append(out, id)
		}
		return out
	}
	tests := []struct {
		nodes []NodeID
		want  string
	}{
		{n("node-0-0-0"), "node"},
		{n("node-0-0-0", "node-0-0-0"), "node"},
		{n("node-0-0-0", "node-0-0-1"), "leaf"},
		{n("node-0-0-0", "node-0-1-1"), "spine"},
		{n("node-0-0-0", "node-1-0-0"), "fleet"},
		{nil, "node"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, f.LevelName(f.Span(tt.nodes)), "%v", tt.nodes)
	}
}

func TestGroupsPartitionAggregates(t *testing.T) {
	s := small()
	for i := range s.Nodes {
		if i%2 == 1 {
			s.Nodes[i].Pool = "inference"
		}
	}
	s.Nodes[0].Flavor = "H200"
	f, err := New(s)
	require.NoError(t, err)
	assert.Equal(t, 3, f.NumGroups())
	inf, ok := f.Group("H100", "inference")
	require.True(t, ok)
	assert.Equal(t, 4, f.FreeNodes(Root, inf))
	assert.Equal(t, 8, f.FreeNodes(Root, AllGroups))
	var got []string
	f.AscendNodesByFree(inf, 1, func(n NodeID, free int) bool {
		got = append(got, f.NodeName(n))
		return true
	})
	assert.Equal(t, []string{"node-0-0-1", "node-0-1-1", "node-1-0-1", "node-1-1-1"}, got)
	checkAggregates(t, f)
}

func TestAscendOrders(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	alloc := map[string]int{"node-0-0-0": 8, "node-0-0-1": 5, "node-0-1-0": 7, "node-1-0-0": 2}
	for _, name := range slices.Sorted(mapsKeys(alloc)) {
		id, _ := f.Node(name)
		require.NoError(t, f.Allocate(id, alloc[name]))
	}
	var nodes []string
	f.AscendNodesByFree(0, 1, func(n NodeID, free int) bool {
		nodes = append(nodes, fmt.Sprintf("%s=%d", f.NodeName(n), free))
		return len(nodes) < 4
	})
	assert.Equal(t, []string{"node-0-1-0=1", "node-0-0-1=3", "node-1-0-0=6", "node-0-1-1=8"}, nodes)
	var leaves []string
	f.AscendDomainsByFreeNodes(2, 0, 1, func(d DomainID, free int) bool {
		leaves = append(leaves, fmt.Sprintf("%s=%d", f.DomainName(d), free))
		return true
	})
	assert.Equal(t, []string{"leaf-0-1=1", "leaf-1-0=1", "leaf-1-1=2"}, leaves)
	var byGPUs []string
	f.AscendDomainsByFreeGPUs(1, 0, 0, func(d DomainID, free int) bool {
		byGPUs = append(byGPUs, fmt.Sprintf("%s=%d", f.DomainName(d), free))
		return true
	})
	assert.Equal(t, []string{"spine-0=12", "spine-1=30"}, byGPUs)
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestCloneIsIndependent(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	c := f.Clone()
	require.NoError(t, c.Allocate(0, 8))
	require.NoError(t, c.SetHealth(1, Down))
	assert.Equal(t, 64, f.FreeGPUs(Root, AllGroups))
	assert.Equal(t, 48, c.FreeGPUs(Root, AllGroups))
	checkAggregates(t, f)
	checkAggregates(t, c)
	require.NoError(t, f.Allocate(2, 4))
	checkAggregates(t, f)
	checkAggregates(t, c)
}

func TestRender(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	require.NoError(t, f.Allocate(0, 8))
	require.NoError(t, f.Allocate(3, 5))
	require.NoError(t, f.SetHealth(5, Cordoned))
	require.NoError(t, f.SetHealth(6, Down))
	want := "spine-0\n" +
		"  leaf-0-0  08\n" +
		"  leaf-0-1  83\n" +
		"spine-1\n" +
		"  leaf-1-0  8c\n" +
		"  leaf-1-1  x8\n" +
		"free 35/48 GPUs, 4 whole nodes free, stranded 3 (6.2%)\n"
	assert.Equal(t, want, f.String())

	flat, err := New(Spec{Levels: []string{"node"}, Nodes: []NodeSpec{{Name: "a", GPUs: 16}, {Name: "b", GPUs: 40}}})
	require.NoError(t, err)
	assert.Equal(t, "fleet  g+\nfree 56/56 GPUs, 2 whole nodes free, stranded 0 (0.0%)\n", flat.String())
}

func assertSameState(t assert.TestingT, want, got *Fleet) {
	assert.Equal(t, want.nalloc, got.nalloc)
	assert.Equal(t, want.nhealth, got.nhealth)
	assert.Equal(t, want.agg, got.agg)
	assert.Equal(t, want.hist, got.hist)
	assert.Equal(t, want.gused, got.gused)
	assert.Equal(t, want.gmig, got.gmig)
	assert.Equal(t, want.gwhole, got.gwhole)
	assert.Equal(t, want.ralloc, got.ralloc)
	assert.Equal(t, want.rfree, got.rfree)
}

// An error about the spec as a whole names no node: its index is -1 and
// its text has no node part; one about a node names it and its index.
func TestSpecErrorsNameANodeOnlyForANode(t *testing.T) {
	levels := []string{"leaf", "node"}
	for _, tc := range []struct {
		name  string
		spec  Spec
		index int
		text  string
	}{
		{"no levels", Spec{Nodes: []NodeSpec{{Name: "a", GPUs: 8}}}, -1, "topology: invalid spec: no levels"},
		{"empty fleet", Spec{Levels: levels}, -1, "topology: empty fleet: Spec.Nodes is empty: declare at least one node " +
			"(Uniform builds none unless Fanout has one positive entry per level, the node level included)"},
		{"fanout without the node level", Uniform(UniformSpec{Levels: []string{"spine", "leaf", "node"}, Fanout: []int{4, 8},
			GPUsPerNode: 8, Flavor: "H100"}), -1, "topology: empty fleet: Spec.Nodes is empty: declare at least one node " +
			"(Uniform builds none unless Fanout has one positive entry per level, the node level included)"},
		{"a level named twice", Spec{Levels: []string{"leaf", "leaf", "node"}, Nodes: []NodeSpec{{Name: "a", GPUs: 8, Path: []string{"s", "l"}}}}, -1,
			`topology: invalid spec: level "leaf": level names must be unique and non-empty`},
		{"unknown nvlink level", Spec{Levels: levels, NVLink: "rack", Nodes: []NodeSpec{{Name: "a", GPUs: 8, Path: []string{"l"}}, {Name: "b", GPUs: 8, Path: []string{"l"}}}}, -1,
			`topology: unknown level: level "rack": nvlink level is not one of the levels`},
		{"the first node unnamed", Spec{Levels: levels, Nodes: []NodeSpec{{GPUs: 8, Path: []string{"l"}}}}, 0,
			`topology: invalid spec: node "" (nodes[0]): empty name`},
		{"bad node", Spec{Levels: levels, Nodes: []NodeSpec{{Name: "a", GPUs: 8, Path: []string{"l"}}, {Name: "b", Path: []string{"l"}}}}, 1,
			`topology: GPU count must be positive: node "b" (nodes[1]): gpus=0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.spec)
			var se *SpecError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.index, se.Index)
			assert.Equal(t, tc.text, err.Error())
		})
	}
}

// A node's resource may be exactly MaxResource and not one unit more.
func TestResourceCapacityBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    int64
		err  error
	}{
		{"at the bound", MaxResource, nil},
		{"one above", MaxResource + 1, ErrBadResource},
		{"zero", 0, nil},
		{"negative", -1, ErrBadResource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Spec{Levels: []string{"leaf", "node"}, Nodes: []NodeSpec{
				{Name: "a", Path: []string{"l"}, GPUs: 8, Resources: map[string]int64{"cpu": tc.v}}}})
			if tc.err == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.err)
			}
		})
	}
}

// Every domain but the fleet has a parent one level up; the fleet has
// none.
func TestParentOfEveryDomain(t *testing.T) {
	f, err := New(small())
	require.NoError(t, err)
	_, ok := f.Parent(Root)
	assert.False(t, ok, "the fleet")
	for d := DomainID(1); int(d) < f.NumDomains(); d++ {
		p, ok := f.Parent(d)
		require.True(t, ok, f.DomainName(d))
		assert.Equal(t, f.DomainLevel(d)-1, f.DomainLevel(p), f.DomainName(d))
		lo, hi := f.Children(p)
		assert.True(t, lo <= d && d < hi, "%s is among its parent's children", f.DomainName(d))
	}
}
