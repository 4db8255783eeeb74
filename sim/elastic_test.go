package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
)

func TestElasticBatchShape(t *testing.T) {
	for _, tt := range []struct {
		gpus, count, per, min int
	}{
		{1, 1, 1, 1},
		{4, 4, 1, 1},
		{8, 8, 1, 1},
		{16, 2, 8, 1},
		{64, 8, 8, 1},
	} {
		w := elasticBatch(batchWorkload("b", tt.gpus, 0, 0))
		ps := w.PodSets[0]
		assert.Equal(t, tt.gpus, w.GPUs())
		assert.Equal(t, []int{tt.count, tt.per, tt.min}, []int{ps.Count, ps.GPUsPerPod, ps.Min()}, "%d GPUs", tt.gpus)
		require.NoError(t, w.Validate())
	}
}

// A day of a 512-GPU fleet with elastic batch: the host's books agree
// with the scheduler's after every cycle (Check) while batch gives up
// pods to preemptors. (It does not grow back here: a batch backlog
// always waits, and waiting work of its priority comes first.)
func TestElasticBatchDay(t *testing.T) {
	t.Parallel()
	r := run(t, short(Borrow, 3))
	require.Empty(t, r.Violations)
	assert.Positive(t, r.Shrinks, "no batch pod was ever given up")
	assert.Positive(t, r.Completed[gang.Batch])
}
