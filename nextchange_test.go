package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

func batchOf(id string, pods int) gang.Workload {
	return gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: pods, GPUsPerPod: 8}},
		Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
}

// TestNextChange pins what NextChange answers after a cycle: now while
// something may still change, the first instant a clock input turns
// after a quiet cycle, zero when none lies ahead.
func TestNextChange(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// run drives the scheduler from t0 and returns the time to ask
		// at and the answer wanted.
		run func(t *testing.T, s *fleet.Scheduler) (at, want time.Time)
	}{{
		name: "nothing pending or running",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			s.Schedule(t0)
			return t0.Add(time.Minute), time.Time{}
		},
	}, {
		name: "no cycle yet",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			return t0, t0
		},
	}, {
		name: "at the instant of the last cycle",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			s.Schedule(t0)
			return t0, t0
		},
	}, {
		name: "a submission since the last cycle",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			s.Schedule(t0)
			require.NoError(t, s.Submit(t0.Add(time.Second), batchOf("b", 1)))
			return t0.Add(time.Minute), t0.Add(time.Minute)
		},
	}, {
		name: "a cycle that admitted",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			require.NoError(t, s.Submit(t0, batchOf("b", 1)))
			require.Len(t, s.Schedule(t0).Admit, 1)
			return t0.Add(time.Minute), t0.Add(time.Minute)
		},
	}, {
		name: "running work only: its MinRuntime ends, checkpoints or not",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			require.NoError(t, s.Submit(t0, batchOf("b", 1)))
			require.Len(t, s.Schedule(t0).Admit, 1)
			require.Empty(t, s.Schedule(t0.Add(time.Second)).Admit)
			require.NoError(t, s.Checkpointed(t0.Add(2*time.Second), "b", t0.Add(2*time.Second)))
			return t0.Add(30 * time.Second), t0.Add(time.Minute)
		},
	}, {
		name: "running work only, past its MinRuntime: nothing ahead",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			require.NoError(t, s.Submit(t0, batchOf("b", 1)))
			require.Len(t, s.Schedule(t0).Admit, 1)
			require.Empty(t, s.Schedule(t0.Add(time.Hour)).Admit)
			return t0.Add(2 * time.Hour), time.Time{}
		},
	}, {
		name: "a blocked gang waits for the wait limit",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			// Research fills what its quota and the lent GPUs allow (7 of
			// the 8 nodes) with older runs of its own priority, then a gang
			// of 4 nodes waits behind them.
			for i := range 7 {
				w := batchOf(fmt.Sprintf("r%d", i), 1)
				w.Queue, w.PriorityClass, w.Drain.Preemptible = "research", fleet.ClassReservedResearch, false
				require.NoError(t, s.Submit(t0, w))
			}
			require.Len(t, s.Schedule(t0).Admit, 7)
			g := batchOf("g", 4)
			g.Queue, g.PriorityClass, g.Drain.Preemptible = "research", fleet.ClassReservedResearch, false
			at := t0.Add(time.Hour)
			require.NoError(t, s.Submit(at, g))
			require.Empty(t, s.Schedule(at).Admit)
			require.Empty(t, s.Schedule(at.Add(time.Second)).Admit)
			return at.Add(time.Minute), at.Add(fleet.ReferenceWaitLimit)
		},
	}, {
		name: "a victim's drain deadline",
		run: func(t *testing.T, s *fleet.Scheduler) (time.Time, time.Time) {
			for i := range 7 {
				require.NoError(t, s.Submit(t0, batchOf(fmt.Sprintf("b%d", i), 1)))
			}
			require.Len(t, s.Schedule(t0).Admit, 7)
			at := t0.Add(time.Hour)
			inf := gang.Workload{ID: "chat", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
				PodSets: []gang.PodSet{{Name: "server", Count: 2, GPUsPerPod: 8}}}
			require.NoError(t, s.Submit(at, inf))
			d := s.Schedule(at)
			require.Len(t, d.Drain, 1)
			require.Empty(t, s.Schedule(at.Add(time.Second)).Drain)
			return at.Add(2 * time.Second), d.Drain[0].Deadline
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := fleet.New(smallConfig())
			require.NoError(t, err)
			at, want := tt.run(t, s)
			require.Equal(t, want, s.NextChange(at))
			if want.IsZero() || want.After(at) {
				// A cycle before the answer decides nothing.
				d := s.Schedule(at)
				require.Empty(t, d.Admit)
				require.Empty(t, d.Drain)
				require.Empty(t, d.Kill)
			}
		})
	}
}
