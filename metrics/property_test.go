package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

const propGPUs = 64

// genStream draws a consistent stream over a 64-GPU fleet: admissions
// that fit, samples, drains, kills, checkpoints, exits and snapshots, in
// time order. Snapshots always report the whole fleet healthy, so
// allocation can be checked against capacity.
func genStream(t *rapid.T) []step {
	teams := []string{"inference", "research", "evals"}
	steps := []step{snap(fleetSnap(0, propGPUs, propGPUs, 0, 8))}
	now := time.Duration(0)
	type run struct {
		id       string
		gpus     int
		draining bool
	}
	var running []run
	used, next := 0, 0
	n := rapid.IntRange(1, 60).Draw(t, "steps")
	for range n {
		now += time.Duration(rapid.IntRange(0, 90).Draw(t, "minutes")) * time.Minute
		switch op := rapid.IntRange(0, 6).Draw(t, "op"); {
		case op <= 1 && used < propGPUs:
			g := rapid.IntRange(1, propGPUs-used).Draw(t, "gpus")
			id := fmt.Sprintf("w%d", next)
			next++
			team := rapid.SampledFrom(teams).Draw(t, "team")
			steps = append(steps, ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(now), Workload: id, Queue: team,
				Shape: gang.Shape(rapid.IntRange(1, 3).Draw(t, "shape")), GPUs: g,
				BorrowedGPUs: rapid.IntRange(0, g).Draw(t, "borrowed"), CrossesSpines: rapid.Bool().Draw(t, "cross"),
				Wait: time.Duration(rapid.IntRange(0, 7200).Draw(t, "wait")) * time.Second}))
			running = append(running, run{id: id, gpus: g})
			used += g
		case op == 2 && len(running) > 0:
			i := rapid.IntRange(0, len(running)-1).Draw(t, "sampled")
			steps = append(steps, obs(now, running[i].id, metrics.Sample{
				SMActivity: rapid.Float64Range(0, 1).Draw(t, "sm"), MFU: rapid.Float64Range(0, 0.6).Draw(t, "mfu")}))
		case op == 3 && len(running) > 0:
			i := rapid.IntRange(0, len(running)-1).Draw(t, "drained")
			if !running[i].draining {
				running[i].draining = true
				steps = append(steps, ev(fleet.Event{Kind: fleet.EventDrainStarted, Time: at(now), Workload: running[i].id, Reason: "reclaim"}))
			} else {
				steps = append(steps, ev(fleet.Event{Kind: fleet.EventKilled, Time: at(now), Workload: running[i].id}))
			}
		case op == 4 && len(running) > 0:
			i := rapid.IntRange(0, len(running)-1).Draw(t, "exited")
			steps = append(steps, ev(fleet.Event{Kind: fleet.EventExited, Time: at(now), Workload: running[i].id, Exit: gang.ExitFinished}))
			used -= running[i].gpus
			running = append(running[:i], running[i+1:]...)
		case op == 5 && len(running) > 0:
			i := rapid.IntRange(0, len(running)-1).Draw(t, "checkpointed")
			steps = append(steps, ev(fleet.Event{Kind: fleet.EventCheckpointed, Time: at(now), Workload: running[i].id}))
		default:
			free := propGPUs - used
			steps = append(steps, snap(fleetSnap(now, propGPUs, free, rapid.IntRange(0, free).Draw(t, "stranded"), free/8)))
		}
	}
	return steps
}

func newRecorder(t require.TestingT) *metrics.Recorder {
	r, err := metrics.New(metrics.Config{IdleWindow: 10 * time.Minute, RestartTime: time.Minute})
	require.NoError(t, err)
	return r
}

