package metrics_test

import (
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// step is one input of a scripted stream: an event, a snapshot or a sample.
type step struct {
	ev     *fleet.Event
	snap   *fleet.Snapshot
	id     string
	sample *metrics.Sample
	when   time.Time
}

func ev(e fleet.Event) step      { return step{ev: &e} }
func snap(s fleet.Snapshot) step { return step{snap: &s} }
func obs(d time.Duration, id string, s metrics.Sample) step {
	return step{id: id, sample: &s, when: at(d)}
}

func play(t require.TestingT, r *metrics.Recorder, steps []step) {
	for _, s := range steps {
		switch {
		case s.ev != nil:
			require.NoError(t, r.Record(*s.ev))
		case s.snap != nil:
			require.NoError(t, r.ObserveSnapshot(*s.snap))
		default:
			require.NoError(t, r.Observe(s.when, s.id, *s.sample))
		}
	}
}

func fleetSnap(d time.Duration, healthy, free, stranded, spineBlock int, queues ...fleet.QueueView) fleet.Snapshot {
	return fleet.Snapshot{Time: at(d), Fleet: fleet.FleetView{
		GPUs: healthy, HealthyGPUs: healthy, FreeGPUs: free, StrandedGPUs: stranded,
		LargestFreeBlock: []fleet.LevelBlock{{Level: "spine", Domain: "s0", Nodes: spineBlock}},
	}, Queues: queues}
}

// An 8-GPU notebook, busy for an hour, idle for 3 h, then busy again
// for an hour before it finishes.
func idleScenario() []step {
	return []step{
		snap(fleetSnap(0, 16, 8, 4, 1)),
		ev(fleet.Event{Kind: fleet.EventSubmitted, Time: at(0), Workload: "nb", Queue: "research", Shape: gang.Batch, Class: "notebook", GPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "nb", Queue: "research", Shape: gang.Batch, Class: "notebook", GPUs: 8, Wait: 5 * time.Minute, Span: "node"}),
		obs(0, "nb", metrics.Sample{SMActivity: 0.8, MFU: 0.4}),
		obs(time.Hour, "nb", metrics.Sample{SMActivity: 0.01}),
		snap(fleetSnap(2*time.Hour, 16, 8, 0, 0)),
		obs(4*time.Hour, "nb", metrics.Sample{SMActivity: 0.5}),
		ev(fleet.Event{Kind: fleet.EventExited, Time: at(5 * time.Hour), Workload: "nb", Queue: "research", Exit: gang.ExitFinished}),
	}
}

func TestIdleWorkload(t *testing.T) {
	r, err := metrics.New(metrics.Config{IdleLimits: map[string]time.Duration{"notebook": 2 * time.Hour}})
	require.NoError(t, err)
	steps := idleScenario()
	play(t, r, steps[:6])
	// Idle since 1 h: at 3 h it is at its limit, past it at 3h30.
	assert.Empty(t, r.IdleCandidates(at(3*time.Hour)))
	assert.Equal(t, []metrics.IdleCandidate{{ID: "nb", Queue: "research", Class: "notebook", GPUs: 8,
		IdleFor: 150 * time.Minute, Limit: 2 * time.Hour}}, r.IdleCandidates(at(210*time.Minute)))
	play(t, r, steps[6:])
	assert.Empty(t, r.IdleCandidates(at(6*time.Hour)))
	assert.Zero(t, r.Live())

	rep := r.Report(t0, at(6*time.Hour))
	f := rep.Fleet
	assert.InDelta(t, 80, f.HealthyGPUHours, 1e-9, "16 GPUs x 5 h up to the last input")
	assert.InDelta(t, 40, f.AllocatedGPUHours, 1e-9, "8 GPUs x 5 h")
	assert.InDelta(t, 0.5, f.AllocationRate(), 1e-9)
	assert.InDelta(t, 40, f.SampledGPUHours, 1e-9)
	assert.InDelta(t, 8*(0.8+3*0.01+0.5), f.UsedGPUHours, 1e-9)
	assert.InDelta(t, 24, f.IdleGPUHours, 1e-9, "the whole 3 h stretch, 8 GPUs")
	pflop := 0.4 * 989e12 * 8 * 3600 / 1e15
	assert.InDelta(t, pflop, f.UsefulPFLOP, 1e-6)
	assert.InDelta(t, 100, f.AllocatedDollars, 1e-9, "40 GPU-h at $2.50")
	assert.InDelta(t, 100/pflop, f.DollarsPerPFLOP(), 1e-9)
	assert.Equal(t, int64(1), f.Submissions)
	assert.Equal(t, int64(1), f.Admissions)

	require.Len(t, rep.Teams, 1)
	assert.Equal(t, "research", rep.Teams[0].Team)
	team := rep.Teams[0].Usage
	team.HealthyGPUHours = f.HealthyGPUHours // the fleet row alone has capacity
	assert.Equal(t, f, team)
	require.Len(t, rep.Shapes, 1)
	assert.Equal(t, gang.Batch, rep.Shapes[0].Shape)

	require.Len(t, rep.Waits.ByTeam, 1)
	assert.Equal(t, int64(1), rep.Waits.ByTeam[0].Count)
	assert.InEpsilon(t, (5 * time.Minute).Seconds(), rep.Waits.ByTeam[0].P99.Seconds(), 0.01)
	assert.Equal(t, int64(1), rep.Waits.ByGangSize[0].Count, "8 GPUs is class 1-8")
	assert.Zero(t, rep.Waits.ByGangSize[1].Count)

	fr := rep.Fragmentation
	assert.InDelta(t, 5, fr.ObservedHours, 1e-9)
	assert.InDelta(t, 16, fr.HealthyGPUs, 1e-9)
	assert.InDelta(t, (4*2+0*3)/5.0, fr.StrandedGPUs, 1e-9)
	assert.InDelta(t, 0.1, fr.StrandedShare(), 1e-9)
	assert.Zero(t, fr.StrandedP50, "no stranded GPUs for 3 h of 5")
	assert.InEpsilon(t, 4, fr.StrandedP99, 0.01)
	assert.Equal(t, []metrics.LevelBlock{{Level: "spine", Avg: 0.4, Min: 0, Max: 1}}, fr.LargestFreeBlock)

	require.Len(t, rep.Hourly, 6)
	for h, want := range []struct{ batch, idle, used, stranded float64 }{
		{8, 0, 6.4, 4}, {8, 8, 0.08, 4}, {8, 8, 0.08, 0}, {8, 8, 0.08, 0}, {8, 0, 4, 0}, {0, 0, 0, 0},
	} {
		p := rep.Hourly[h]
		assert.Equal(t, at(time.Duration(h)*time.Hour), p.Start)
		assert.InDelta(t, want.batch, p.Batch, 1e-9, "hour %d", h)
		assert.InDelta(t, want.idle, p.Idle, 1e-9, "hour %d", h)
		assert.InDelta(t, want.stranded, p.Stranded, 1e-9, "hour %d", h)
		assert.Zero(t, p.InferenceAllocated)
	}
}

// A 16-GPU training gang preempted 10 minutes after its checkpoint, and a
// batch job that misses its drain deadline and is killed.
func preemptScenario() []step {
	return []step{
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "train", Queue: "research", Shape: gang.Training, GPUs: 16, Span: "fleet", CrossesSpines: true, Wait: time.Hour}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "b2", Queue: "evals", Shape: gang.Batch, GPUs: 8, Wait: 30 * time.Second}),
		ev(fleet.Event{Kind: fleet.EventDrainStarted, Time: at(30 * time.Minute), Workload: "b2", Queue: "evals", Reason: "in-queue", Beneficiaries: []string{"x"}, Deadline: at(32 * time.Minute), LostGPUSeconds: 3600}),
		ev(fleet.Event{Kind: fleet.EventKilled, Time: at(32 * time.Minute), Workload: "b2", Queue: "evals", Deadline: at(32 * time.Minute)}),
		ev(fleet.Event{Kind: fleet.EventExited, Time: at(32 * time.Minute), Workload: "b2", Queue: "evals", Exit: gang.ExitKilled}),
		ev(fleet.Event{Kind: fleet.EventCheckpointed, Time: at(time.Hour), Workload: "train", Queue: "research"}),
		ev(fleet.Event{Kind: fleet.EventDrainStarted, Time: at(70 * time.Minute), Workload: "train", Queue: "research", Reason: "reclaim", Beneficiaries: []string{"inf-1"}, Deadline: at(72 * time.Minute)}),
		ev(fleet.Event{Kind: fleet.EventExited, Time: at(71 * time.Minute), Workload: "train", Queue: "research", Exit: gang.ExitDrained}),
	}
}

