package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
)

// startJob submits w, runs a cycle and returns the running job.
func startJob(t *testing.T, sm *sim, w gang.Workload, work time.Duration) (int32, *job) {
	t.Helper()
	i := sm.newJob(w, int64(work), -1)
	sm.submit(i)
	sm.schedule(true)
	require.NoError(t, sm.err)
	j := sm.jobs[i]
	require.Equal(t, jsRunning, j.state, "%s did not start", w.ID)
	return i, j
}

// What a preempted or failed run loses follows its shape and its
// checkpoints: a stateless replica loses only its restart and warm-up,
// training saves on SIGTERM, batch keeps its latest periodic checkpoint.
func TestLostWorkFollowsShapeAndCheckpoints(t *testing.T) {
	gpuh := func(d time.Duration, gpus int) float64 { return d.Hours() * float64(gpus) }
	for _, tc := range []struct {
		name        string
		w           gang.Workload
		stop        string // "drain", "kill" or "node"
		after       time.Duration
		lost        float64 // work, GPU-h
		restart     float64 // GPU-h
		failureLost bool    // booked as a node loss, not a preemption
	}{
		{"replica on a lost node", inferenceWorkload("svc-1", 4), "node", 5 * time.Hour, 0, gpuh(5*time.Minute, 4), true},
		{"training on a lost node", trainingWorkload("t-1", 8, 9*time.Hour, 20*time.Minute), "node", 50 * time.Minute, gpuh(10*time.Minute, 8), gpuh(3*time.Minute, 8), true},
		{"training drained", trainingWorkload("t-2", 8, 9*time.Hour, 20*time.Minute), "drain", 50 * time.Minute, 0, gpuh(3*time.Minute, 8), false},
		{"training killed", trainingWorkload("t-3", 8, 9*time.Hour, 20*time.Minute), "kill", 50 * time.Minute, gpuh(10*time.Minute, 8), gpuh(3*time.Minute, 8), false},
		{"batch drained, 10 min checkpoints", batchWorkload("b-1", 2, 9*time.Hour, 10*time.Minute), "drain", 47 * time.Minute, gpuh(7*time.Minute, 2), gpuh(3*time.Minute, 2), false},
		{"batch drained, no checkpoints", batchWorkload("b-2", 2, 9*time.Hour, 0), "drain", 47 * time.Minute, gpuh(47*time.Minute, 2), gpuh(3*time.Minute, 2), false},
		{"batch on a lost node, no checkpoints", batchWorkload("b-3", 2, 9*time.Hour, 0), "node", 47 * time.Minute, gpuh(47*time.Minute, 2), gpuh(3*time.Minute, 2), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm := newTestSim(t)
			sm.init()
			work := time.Duration(0)
			if tc.w.Shape != gang.Inference {
				work = 9 * time.Hour
			}
			i, j := startJob(t, sm, tc.w, work)
			start := sm.now
			for ck := j.w.Drain.CheckpointInterval; ck > 0 && ck <= tc.after; ck += j.w.Drain.CheckpointInterval {
				sm.now = start + int64(ck)
				sm.checkpoint(event{kind: evCheckpoint, job: i, gen: j.gen})
			}
			sm.now = start + int64(tc.after)
			switch tc.stop {
			case "drain", "kill":
				// The scheduler is told first, as a drain it chose would.
				_, err := sm.s.RequestDrain(sm.at(sm.now), j.w.ID, 0)
				require.NoError(t, err)
				j.state = jsDraining
				how := gang.ExitDrained
				if tc.stop == "kill" {
					how = gang.ExitKilled
				}
				sm.stopped(i, how)
			case "node":
				sm.failNode(j.pods[0].node)
			}
			require.NoError(t, sm.err)
			r := sm.res
			lost, restart := r.PreemptedLostGPUh, r.RestartGPUh
			if tc.failureLost {
				lost, restart = r.FailureLostGPUh, r.FailureRestartGPUh
				assert.Zero(t, r.PreemptedLostGPUh+r.RestartGPUh, "a node loss booked as a preemption")
			} else {
				assert.Zero(t, r.FailureLostGPUh+r.FailureRestartGPUh, "a preemption booked as a node loss")
			}
			assert.InDelta(t, tc.lost, lost, 1e-9, "lost work")
			assert.InDelta(t, tc.restart, restart, 1e-9, "restart")
		})
	}
}

// A static split only stops lending across the split: inside the
// training partition research still reclaims its quota from batch.
func TestStaticPreemptsInsideItsPartition(t *testing.T) {
	t.Parallel()
	c := short(Static, 5)
	r := run(t, c)
	assert.Empty(t, r.Violations)
	assert.Zero(t, r.BorrowedGPUh, "the static split lent inference capacity")
	assert.Positive(t, r.Drains, "research never reclaimed its quota from batch")
	assert.Zero(t, r.InferenceReclaims, "inference drained work under a static split")
	cfg := FleetConfig(2048, Static)
	assert.False(t, cfg.Policy.NoPreemption)
}

// The consolidating scale-down stops the replica in the spine holding the
// fewest inference GPUs, so a spine can empty; the other stops the newest.
func TestScaleDownVictim(t *testing.T) {
	// Nodes 0-1 are spine 0, nodes 2-3 spine 1. The service's replicas
	// run on nodes 0, 2 and 1 (newest last); another service's 8-GPU
	// replica runs on node 0, so spine 0 holds 10 GPUs and spine 1 one.
	mk := func(mode ScaleDown) (*sim, *service) {
		sm := &sim{cfg: Config{Workload: Workload{ScaleDown: mode}}, nodeTop: []int32{0, 0, 1, 1}, topInference: make([]int, 2)}
		for k, p := range []pod{{0, 1}, {2, 1}, {1, 1}, {0, 8}} {
			sm.jobs = append(sm.jobs, &job{w: gang.Workload{Shape: gang.Inference}, state: jsRunning, pods: []pod{p}})
			sm.live = append(sm.live, int32(k))
		}
		return sm, &service{tp: 1, replicas: []int32{0, 1, 2}}
	}
	for _, tc := range []struct {
		name    string
		mode    ScaleDown
		pending int32 // a replica made pending, or -1
		want    int
	}{
		{"newest", ScaleDownNewest, -1, 2},
		{"consolidate: the lightest spine", ScaleDownConsolidate, -1, 1},
		{"consolidate: a pending replica first", ScaleDownConsolidate, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm, sv := mk(tc.mode)
			if tc.pending >= 0 {
				sm.jobs[tc.pending].state, sm.jobs[tc.pending].pods = jsPending, nil
			}
			assert.Equal(t, tc.want, sm.scaleDownVictim(sv))
		})
	}
}
