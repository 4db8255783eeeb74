package quota_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// editTree is a cohort of two queues over two flavors, with cpu as a
// resource, and 12 GPUs of usage on "a".
func editTree(t *testing.T) *quota.Tree {
	t.Helper()
	w := 2.0
	tree, err := quota.New(quota.Spec{Flavors: []string{"H100", "A100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
		{Name: "c", Kind: quota.Cohort, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8}}},
		{Name: "a", Parent: "c", Kind: quota.Queue, Weight: &w,
			Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 16, LendingLimit: quota.LimitOf(8),
				Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000}}}}},
		{Name: "b", Parent: "c", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8}}},
	}})
	require.NoError(t, err)
	a, _ := tree.Node("a")
	require.NoError(t, tree.AddUsage(a, 0, 12))
	return tree
}

// nodeSpec returns the named node as the tree's Spec lists it.
func nodeSpec(t *testing.T, tree *quota.Tree, name string) quota.NodeSpec {
	t.Helper()
	for _, n := range tree.Spec().Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %q", name)
	return quota.NodeSpec{}
}

func TestSetNodeRefusesAndLeavesTheTreeUnchanged(t *testing.T) {
	neg, th := -1.0, int32(5)
	for _, tt := range []struct {
		name string
		node string
		edit func(n *quota.NodeSpec)
		err  error
		fld  string
	}{
		{"unknown node", "a", func(n *quota.NodeSpec) { n.Name = "zz" }, quota.ErrUnknownNode, "name"},
		{"new parent", "a", func(n *quota.NodeSpec) { n.Parent = "" }, quota.ErrShapeChange, "parent"},
		{"new kind", "b", func(n *quota.NodeSpec) { n.Kind = quota.Cohort; n.Preemption = quota.Rules{} }, quota.ErrShapeChange, "kind"},
		{"dropped flavor", "a", func(n *quota.NodeSpec) { n.Quotas = nil }, quota.ErrFlavorRemoved, "quotas"},
		{"dropped resource", "a", func(n *quota.NodeSpec) { n.Quotas[0].Resources = nil }, quota.ErrFlavorRemoved, "quotas.resources"},
		{"negative weight", "a", func(n *quota.NodeSpec) { n.Weight = &neg }, quota.ErrInvalidWeight, "weight"},
		{"rules on a cohort", "c", func(n *quota.NodeSpec) { n.Preemption.WithinQueue = quota.WithinQueueLowerPriority }, quota.ErrRulesOnCohort, "preemption"},
		{"borrow without reclaim", "b", func(n *quota.NodeSpec) {
			n.Preemption.BorrowWithinCohort = quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}
		}, quota.ErrInvalidSpec, "preemption.borrowWithinCohort.policy"},
		{"lending above nominal", "a", func(n *quota.NodeSpec) { n.Quotas[0].LendingLimit = quota.LimitOf(20) }, quota.ErrLendingAboveQuota, "lendingLimit"},
		{"limit on a root", "c", func(n *quota.NodeSpec) { n.Quotas[0].BorrowingLimit = quota.LimitOf(1) }, quota.ErrLimitOnRoot, "borrowingLimit/lendingLimit"},
		{"unknown flavor", "b", func(n *quota.NodeSpec) { n.Quotas = append(n.Quotas, quota.FlavorQuota{Flavor: "B200"}) }, quota.ErrUnknownFlavor, "flavor"},
		{"amount too large, second flavor", "b", func(n *quota.NodeSpec) {
			n.Quotas[0].Nominal = 1
			n.Quotas = append(n.Quotas, quota.FlavorQuota{Flavor: "A100", Nominal: quota.MaxAmount + 1})
		}, quota.ErrAmountTooLarge, "nominal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tree := editTree(t)
			before, share := tree.Spec(), tree.DominantShare(1)
			n := nodeSpec(t, tree, tt.node)
			tt.edit(&n)
			err := tree.SetNode(n)
			require.ErrorIs(t, err, tt.err)
			require.ErrorIs(t, err, quota.ErrInvalidSpec)
			var se *quota.SpecError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.fld, se.Field)
			assert.Equal(t, before, tree.Spec())
			assert.Equal(t, share, tree.DominantShare(1))
		})
	}
}