func TestPreemptedAfterCheckpoint(t *testing.T) {
	r, err := metrics.New(metrics.Config{RestartTime: 5 * time.Minute})
	require.NoError(t, err)
	play(t, r, preemptScenario())
	rep := r.Report(t0, at(2*time.Hour))

	// Lost work is measured at the exit, not estimated at the drain:
	// train: 16 GPUs x 11 min since the checkpoint (it exited without
	// reporting one on SIGTERM) + 16 x 5 min restart = 4.27 GPU-h.
	// b2 never checkpointed: 8 x 32 min of run + 8 x 5 min restart.
	assert.Equal(t, roundPreemptions([]metrics.Preemptions{
		{Team: "evals", Cause: "in-queue", Count: 1, Kills: 1, LostGPUHours: 8 * 37.0 / 60, LostWorkGPUHours: 8 * 32.0 / 60, RestartGPUHours: 8 * 5.0 / 60},
		{Team: "research", Cause: "reclaim", Count: 1, LostGPUHours: 16 * 16.0 / 60, LostWorkGPUHours: 16 * 11.0 / 60, RestartGPUHours: 16 * 5.0 / 60},
	}), roundPreemptions(rep.Preemptions))
	assert.InDelta(t, 16*16.0/60+8*37.0/60, rep.Fleet.LostGPUHours, 1e-9)
	assert.InDelta(t, 16*5.0/60+8*5.0/60, rep.Fleet.RestartGPUHours, 1e-9)
	assert.Equal(t, int64(2), rep.Fleet.Preemptions)
	assert.Equal(t, int64(1), rep.Drains.DeadlineMisses)
	assert.Equal(t, int64(2), rep.Drains.Count)
	assert.InEpsilon(t, 60, rep.Drains.P50.Seconds(), 0.01, "train gave its GPUs back in a minute")
	assert.InEpsilon(t, 120, rep.Drains.P99.Seconds(), 0.01, "b2 at its kill")
	assert.Equal(t, int64(1), rep.Fleet.CrossSpineGangs)
	assert.InDelta(t, 16*71.0/60, rep.Fleet.CrossSpineGPUHours, 1e-9)
	assert.InDelta(t, 16*71.0/60+8*32.0/60, rep.Fleet.AllocatedGPUHours, 1e-9)
	assert.Zero(t, rep.Fleet.SampledGPUHours, "no samples: use is unknown, not zero")
	assert.Zero(t, rep.Fleet.PreemptionTax(), "nothing borrowed")

	require.Len(t, rep.Waits.ByGangSize, 4)
	assert.Equal(t, int64(1), rep.Waits.ByGangSize[0].Count)
	assert.Equal(t, int64(1), rep.Waits.ByGangSize[1].Count, "16 GPUs is class 9-64")
	assert.InEpsilon(t, 3600, rep.Waits.ByGangSize[1].P50.Seconds(), 0.01)
	assert.InEpsilon(t, 30, rep.Waits.Fleet.P50.Seconds(), 0.01)
	assert.InEpsilon(t, 3600, rep.Waits.Fleet.P99.Seconds(), 0.01)
	assert.Zero(t, r.Unmatched())
}

