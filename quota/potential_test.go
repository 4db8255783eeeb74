package quota_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// PotentialOf is what a queue could take of one resource with the tree
// idle: its own quota plus what the cohort lends, capped by its
// borrowing limit; GPUs in thousandths.
func TestPotentialOf(t *testing.T) {
	tr, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
		{Name: "all", Kind: quota.Cohort},
		{Name: "a", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 4,
			Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 1000, BorrowingLimit: quota.LimitOf(500)}}}}},
		{Name: "b", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 2,
			Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 3000}}}}},
	}})
	require.NoError(t, err)
	a, _ := tr.Node("a")
	b, _ := tr.Node("b")
	cpu, ok := tr.Resource("cpu")
	require.True(t, ok)
	assert.Equal(t, int64(6000), tr.PotentialOf(a, 0, quota.GPU))
	assert.Equal(t, tr.Potential(a, 0)*1000, tr.PotentialOf(a, 0, quota.GPU))
	assert.Equal(t, int64(1500), tr.PotentialOf(a, 0, cpu), "capped by the borrowing limit")
	assert.Equal(t, int64(4000), tr.PotentialOf(b, 0, cpu))
}
