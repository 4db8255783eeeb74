package topology_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/topology"
)

func sharedFleet(t *testing.T) *topology.Fleet {
	f, err := topology.New(topology.Spec{Levels: []string{"rack", "node"}, Nodes: []topology.NodeSpec{
		{Name: "h", Path: []string{"r"}, GPUs: 8, Flavor: "H100", MIG: true, Resources: map[string]int64{"cpu": 64000}},
		{Name: "l", Path: []string{"r"}, GPUs: 4, Flavor: "L4", Resources: map[string]int64{"cpu": 32000, "memory": 1 << 38}},
		{Name: "c", Path: []string{"r"}, Resources: map[string]int64{"cpu": 96000}},
	}})
	require.NoError(t, err)
	return f
}

func TestClaimsRefuseBadInputTyped(t *testing.T) {
	f := sharedFleet(t)
	h, _ := f.Node("h")
	l, _ := f.Node("l")
	cpu, _ := f.Resource("cpu")
	before := f.String()
	for _, tt := range []struct {
		name string
		c    topology.Claim
		want error
	}{
		{"share above a GPU", topology.Claim{Node: l, GPU: 0, Share: 1001}, topology.ErrBadShare},
		{"share on a MIG GPU", topology.Claim{Node: h, GPU: 0, Share: 500}, topology.ErrBadShare},
		{"profile the model lacks", topology.Claim{Node: h, GPU: 0, MIG: "1g.5gb"}, topology.ErrUnknownProfile},
		{"MIG on a model without it", topology.Claim{Node: l, GPU: 0, MIG: "1g.10gb"}, topology.ErrUnknownProfile},
		{"forbidden start", topology.Claim{Node: h, GPU: 0, MIG: "3g.40gb", Slice: 2}, topology.ErrUnknownProfile},
		{"GPU beyond the node", topology.Claim{Node: l, Whole: 1 << 4}, topology.ErrBadGPUIndex},
		{"unknown resource", topology.Claim{Node: l, Resources: []topology.ResourceAmount{{Resource: 9, Amount: 1}}}, topology.ErrUnknownResource},
		{"more cpu than the node", topology.Claim{Node: l, Resources: []topology.ResourceAmount{{Resource: cpu, Amount: 32001}}}, topology.ErrOverAlloc},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := f.AllocateClaim(tt.c)
			require.ErrorIs(t, err, tt.want)
			var ne *topology.NodeError
			require.True(t, errors.As(err, &ne))
			require.Equal(t, before, f.String())
		})
	}
}

func TestClaimsShareAndSlice(t *testing.T) {
	f := sharedFleet(t)
	h, _ := f.Node("h")
	l, _ := f.Node("l")
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: l, GPU: 1, Share: 600}))
	require.ErrorIs(t, f.AllocateClaim(topology.Claim{Node: l, GPU: 1, Share: 500}), topology.ErrOverAlloc)
	require.ErrorIs(t, f.AllocateClaim(topology.Claim{Node: l, Whole: 1 << 1}), topology.ErrOverAlloc, "a whole pod never lands on a shared GPU")
	require.Equal(t, 3, f.Free(l), "a shared GPU is not free for whole pods")
	require.Equal(t, 3*2+0, f.SharesThatFit(l, 500), "three free GPUs take two halves each; 400 left on GPU 1 takes none")
	var seen []int
	f.AscendSharedGPUs(f.NodeGroup(l), 300, func(n topology.NodeID, gpu, left int) bool {
		seen = append(seen, gpu, left)
		return true
	})
	require.Equal(t, []int{1, 400}, seen)

	p, ok := f.NodeMIGProfile(h, "3g.40gb")
	require.True(t, ok)
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: h, GPU: 2, MIG: "3g.40gb", Slice: 4}))
	used, slices := f.GPUUsed(h, 2)
	require.Equal(t, 428, used, "a 3g at slice 4 takes compute slices 4-6: 143+143+142")
	require.Equal(t, p.ShareAt(4), used)
	require.Equal(t, uint8(0xF0), slices)
	require.Equal(t, 1, topology.MIGFits(slices, p), "slices 0-3 still take a 3g")
	require.ErrorIs(t, f.AllocateClaim(topology.Claim{Node: h, GPU: 2, MIG: "4g.40gb", Slice: 0}), nil)
	require.ErrorIs(t, f.AllocateClaim(topology.Claim{Node: h, GPU: 2, MIG: "1g.10gb", Slice: 0}), topology.ErrOverAlloc)
	used, _ = f.GPUUsed(h, 2)
	require.Equal(t, topology.MilliGPU, used, "a GPU carved into 4g and 3g is charged one GPU")
	require.Equal(t, int64(600+1000), f.MilliAllocated(topology.Root, topology.AllGroups))
	require.Equal(t, int64(600), f.MilliAllocated(f.NodeDomain(l), topology.AllGroups), "a node's own domain counts its shares only")
	require.Equal(t, int64(1000), f.MilliAllocated(f.NodeDomain(h), f.NodeGroup(h)))
}