func TestSetNodeChangesQuotaWeightAndRulesTogether(t *testing.T) {
	tree := editTree(t)
	a, _ := tree.Node("a")
	clone := tree.Clone()
	n := nodeSpec(t, tree, "a")
	w, th := 0.5, int32(100)
	n.Weight = &w
	n.Quotas[0].Nominal, n.Quotas[0].LendingLimit = 4, quota.Limit{}
	n.Quotas = append([]quota.FlavorQuota{{Flavor: "A100", Nominal: 0}}, n.Quotas...)
	n.Preemption = quota.Rules{ReclaimWithinCohort: quota.ReclaimAny,
		BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}
	n.QueueingStrategy = quota.StrictFIFO
	require.NoError(t, tree.SetNode(n))
	th = 7 // the tree keeps its own copy

	assert.Equal(t, 0.5, tree.Weight(a))
	assert.Equal(t, quota.StrictFIFO, tree.Strategy(a))
	got, _ := tree.Rules(a).BorrowWithinCohort.Threshold()
	assert.Equal(t, int32(100), got)
	assert.Equal(t, int64(4), tree.Nominal(a, 0))
	assert.True(t, tree.Serves(a, 1))
	// Usage is kept: a is now above its quota and borrows the excess.
	assert.Equal(t, int64(12), tree.Usage(a, 0))
	assert.Equal(t, int64(8), tree.Borrowed(a, 0))
	// Spec lists the node as set, flavors in the edit's order.
	th = 100
	assert.Equal(t, n, nodeSpec(t, tree, "a"))
	// A clone taken before is independent.
	assert.Equal(t, 2.0, clone.Weight(a))
	assert.Equal(t, quota.BestEffortFIFO, clone.Strategy(a))
	assert.Equal(t, int64(16), clone.Nominal(a, 0))
	// CopyTo carries the settings.
	tree.CopyTo(clone)
	assert.Equal(t, 0.5, clone.Weight(a))
}

func TestSetNodeUnsetsTheWeight(t *testing.T) {
	tree := editTree(t)
	n := nodeSpec(t, tree, "a")
	n.Weight = nil
	require.NoError(t, tree.SetNode(n))
	a, _ := tree.Node("a")
	assert.Equal(t, 1.0, tree.Weight(a))
	assert.Nil(t, nodeSpec(t, tree, "a").Weight)
}

// TestChangesCountsTreeChanges: every change to usage, quotas or settings
// moves Changes, a refused one or a read does not, and a copy takes its
// source's count.
func TestChangesCountsTreeChanges(t *testing.T) {
	tree := editTree(t)
	a, _ := tree.Node("a")
	moved := func(step string, do func() error, wantErr bool) {
		t.Helper()
		before := tree.Changes()
		err := do()
		if wantErr {
			require.Error(t, err, step)
			require.Equal(t, before, tree.Changes(), "%s: refused, yet counted", step)
			return
		}
		require.NoError(t, err, step)
		require.Greater(t, tree.Changes(), before, "%s: not counted", step)
	}
	moved("add usage", func() error { return tree.AddUsage(a, 0, 2) }, false)
	moved("remove too much", func() error { return tree.RemoveUsage(a, 0, 1000) }, true)
	moved("remove usage", func() error { return tree.RemoveUsage(a, 0, 2) }, false)
	moved("add a request", func() error { return tree.AddRequest(a, 0, quota.Request{MilliGPUs: 500}) }, false)
	moved("remove the request", func() error { return tree.RemoveRequest(a, 0, quota.Request{MilliGPUs: 500}) }, false)
	moved("set a quota", func() error { return tree.SetQuota(a, quota.FlavorQuota{Flavor: "H100", Nominal: 20}) }, false)
	moved("set a bad quota", func() error { return tree.SetQuota(a, quota.FlavorQuota{Flavor: "H100", Nominal: -1}) }, true)
	spec := nodeSpec(t, tree, "b")
	w := 3.0
	spec.Weight = &w
	moved("set a node", func() error { return tree.SetNode(spec) }, false)
	before := tree.Changes()
	_ = tree.Fits(a, 0, 4)
	_ = tree.Spec()
	require.Equal(t, before, tree.Changes(), "reads")
	c := tree.Clone()
	require.Equal(t, tree.Changes(), c.Changes())
	require.NoError(t, c.AddUsage(a, 0, 1))
	tree.CopyTo(c)
	require.Equal(t, tree.Changes(), c.Changes())
}

// A what-if that takes usage off and puts it back inside Undoing leaves
// Changes where it was, and the tree as it was; the changes inside are
// seen while they last.
func TestUndoingKeepsChangesForAWhatIfUndone(t *testing.T) {
	tree := editTree(t)
	a, _ := tree.Node("a")
	base := tree.Usage(a, 0)
	require.NoError(t, tree.AddUsage(a, 0, 3))
	before, spec := tree.Changes(), tree.Clone()
	tree.Undoing(func() {
		require.NoError(t, tree.RemoveUsage(a, 0, 3))
		require.Greater(t, tree.Changes(), before, "inside")
		require.Equal(t, base, tree.Usage(a, 0), "the usage taken off is seen inside")
		require.NoError(t, tree.AddUsage(a, 0, 3))
	})
	require.Equal(t, before, tree.Changes())
	require.Equal(t, spec.Usage(a, 0), tree.Usage(a, 0))
}
