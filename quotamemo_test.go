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
	require.Positive(t, kept, "no request was answered from a kept refusal")
}