// A whole GPU of a MIG node (the fleet's first MIG model) has every
// slice taken: no slice claim lands on it, and releasing it frees them.
func TestWholeGPUOnMIGNodeTakesEverySlice(t *testing.T) {
	f := sharedFleet(t)
	h, _ := f.Node("h")
	require.NoError(t, f.Allocate(h, 1))
	_, slices := f.GPUUsed(h, 0)
	require.Equal(t, uint8(0xFF), slices)
	require.ErrorIs(t, f.AllocateClaim(topology.Claim{Node: h, GPU: 0, MIG: "4g.40gb", Slice: 0}), topology.ErrOverAlloc)
	require.NoError(t, f.Release(h, 1))
	_, slices = f.GPUUsed(h, 0)
	require.Zero(t, slices)
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: h, GPU: 0, MIG: "4g.40gb", Slice: 0}))
}

// A node that leaves service takes its partly shared GPUs out of the
// index, and brings them back when it is healthy again.
func TestHealthChangeReindexesSharedGPUs(t *testing.T) {
	f := sharedFleet(t)
	l, _ := f.Node("l")
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: l, GPU: 1, Share: 600}))
	shared := func() []int {
		var seen []int
		f.AscendSharedGPUs(f.NodeGroup(l), 300, func(_ topology.NodeID, gpu, left int) bool {
			seen = append(seen, gpu, left)
			return true
		})
		return seen
	}
	require.Equal(t, []int{1, 400}, shared())
	require.NoError(t, f.SetHealth(l, topology.Cordoned))
	require.Empty(t, shared())
	require.NoError(t, f.SetHealth(l, topology.Healthy))
	require.Equal(t, []int{1, 400}, shared())
}

// TestChangesCountsNodeChanges: every change to what a node holds or to
// its health moves Changes, a refused one or a read does not, and a
// clone starts where its source stands.
func TestChangesCountsNodeChanges(t *testing.T) {
	f := sharedFleet(t)
	h, _ := f.Node("h")
	l, _ := f.Node("l")
	moved := func(step string, do func() error, wantErr bool) {
		t.Helper()
		before := f.Changes()
		err := do()
		if wantErr {
			require.Error(t, err, step)
			require.Equal(t, before, f.Changes(), "%s: refused, yet counted", step)
			return
		}
		require.NoError(t, err, step)
		require.Greater(t, f.Changes(), before, "%s: not counted", step)
	}
	moved("allocate", func() error { return f.Allocate(l, 2) }, false)
	moved("allocate beyond capacity", func() error { return f.Allocate(l, 8) }, true)
	moved("release", func() error { return f.Release(l, 1) }, false)
	moved("claim a share", func() error { return f.AllocateClaim(topology.Claim{Node: l, GPU: 3, Share: 500}) }, false)
	moved("release the share", func() error { return f.ReleaseClaim(topology.Claim{Node: l, GPU: 3, Share: 500}) }, false)
	moved("cordon", func() error { return f.SetHealth(h, topology.Cordoned) }, false)
	before := f.Changes()
	_ = f.Free(l)
	_ = f.Stats(0, 0)
	_ = f.String()
	require.Equal(t, before, f.Changes(), "reads")
	require.Equal(t, f.Changes(), f.Clone().Changes())
}

// Each node keeps its own capacity of each resource: with two resources
// over three nodes, every node reports the amounts of its spec, takes
// exactly its free amount and not one unit more, and a refusal says what
// is free.
func TestResourceCapacityPerNode(t *testing.T) {
	f := sharedFleet(t)
	cpu, _ := f.Resource("cpu")
	mem, _ := f.Resource("memory")
	for _, tc := range []struct {
		node string
		r    topology.ResourceID
		cap  int64
	}{
		{"h", cpu, 64000}, {"h", mem, 0},
		{"l", cpu, 32000}, {"l", mem, 1 << 38},
		{"c", cpu, 96000}, {"c", mem, 0},
	} {
		t.Run(tc.node+"/"+f.ResourceName(tc.r), func(t *testing.T) {
			n, _ := f.Node(tc.node)
			require.Equal(t, tc.cap, f.ResourceCapacity(n, tc.r))
			if tc.cap == 0 {
				return
			}
			half := topology.Claim{Node: n, Resources: []topology.ResourceAmount{{Resource: tc.r, Amount: tc.cap / 2}}}
			require.NoError(t, f.AllocateClaim(half))
			assert.Equal(t, tc.cap-tc.cap/2, f.ResourceFree(n, tc.r))
			over := topology.Claim{Node: n, Resources: []topology.ResourceAmount{{Resource: tc.r, Amount: tc.cap - tc.cap/2 + 1}}}
			err := f.AllocateClaim(over)
			require.ErrorIs(t, err, topology.ErrOverAlloc)
			var ne *topology.NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, int(tc.cap-tc.cap/2), ne.Available)
			over.Resources[0].Amount--
			require.NoError(t, f.AllocateClaim(over), "exactly what is free")
			assert.Zero(t, f.ResourceFree(n, tc.r))
		})
	}
}