func queue(name string, nominal, inUse, borrowed int64) fleet.QueueView {
	return fleet.QueueView{Name: name, Parent: "all", IsQueue: true, Flavors: []fleet.FlavorView{{
		Flavor: "h100", Nominal: nominal, InUse: inUse, Borrowed: borrowed, Lendable: max(0, nominal-inUse)}}}
}

// Research borrows 8 of inference's 16 GPUs through the night trough and
// is reclaimed when the morning peak comes.
func borrowScenario() []step {
	cohort := fleet.QueueView{Name: "all"}
	return []step{
		snap(fleetSnap(0, 32, 4, 0, 0, cohort, queue("inference", 16, 12, 0), queue("research", 16, 16, 0))),
		snap(fleetSnap(time.Hour, 32, 0, 0, 0, cohort, queue("inference", 16, 8, 0), queue("research", 16, 24, 8))),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(time.Hour), Workload: "bt", Queue: "research", Shape: gang.Batch, Flavor: "h100", GPUs: 8, Borrowing: true, BorrowedGPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventCheckpointed, Time: at(2*time.Hour + 40*time.Minute), Workload: "bt", Queue: "research"}),
		ev(fleet.Event{Kind: fleet.EventDrainStarted, Time: at(3 * time.Hour), Workload: "bt", Queue: "research", Reason: "reclaim-while-borrowing", LostGPUSeconds: 4800}),
		ev(fleet.Event{Kind: fleet.EventExited, Time: at(3*time.Hour + time.Minute), Workload: "bt", Queue: "research", Exit: gang.ExitDrained}),
		snap(fleetSnap(3*time.Hour+time.Minute, 32, 0, 0, 0, cohort, queue("inference", 16, 16, 0), queue("research", 16, 16, 0))),
		snap(fleetSnap(4*time.Hour, 32, 0, 0, 0, cohort, queue("inference", 16, 16, 0), queue("research", 16, 16, 0))),
	}
}

