package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
)

// newTestSim is a small fleet's simulator with no events queued, for
// driving the host's bookkeeping by hand.
func newTestSim(t *testing.T) *sim {
	t.Helper()
	c, err := Config{GPUs: 64, FailuresPerGPUDay: -1, DrainFailShare: -1}.withDefaults()
	require.NoError(t, err)
	sched, err := fleet.New(c.Fleet)
	require.NoError(t, err)
	return &sim{cfg: c, s: sched, rng: rand.New(rand.NewPCG(1, 2)), start: c.Start,
		byID: map[string]int32{}, nodeIdx: map[string]int32{}}
}

// A checkpoint saves the work done so far, once: the run time before it is
// not counted again by the next checkpoint or by a drain.
func TestCheckpointsCountRunTimeOnce(t *testing.T) {
	sm := newTestSim(t)
	sm.init()
	run := 3 * time.Hour
	i := sm.newJob(trainingWorkload("t-1", 8, run, 20*time.Minute), int64(run), -1)
	sm.submit(i)
	sm.schedule(true)
	j := sm.jobs[i]
	require.Equal(t, jsRunning, j.state)
	start := j.runStart
	for k := 1; k <= 3; k++ {
		sm.now = start + int64(k)*int64(20*time.Minute)
		sm.checkpoint(event{kind: evCheckpoint, job: i, gen: j.gen})
		require.NoError(t, sm.err)
		require.Equal(t, time.Duration(k)*20*time.Minute, time.Duration(j.done), "saved work after checkpoint %d", k)
	}
	sm.now = start + int64(70*time.Minute)
	require.Equal(t, 70*time.Minute, time.Duration(sm.progress(j)))
}
