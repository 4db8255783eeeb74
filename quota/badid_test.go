package quota_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// Fits answers an out-of-range queue or flavor ID with a BadRequest
// verdict, never a panic; so do the share queries for a flavor.
func TestFitsOutOfRangeIDsAreBadRequests(t *testing.T) {
	tr, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
		{Name: "c", Kind: quota.Cohort},
		{Name: "q", Parent: "c", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8}}}}})
	require.NoError(t, err)
	q, _ := tr.Node("q")
	for _, c := range []struct {
		name string
		q    quota.NodeID
		f    quota.FlavorID
	}{{"negative queue", -1, 0}, {"queue past the end", 2, 0}, {"cohort", 0, 0},
		{"negative flavor", q, -1}, {"flavor past the end", q, 1}} {
		v := tr.Fits(c.q, c.f, 1)
		assert.Equal(t, quota.NoFit, v.Mode, c.name)
		assert.Equal(t, quota.ReasonBadRequest, v.Reason.Kind, c.name)
		assert.NotEmpty(t, v.String(), c.name)
	}
	assert.ErrorIs(t, tr.AddUsage(7, 0, 1), quota.ErrUnknownNode)
	assert.ErrorIs(t, tr.AddUsage(q, 4, 1), quota.ErrUnknownFlavor)
	assert.ErrorIs(t, tr.RemoveUsage(-2, 0, 1), quota.ErrUnknownNode)
}
