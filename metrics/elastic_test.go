package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
)

// A spike takes 3 pods of an elastic batch job of 100 x 8 GPUs (87 run): the tax
// has a shrink row charged the 3 pods' work since the job's last
// checkpoint (24 GPUs x 30 min, no restart), not the job's 696 GPUs; and
// the job's allocation follows its size down and back up.
func TestShrinkChargesOnlyTheRemovedPods(t *testing.T) {
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	r, err := metrics.New(metrics.Config{RestartTime: 5 * time.Minute})
	require.NoError(t, err)
	record := func(d fleet.Decisions) { require.NoError(t, r.RecordAll(d.Events)) }
	for i := range 62 {
		require.NoError(t, s.Submit(t0, gang.Workload{ID: fmt.Sprintf("inf-%02d", i), Queue: "prod-inference",
			PriorityClass: fleet.ClassProdInference, Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 8}}}))
	}
	require.NoError(t, s.Submit(t0, gang.Workload{ID: "own", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
		PodSets: []gang.PodSet{{Name: "workers", Count: 106, GPUsPerPod: 8}}}))
	require.NoError(t, s.Submit(t0, gang.Workload{ID: "e", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "workers", Count: 100, MinCount: 8, GPUsPerPod: 8}},
		Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}))
	record(s.Schedule(t0))

	now := t0.Add(time.Hour)
	require.NoError(t, s.Checkpointed(now.Add(-30*time.Minute), "e", now.Add(-30*time.Minute)))
	for i := range 4 {
		require.NoError(t, s.Submit(now, gang.Workload{ID: fmt.Sprintf("spike-%d", i), Queue: "prod-inference",
			PriorityClass: fleet.ClassProdInference, Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 8}}}))
	}
	d := s.Schedule(now)
	record(d)
	require.Len(t, d.Drain, 3)
	for _, x := range d.Drain {
		require.Equal(t, "e", x.Of)
		require.NoError(t, s.Exited(now, x.ID, gang.ExitDrained))
	}
	record(s.Schedule(now))
	later := now.Add(time.Hour)
	for i := range 4 {
		require.NoError(t, s.Exited(later, fmt.Sprintf("spike-%d", i), gang.ExitFinished))
	}
	d = s.Schedule(later)
	record(d)
	require.Len(t, d.Grow, 1)
	require.NoError(t, s.Exited(later.Add(time.Hour), "e", gang.ExitFinished))
	record(s.Schedule(later.Add(time.Hour)))

	rep := r.Report(t0, later.Add(time.Hour))
	var shrink *metrics.Preemptions
	for i, p := range rep.Preemptions {
		if p.Cause == metrics.CauseShrink {
			shrink = &rep.Preemptions[i]
		}
	}
	require.NotNil(t, shrink, "a shrink row in %+v", rep.Preemptions)
	assert.Equal(t, "batch", shrink.Team)
	assert.EqualValues(t, 3, shrink.Count)
	assert.InDelta(t, 24*0.5, shrink.LostWorkGPUHours, 1e-9, "3 pods x 8 GPUs x 30 min")
	assert.Zero(t, shrink.RestartGPUHours, "e runs on: nothing restarts")
	for _, p := range rep.Preemptions {
		assert.Equal(t, metrics.CauseShrink, p.Cause, "no whole eviction")
	}
	// e held 87 pods for the first hour, 84 for the second, 87 again
	// for the third (grown back at 2 h).
	var batch metrics.Usage
	for _, u := range rep.Teams {
		if u.Team == "batch" {
			batch = u.Usage
		}
	}
	assert.InDelta(t, float64(87*8+84*8+87*8), batch.AllocatedGPUHours, 1e-6)
	assert.Zero(t, r.Unmatched())
}
