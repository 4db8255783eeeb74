package fleet_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
)

// corruptible is a reference scheduler with running work, a drain the
// host asked for, pending work, an undelivered event and a booking.
func corruptible(t *testing.T) (*fleet.Scheduler, time.Time) {
	s := newRef(t)
	for _, id := range []string{"a", "b"} {
		require.NoError(t, s.Submit(t0, training(id, 2, fleet.ClassReservedResearch, "research")))
	}
	require.Len(t, s.Schedule(t0).Admit, 2)
	now := t0.Add(time.Hour)
	_, err := s.RequestDrain(now, "a", 0)
	require.NoError(t, err)
	require.NoError(t, s.Submit(now, training("later", 64, fleet.ClassReservedResearch, "research")))
	_, err = s.Propose(now, calendar.Request{ID: "eval", Queue: "research", Flavor: "H100", GPUs: 64, Level: "leaf",
		Start: now.Add(time.Hour), Duration: time.Hour})
	require.NoError(t, err)
	_, err = s.Approve(now, "eval", 0, "council")
	require.NoError(t, err)
	return s, now
}

func viewOf(snap *fleet.Snapshot, id string) *fleet.RunningView {
	for i := range snap.Running {
		if snap.Running[i].ID == id {
			return &snap.Running[i]
		}
	}
	return nil
}

// Restore refuses, with a *SnapshotError naming the field, every
// corruption of a snapshot the scheduler could not have written.
func TestRestoreRefusesACorruptedSnapshot(t *testing.T) {
	s, now := corruptible(t)
	good := s.Snapshot()
	_, err := fleet.Restore(fleet.ReferenceConfig(), good)
	require.NoError(t, err, "the snapshot itself restores")
	for _, tt := range []struct {
		name  string
		edit  func(*fleet.Snapshot)
		field string
	}{
		{"a pending entry whose ID differs from its spec's", func(x *fleet.Snapshot) { x.Pending[0].ID = "other" }, "Pending[0].ID"},
		{"a pending entry's queue changed", func(x *fleet.Snapshot) { x.Pending[0].Spec.Queue = "batch" }, "Pending[0].Spec.Queue"},
		{"a running entry whose ID differs", func(x *fleet.Snapshot) { viewOf(x, "b").Spec.ID = "c" }, "ID"},
		{"a drain deadline a year ahead", func(x *fleet.Snapshot) {
			r := viewOf(x, "a")
			r.Drain.Deadline, r.Deadline = now.AddDate(1, 0, 0), now.AddDate(1, 0, 0)
		}, "Drain.Deadline"},
		{"a drain deadline before its start", func(x *fleet.Snapshot) {
			r := viewOf(x, "a")
			r.Drain.Deadline, r.Deadline = now.Add(-time.Minute), now.Add(-time.Minute)
		}, "Drain.Deadline"},
		{"a drain begun after the snapshot", func(x *fleet.Snapshot) { viewOf(x, "a").Drain.Since = now.Add(time.Hour) }, "Drain.Since"},
		{"a drain of an unknown reason", func(x *fleet.Snapshot) { viewOf(x, "a").Drain.Reason = 200 }, "Drain.Reason"},
		{"a kill asked before the deadline", func(x *fleet.Snapshot) { viewOf(x, "a").Drain.KillAsked = now }, "Drain.KillAsked"},
		{"draining without a drain", func(x *fleet.Snapshot) { viewOf(x, "b").Draining = true }, "Draining"},
		{"a spec's queue changed under running work", func(x *fleet.Snapshot) { viewOf(x, "b").Spec.Queue = "batch" }, "Spec.Queue"},
		{"a spec's class changed under running work", func(x *fleet.Snapshot) {
			viewOf(x, "b").Spec.PriorityClass = fleet.ClassPreemptibleBatch
		}, "Spec.PriorityClass"},
		{"an unknown split parent", func(x *fleet.Snapshot) { viewOf(x, "b").SplitOf = "ghost" }, "SplitOf"},
		{"a start after the snapshot", func(x *fleet.Snapshot) { viewOf(x, "b").Started = now.Add(time.Hour) }, "Started"},
		{"a checkpoint after the snapshot", func(x *fleet.Snapshot) {
			viewOf(x, "b").Spec.Drain.LastCheckpoint = now.Add(time.Hour)
		}, "Spec.Drain.LastCheckpoint"},
		{"a queue-order counter beyond the snapshot's", func(x *fleet.Snapshot) { viewOf(x, "b").Seq = x.Seq + 1 }, "Seq"},
		{"reclaiming for a victim not draining", func(x *fleet.Snapshot) { x.Pending[0].Reclaiming = []string{"b"} }, "Pending[0].Reclaiming[0]"},
		{"nominated without a nomination", func(x *fleet.Snapshot) { x.Pending[0].Nominated = true }, "Pending[0].Nominated"},
		{"an event of kind 200", func(x *fleet.Snapshot) { x.Undelivered[0].Kind = 200 }, "Undelivered[0].Kind"},
		{"a snapshot time past year 9999", func(x *fleet.Snapshot) { x.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "Time"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap := s.Snapshot()
			tt.edit(&snap)
			var r *fleet.Scheduler
			var err error
			require.NotPanics(t, func() { r, err = fleet.Restore(fleet.ReferenceConfig(), snap) })
			assert.Nil(t, r)
			require.ErrorIs(t, err, fleet.ErrInvalid)
			var se *fleet.SnapshotError
			require.True(t, errors.As(err, &se), "a *SnapshotError: %v", err)
			assert.Contains(t, se.Field, tt.field)
		})
	}
}