func TestBorrowingThroughTrough(t *testing.T) {
	r, err := metrics.New(metrics.Config{})
	require.NoError(t, err)
	play(t, r, borrowScenario())
	rep := r.Report(t0, at(4*time.Hour))
	require.Len(t, rep.Teams, 2)
	inf, res := rep.Teams[0].Usage, rep.Teams[1].Usage
	borrowed := 8 * (2 + 1.0/60)
	assert.InDelta(t, borrowed, res.BorrowedGPUHours, 1e-9)
	assert.InDelta(t, borrowed, inf.LentGPUHours, 1e-9, "inference lent what research borrowed")
	assert.InDelta(t, 4, inf.IdleReservedGPUHours, 1e-9, "4 unused, unlent GPUs for the first hour")
	assert.InDelta(t, 10, inf.IdleReservationDollars, 1e-9)
	assert.InDelta(t, borrowed*2.5, res.RecoveredDollars, 1e-9)
	// 8 GPUs x 21 min since its checkpoint at 2:40, measured at its exit
	// (the scheduler's estimate at the drain is not what was lost).
	lost := 8 * 21.0 / 60
	assert.InDelta(t, lost, res.LostGPUHours, 1e-9)
	assert.InDelta(t, lost/borrowed, res.PreemptionTax(), 1e-9)
	assert.InDelta(t, res.PreemptionTax(), rep.Fleet.PreemptionTax(), 1e-9)
	assert.InDelta(t, 128, rep.Fleet.HealthyGPUHours, 1e-9)
	assert.Equal(t, roundPreemptions([]metrics.Preemptions{{Team: "research", Cause: "reclaim-while-borrowing", Count: 1, LostGPUHours: lost, LostWorkGPUHours: lost}}),
		roundPreemptions(rep.Preemptions))
	assert.InDelta(t, 8, rep.Hourly[1].Borrowed, 1e-9)
	assert.InDelta(t, 8.0/60, rep.Hourly[3].Borrowed, 1e-9)
}

func roundPreemptions(ps []metrics.Preemptions) []metrics.Preemptions {
	out := make([]metrics.Preemptions, len(ps))
	for i, p := range ps {
		for _, v := range []*float64{&p.LostGPUHours, &p.LostWorkGPUHours, &p.RestartGPUHours} {
			*v = float64(int64(*v*1e9+0.5)) / 1e9
		}
		out[i] = p
	}
	return out
}
