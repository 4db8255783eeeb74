package quota_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// Kueue counts a borrowing height as the height of the subtree that
// lends (down to its furthest leaf), not as the queue's distance to it:
// q, one edge below root, borrows from a subtree of height 3.
func TestBorrowingHeightCountsToTheFurthestLeaf(t *testing.T) {
	tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
		{Name: "root", Kind: quota.Cohort, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8}}},
		{Name: "q", Parent: "root", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100"}}},
		{Name: "A", Parent: "root", Kind: quota.Cohort},
		{Name: "AA", Parent: "A", Kind: quota.Cohort, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 4}}},
		{Name: "x", Parent: "AA", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100"}}},
	}})
	require.NoError(t, err)
	q, _ := tree.Node("q")
	x, _ := tree.Node("x")
	f, _ := tree.Flavor("H100")

	v := tree.Fits(q, f, 2)
	require.Equal(t, quota.FitsBorrowing, v.Mode)
	require.Equal(t, "root", tree.Name(v.From))
	require.Equal(t, 3, v.Height, "root's subtree reaches x three edges down")

	v = tree.Fits(x, f, 2)
	require.Equal(t, "AA", tree.Name(v.From))
	require.Equal(t, 1, v.Height)

	v = tree.Fits(x, f, 6)
	require.Equal(t, "root", tree.Name(v.From))
	require.Equal(t, 3, v.Height)
}