// A booking that ends before it starts is refused by the calendar's
// restore; so is one whose GPUs exceed its blocks.
func TestRestoreRefusesABookingEndingBeforeItStarts(t *testing.T) {
	s, _ := corruptible(t)
	for name, edit := range map[string]func(*calendar.Booking){
		"ending before it starts":   func(b *calendar.Booking) { b.End = b.Start.Add(-time.Minute) },
		"ending as it starts":       func(b *calendar.Booking) { b.End = b.Start },
		"more GPUs than its blocks": func(b *calendar.Booking) { b.GPUs = b.Held + 1 },
	} {
		snap := s.Snapshot()
		require.Len(t, snap.Calendar.Bookings, 1)
		edit(&snap.Calendar.Bookings[0])
		_, err := fleet.Restore(fleet.ReferenceConfig(), snap)
		assert.ErrorIs(t, err, fleet.ErrInvalid, name)
		assert.ErrorContains(t, err, `"eval"`, name)
	}
}

// RFC 3339 holds years 0000 to 9999, both included: an empty scheduler's
// snapshot taken at either end restores, and one a nanosecond past 9999
// is refused.
func TestRestoreTakesSnapshotsFromYearZeroToYear9999(t *testing.T) {
	cfg := leafConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	for _, at := range []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)} {
		snap := s.Snapshot()
		snap.Time = at
		r, err := fleet.Restore(cfg, snap)
		require.NoError(t, err, "%v", at)
		assert.Equal(t, at, r.Snapshot().Time)
	}
	snap := s.Snapshot()
	snap.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = fleet.Restore(cfg, snap)
	assert.ErrorIs(t, err, fleet.ErrInvalid)
}

// A borrowing flag on work of a queue in no cohort cannot be true.
func TestRestoreRefusesBorrowingWithoutACohort(t *testing.T) {
	cfg := leafConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Submit(t0, nodeJob("j", 1)))
	require.Len(t, s.Schedule(t0).Admit, 1)
	snap := s.Snapshot()
	snap.Running[0].Borrowing = true
	_, err = fleet.Restore(cfg, snap)
	var se *fleet.SnapshotError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "Running[0].Borrowing", se.Field)
	assert.Equal(t, "j", se.Workload)
}

// Every grace is bounded by MaxGrace, so every drain deadline falls
// within it: a class, an idle rule, a workload or a drain asking for more
// is refused.
func TestGraceBeyondMaxGraceIsRefused(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	cfg.Classes[1].Grace = fleet.MaxGrace + time.Second
	_, err := fleet.New(cfg)
	assert.ErrorIs(t, err, fleet.ErrInvalidConfig)

	s := newRef(t)
	w := training("w", 1, fleet.ClassReservedResearch, "research")
	w.Drain.GracePeriod = fleet.MaxGrace + time.Second
	assert.ErrorIs(t, s.Submit(t0, w), fleet.ErrInvalid)
	w.Drain.GracePeriod = fleet.MaxGrace
	require.NoError(t, s.Submit(t0, w))
	require.Len(t, s.Schedule(t0).Admit, 1)
	_, err = s.RequestDrain(t0, "w", fleet.MaxGrace+time.Second)
	assert.ErrorIs(t, err, fleet.ErrInvalid)
	d, err := s.RequestDrain(t0, "w", fleet.MaxGrace)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(fleet.MaxGrace), d.Deadline)
	_, err = fleet.Restore(fleet.ReferenceConfig(), throughJSON(t, s.Snapshot()))
	assert.NoError(t, err, "a drain of MaxGrace restores")
}
