package fleet_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
)

// nightSchedule gives batch 400 GPUs from 20:00 to 08:00 (inference 800)
// over the scheduler's quotas in force.
func nightSchedule(t *testing.T, s *fleet.Scheduler) *quota.Schedule {
	base := s.Quota()
	night := quota.Window{Start: quota.ClockOf(20, 0), End: quota.ClockOf(8, 0)}
	var inf quota.FlavorQuota
	for _, n := range base.Nodes {
		if n.Name == "prod-inference" {
			inf = n.Quotas[0]
		}
	}
	inf.Nominal = 800
	if v, ok := inf.LendingLimit.Get(); ok {
		inf.LendingLimit = quota.LimitOf(min(v, 800))
	}
	sched, err := quota.NewSchedule(base, quota.ScheduleSpec{Rules: []quota.ScheduleRule{
		{Node: "prod-inference", Window: night, Quota: inf},
		{Node: "batch", Window: night, Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 400}},
	}}, time.UTC)
	require.NoError(t, err)
	return sched
}

// throughJSON is what a host that persists snapshots gets back.
func throughJSON(t *testing.T, snap fleet.Snapshot) fleet.Snapshot {
	b, err := json.Marshal(snap)
	require.NoError(t, err)
	var back fleet.Snapshot
	require.NoError(t, json.Unmarshal(b, &back))
	return back
}

// A snapshot taken under a quota schedule restores through encoding/json
// with its schedule: the restored scheduler applies the morning boundary
// as the one that never stopped does, decision for decision.
func TestSnapshotWithAQuotaScheduleRestoresThroughJSON(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.SetQuotaSchedule(t0, nightSchedule(t, s)))
	research := training("research-all", 106, fleet.ClassReservedResearch, "research")
	research.Topology, research.Drain.Preemptible = gang.TopologyRequest{}, false
	require.NoError(t, s.Submit(t0, research))
	for i := range 50 {
		w := training(fmt.Sprintf("b-%d", i), 1, fleet.ClassPreemptibleBatch, "batch")
		w.Topology = gang.TopologyRequest{}
		require.NoError(t, s.Submit(t0, w))
	}
	s.Schedule(t0)
	back := throughJSON(t, s.Snapshot())
	require.NotNil(t, back.QuotaSchedule, "the schedule is kept")
	r, err := fleet.Restore(fleet.ReferenceConfig(), back)
	require.NoError(t, err)
	require.NoError(t, r.CheckInvariants())
	require.NotNil(t, r.QuotaSchedule())
	assert.Equal(t, s.QuotaSchedule().Spec(), r.QuotaSchedule().Spec())

	day := t0.Add(8 * time.Hour)
	for _, x := range []*fleet.Scheduler{s, r} {
		for i := range 150 {
			require.NoError(t, x.Submit(day, replica(fmt.Sprintf("day-%d", i), 8)))
		}
	}
	want, got := s.Schedule(day), r.Schedule(day)
	require.NotEmpty(t, want.Drain, "the morning boundary reclaims batch's GPUs")
	assert.Equal(t, want, got)
}

// A schedule that is not one quota.NewSchedule made, or whose base names
// a queue the tree lacks, is refused with a typed error naming it, by
// SetQuotaSchedule and by Restore, and Restore never panics on it.
func TestAQuotaScheduleNamingAnUnknownQueueIsRefused(t *testing.T) {
	s := newRef(t)
	base := s.Quota()
	base.Nodes = append(base.Nodes, quota.NodeSpec{Name: "ghost", Parent: base.Nodes[0].Name, Kind: quota.Queue})
	ghost, err := quota.NewSchedule(base, quota.ScheduleSpec{}, time.UTC)
	require.NoError(t, err)

	before := s.Snapshot()
	err = s.SetQuotaSchedule(t0, ghost)
	assert.ErrorIs(t, err, fleet.ErrInvalidQuota)
	assert.ErrorIs(t, err, quota.ErrUnknownNode)
	assert.ErrorContains(t, err, `"ghost"`)
	err = s.SetQuotaSchedule(t0, &quota.Schedule{})
	assert.ErrorIs(t, err, fleet.ErrInvalidQuota)
	assert.Equal(t, before, s.Snapshot(), "state unchanged")

	for name, sched := range map[string]*quota.Schedule{"a base naming ghost": ghost, "the zero schedule": {}} {
		snap := s.Snapshot()
		snap.QuotaSchedule = sched
		var r *fleet.Scheduler
		require.NotPanics(t, func() { r, err = fleet.Restore(fleet.ReferenceConfig(), snap) }, name)
		assert.Nil(t, r, name)
		assert.ErrorIs(t, err, fleet.ErrInvalidQuota, name)
	}
	// A persisted snapshot whose schedule was emptied ({} in JSON) is
	// refused when it is read, not restored without its schedule.
	require.NoError(t, s.SetQuotaSchedule(t0, nightSchedule(t, s)))
	b, err := json.Marshal(s.Snapshot())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["QuotaSchedule"] = map[string]any{}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	var snap fleet.Snapshot
	assert.ErrorIs(t, json.Unmarshal(b, &snap), quota.ErrInvalidSchedule)
}