// A claim that names a GPU both whole and shared is refused, and a share
// that does not fit says how much of the GPU is left.
func TestShareClaimsRefusedWithTheirReason(t *testing.T) {
	f := sharedFleet(t)
	l, _ := f.Node("l")
	for _, tc := range []struct {
		name      string
		c         topology.Claim
		err       error
		available int
	}{
		{"a GPU whole and shared", topology.Claim{Node: l, Whole: 1 << 2, GPU: 2, Share: 500}, topology.ErrBadShare, 0},
		{"the last GPU whole and shared", topology.Claim{Node: l, Whole: 1 << 3, GPU: 3, Share: 500}, topology.ErrBadShare, 0},
		{"a share above what is left", topology.Claim{Node: l, GPU: 1, Share: 500}, topology.ErrOverAlloc, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: l, GPU: 1, Share: 600}))
			defer func() { require.NoError(t, f.ReleaseClaim(topology.Claim{Node: l, GPU: 1, Share: 600})) }()
			before := f.String()
			err := f.AllocateClaim(tc.c)
			require.ErrorIs(t, err, tc.err)
			var ne *topology.NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, tc.available, ne.Available)
			assert.Equal(t, before, f.String())
		})
	}
}

// A claim takes a thousand thousandths per whole GPU, plus its share or
// its MIG slice's compute charge.
func TestClaimMilliGPUs(t *testing.T) {
	f := sharedFleet(t)
	h, _ := f.Node("h")
	l, _ := f.Node("l")
	for _, tc := range []struct {
		name string
		c    topology.Claim
		want int
	}{
		{"nothing", topology.Claim{Node: l}, 0},
		{"one whole GPU", topology.Claim{Node: l, Whole: 1 << 2}, 1000},
		{"three whole GPUs", topology.Claim{Node: l, Whole: 0b1011}, 3000},
		{"a share", topology.Claim{Node: l, GPU: 1, Share: 250}, 250},
		{"a whole GPU and a share", topology.Claim{Node: l, Whole: 1, GPU: 1, Share: 300}, 1300},
		{"a 3g slice at slice 4", topology.Claim{Node: h, GPU: 2, MIG: "3g.40gb", Slice: 4}, 428},
		{"two whole GPUs and a 1g slice", topology.Claim{Node: h, Whole: 0b11, GPU: 2, MIG: "1g.10gb"}, 2143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.c.MilliGPUs(f))
		})
	}
}

// Each MIG node takes the profiles of its own model, whatever models
// the nodes before it have: an A100's 1g slice has 5 GB, an H100's 10.
func TestMIGNodesOfTwoModelsKeepTheirProfiles(t *testing.T) {
	f, err := topology.New(topology.Spec{Levels: []string{"rack", "node"}, Nodes: []topology.NodeSpec{
		{Name: "h0", Path: []string{"r"}, GPUs: 8, Flavor: "H100", MIG: true},
		{Name: "a0", Path: []string{"r"}, GPUs: 8, Flavor: "A100", MIG: true},
		{Name: "h1", Path: []string{"r"}, GPUs: 8, Flavor: "H100", MIG: true},
	}})
	require.NoError(t, err)
	for _, tc := range []struct {
		node, profile string
		ok            bool
	}{
		{"h0", "1g.10gb", true}, {"h0", "1g.5gb", false},
		{"a0", "1g.5gb", true}, {"a0", "1g.20gb", false},
		{"h1", "1g.10gb", true}, {"h1", "1g.5gb", false},
	} {
		n, _ := f.Node(tc.node)
		_, ok := f.NodeMIGProfile(n, tc.profile)
		assert.Equal(t, tc.ok, ok, "%s %s", tc.node, tc.profile)
	}
}

// Pods of no GPU share, or of a negative one, fit nowhere: the count is 0,
// on a node with free and partly shared GPUs alike.
func TestSharesThatFitNeedsAPositiveShare(t *testing.T) {
	f := sharedFleet(t)
	l, _ := f.Node("l")
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: l, GPU: 1, Share: 600}))
	for _, tc := range []struct {
		share, want int
	}{{-1, 0}, {0, 0}, {1, 3*1000 + 400}, {400, 3*2 + 1}, {1000, 3}, {1001, 0}} {
		assert.Equal(t, tc.want, f.SharesThatFit(l, tc.share), "share %d", tc.share)
	}
}
