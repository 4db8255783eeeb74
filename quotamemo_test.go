package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/quota"
)

// A kept quota refusal answers for every request larger than what the
// queue may still take, exactly as the tree would, and for none once
// the tree has changed: random usage changes and requests on the
// reference tree, each answer compared with the tree's own verdict.
func TestQuotaRefusalAnswersLargerRequestsAsTheTree(t *testing.T) {
	kept := 0
	rapid.Check(t, func(t *rapid.T) {
		s, err := New(ReferenceConfig())
		require.NoError(t, err)
		var queues []quota.NodeID
		for n := range quota.NodeID(s.tree.NumNodes()) {
			if s.tree.IsQueue(n) && s.tree.Serves(n, 0) {
				queues = append(queues, n)
			}
		}
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			q := rapid.SampledFrom(queues).Draw(t, "queue")
			g := int64(rapid.IntRange(0, 1200).Draw(t, "gpus"))
			switch rapid.IntRange(0, 3).Draw(t, "step") {
			case 0:
				_ = s.tree.AddUsage(q, 0, g) // refused beyond the tree's bounds: nothing changes
			case 1:
				_ = s.tree.RemoveUsage(q, 0, min(g, s.tree.InUse(q, 0)))
			default:
				before := len(s.quotaRefusals.kept)
				at := s.quotaRefusals.at
				got := s.quotaFits(q, 0, g)
				if at == s.quotaRefusals.at && len(s.quotaRefusals.kept) == before && !got.Fits() {
					kept++ // answered from a kept refusal
				}
				require.Equal(t, s.tree.Fits(q, 0, g), got)
			}
		}
	})
	// How many random requests a kept refusal answers varies from run to
	// run (a handful); TestQuotaRefusalIsKeptUntilTheTreeChanges pins
	// that one does.
	t.Logf("%d requests answered from a kept refusal", kept)
}

// A refusal is kept for a larger request of the same queue and answered
// from memory, with the request's own size and shortfall, and dropped
// once the tree changes.
func TestQuotaRefusalIsKeptUntilTheTreeChanges(t *testing.T) {
	s, err := New(ReferenceConfig())
	require.NoError(t, err)
	var q quota.NodeID = -1
	for n := range quota.NodeID(s.tree.NumNodes()) {
		if s.tree.IsQueue(n) && s.tree.Serves(n, 0) {
			q = n
			break
		}
	}
	require.GreaterOrEqual(t, q, quota.NodeID(0), "a queue serving flavor 0")
	first := s.quotaFits(q, 0, 1<<20)
	require.False(t, first.Fits())
	require.Len(t, s.quotaRefusals.kept, 1)

	larger := s.quotaFits(q, 0, 1<<21)
	require.Len(t, s.quotaRefusals.kept, 1, "answered from the kept refusal")
	require.Equal(t, s.tree.Fits(q, 0, 1<<21), larger)
	require.Equal(t, int64(1<<21)-first.Available, larger.Reason.ShortBy)

	require.NoError(t, s.tree.AddUsage(q, 0, 1))
	require.Equal(t, s.tree.Fits(q, 0, 1<<21), s.quotaFits(q, 0, 1<<21))
	require.Len(t, s.quotaRefusals.kept, 1, "the old refusal dropped, the new one kept")
	require.Equal(t, first.Available-1, s.quotaRefusals.kept[0].Available)
}
