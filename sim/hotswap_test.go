package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node lost under a training gang of two nodes: the gang declares it
// survives, stops at its last checkpoint, gets a replacement node in the
// next cycle and runs on after a restart, without a requeue; with
// NoHotSwap it fails whole and is requeued.
func TestHotSwapKeepsTheGangRunning(t *testing.T) {
	for _, off := range []bool{false, true} {
		sm := newTestSim(t)
		sm.cfg.NoHotSwap = off
		sm.init()
		i, j := startJob(t, sm, trainingWorkload("t-1", 16, 9*time.Hour, 20*time.Minute), 9*time.Hour)
		assert.Equal(t, !off, j.w.Drain.SurvivesNodeLoss)
		start := sm.now
		for ck := 20 * time.Minute; ck <= 50*time.Minute; ck += 20 * time.Minute {
			sm.now = start + int64(ck)
			sm.checkpoint(event{kind: evCheckpoint, job: i, gen: j.gen})
		}
		sm.now = start + int64(50*time.Minute)
		sm.failNode(j.pods[0].node)
		require.NoError(t, sm.err)
		r := &sm.res
		if off {
			assert.Equal(t, 1, r.FailedRuns)
			assert.Zero(t, r.PodsLost)
			continue
		}
		assert.Equal(t, 1, r.PodsLost)
		assert.Zero(t, r.FailedRuns, "the gang is not requeued")
		assert.InDelta(t, (10*time.Minute).Hours()*16, r.HotSwapLostGPUh, 1e-9, "back to its last checkpoint")
		assert.Equal(t, jsRunning, j.state)
		assert.Equal(t, 8, j.lostGPUs)
		assert.Equal(t, (40 * time.Minute).Nanoseconds(), sm.progress(j), "no progress while a rank is missing")

		sm.now += int64(10 * time.Second)
		sm.schedule(true)
		require.NoError(t, sm.err)
		require.Empty(t, r.Violations)
		assert.Equal(t, 1, r.HotSwaps)
		assert.Equal(t, []time.Duration{10 * time.Second}, r.HotSwapWaits)
		assert.InDelta(t, (3*time.Minute).Hours()*16, r.HotSwapRestartGPUh, 1e-9)
		assert.Zero(t, j.lostGPUs)
		assert.Len(t, j.pods, 2)
		sm.now += int64(time.Hour)
		assert.Equal(t, (40*time.Minute + 57*time.Minute).Nanoseconds(), sm.progress(j), "it runs on after its 3-minute restart")
	}
}