func TestUsedWithinAllocatedWithinCapacity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := newRecorder(t)
		play(t, r, genStream(t))
		from := at(time.Duration(rapid.IntRange(0, 48).Draw(t, "from")) * time.Hour)
		to := from.Add(time.Duration(rapid.IntRange(1, 48).Draw(t, "hours")) * time.Hour)
		rep := r.Report(from, to)
		const eps = 1e-6
		for _, u := range append(rep.Teams, metrics.TeamUsage{Team: "fleet", Usage: rep.Fleet}) {
			require.LessOrEqual(t, u.UsedGPUHours, u.SampledGPUHours+eps, u.Team)
			require.LessOrEqual(t, u.SampledGPUHours, u.AllocatedGPUHours+eps, u.Team)
			require.LessOrEqual(t, u.IdleGPUHours, u.AllocatedGPUHours+eps, u.Team)
			require.LessOrEqual(t, u.BorrowedGPUHours, u.AllocatedGPUHours+eps, u.Team)
			require.LessOrEqual(t, u.AllocatedGPUHours, rep.Fleet.HealthyGPUHours+eps, u.Team)
		}
		for _, p := range rep.Hourly {
			require.LessOrEqual(t, p.InferenceUsed, p.InferenceAllocated+eps)
			require.LessOrEqual(t, p.InferenceAllocated+p.Training+p.Batch, p.Healthy+eps)
		}
	})
}

// additive lists the figures that sum over a split window.
func additive(u metrics.Usage) []float64 {
	return []float64{u.HealthyGPUHours, u.AllocatedGPUHours, u.SampledGPUHours, u.UsedGPUHours, u.UsefulPFLOP,
		u.IdleGPUHours, u.BorrowedGPUHours, u.LentGPUHours, u.IdleReservedGPUHours, u.LostGPUHours,
		u.RestartGPUHours, u.NodeLostGPUHours, u.LowMFUGPUHours, u.RightSizeGPUHours, u.RightSizeDollars, float64(u.NodeLosses),
		u.CrossSpineGPUHours, float64(u.Submissions), float64(u.Admissions), float64(u.Preemptions),
		float64(u.Kills), float64(u.CrossSpineGangs), u.AllocatedDollars, u.IdleReservationDollars, u.RecoveredDollars}
}

func TestWindowIsSumOfHalves(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := newRecorder(t)
		play(t, r, genStream(t))
		a := rapid.IntRange(0, 24).Draw(t, "from")
		m := a + rapid.IntRange(0, 24).Draw(t, "first")
		b := m + rapid.IntRange(0, 24).Draw(t, "second")
		h := func(n int) time.Time { return at(time.Duration(n) * time.Hour) }
		whole, left, right := r.Report(h(a), h(b)), r.Report(h(a), h(m)), r.Report(h(m), h(b))
		sum := func(x, y []float64) []float64 {
			for i := range x {
				x[i] += y[i]
			}
			return x
		}
		require.InDeltaSlice(t, additive(whole.Fleet), sum(additive(left.Fleet), additive(right.Fleet)), 1e-6)
		team := func(rep metrics.Report, name string) metrics.Usage {
			for _, u := range rep.Teams {
				if u.Team == name {
					return u.Usage
				}
			}
			return metrics.Usage{}
		}
		for _, u := range whole.Teams {
			require.InDeltaSlice(t, additive(u.Usage), sum(additive(team(left, u.Team)), additive(team(right, u.Team))), 1e-6, u.Team)
		}
		require.Equal(t, whole.Waits.Fleet.Count, left.Waits.Fleet.Count+right.Waits.Fleet.Count)
		require.Equal(t, whole.Drains.Count, left.Drains.Count+right.Drains.Count)
		require.InDelta(t, whole.Fragmentation.ObservedHours, left.Fragmentation.ObservedHours+right.Fragmentation.ObservedHours, 1e-9)
		require.Len(t, whole.Hourly, len(left.Hourly)+len(right.Hourly))
	})
}

func TestBatchEqualsOneByOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		steps := genStream(t)
		one, batch := newRecorder(t), newRecorder(t)
		play(t, one, steps)
		var pending []fleet.Event
		flush := func() {
			require.NoError(t, batch.RecordAll(pending))
			pending = pending[:0]
		}
		for _, s := range steps {
			if s.ev != nil {
				pending = append(pending, *s.ev)
				continue
			}
			flush()
			play(t, batch, []step{s})
		}
		flush()
		end := at(72 * time.Hour)
		require.Equal(t, one.Report(t0, end), batch.Report(t0, end))
		require.Equal(t, one.IdleCandidates(end), batch.IdleCandidates(end))
	})
}
