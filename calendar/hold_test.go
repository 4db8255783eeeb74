package calendar_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

func approve(t *testing.T, c *calendar.Calendar, now time.Time, req calendar.Request) calendar.Booking {
	_, err := c.Propose(now, req, nil)
	require.NoError(t, err)
	b, err := c.Approve(now, req.ID, 0, "alice")
	require.NoError(t, err)
	return b
}

func TestHeldDueAndNextEvent(t *testing.T) {
	c, f := newReference(t)
	start := t0().Add(24 * time.Hour)
	b := approve(t, c, t0(), spineRequest("pretrain", start))
	spine, _ := f.Domain(1, "spine-0")

	hold := func(p calendar.Phase) calendar.Hold {
		return calendar.Hold{Booking: "pretrain", Queue: "research", Flavor: "H100", Domain: spine, Name: "spine-0",
			Phase: p, DrainAt: start.Add(-calendar.DefaultGrace), Start: start, End: b.End}
	}
	assert.Equal(t, []calendar.Hold{hold(calendar.Booked)}, c.Held(t0()))
	assert.Empty(t, c.Due(t0()))
	assert.Empty(t, c.Due(b.DrainAt().Add(-time.Nanosecond)))
	assert.Equal(t, []calendar.Hold{hold(calendar.Draining)}, c.Due(b.DrainAt()))
	assert.Equal(t, []calendar.Hold{hold(calendar.Active)}, c.Due(start))
	assert.Empty(t, c.Due(b.End))
	assert.Empty(t, c.Held(b.End))

	var events []time.Time
	for at, ok := t0(), true; ok; {
		if at, ok = c.NextEvent(at); ok {
			events = append(events, at)
		}
	}
	assert.Equal(t, []time.Time{b.DrainAt(), start, b.End}, events)

	// Shortened, then pruned once over.
	require.NoError(t, c.Shorten(start.Add(time.Hour), "pretrain", start.Add(2*time.Hour), "bob", "done early"))
	assert.Empty(t, c.Held(start.Add(2*time.Hour)))
	assert.Equal(t, 0, c.Prune(start.Add(time.Hour)))
	assert.Equal(t, 1, c.Prune(start.Add(2*time.Hour)))
	assert.Empty(t, c.Bookings())
	assert.Len(t, c.Log(), 2)
}

func TestCancelFreesTheBlock(t *testing.T) {
	c, _ := newReference(t)
	start := t0().Add(24 * time.Hour)
	approve(t, c, t0(), spineRequest("a", start))
	opts, err := c.Propose(t0(), calendar.Request{ID: "b", Queue: "batch", Flavor: "H100", GPUs: 64, Level: "leaf", Blocks: 1,
		Start: start, Duration: time.Hour}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"leaf-1-0"}, opts[0].DomainNames, "spine-0's leaves are held")
	require.NoError(t, c.Cancel(t0(), "a", "alice", "plans changed"))
	opts, err = c.Propose(t0(), calendar.Request{ID: "b", Queue: "batch", Flavor: "H100", GPUs: 64, Level: "leaf", Blocks: 1,
		Start: start, Duration: time.Hour}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"leaf-0-0"}, opts[0].DomainNames)
	assert.Len(t, c.Proposals(), 1)
}

func TestProposeRanksAndShapes(t *testing.T) {
	c, f := newReference(t)
	now, start := t0(), t0().Add(10*time.Hour)
	running := []calendar.Running{
		// spine-0: open-ended inference; spine-1: guaranteed research,
		// preemptible; spine-2: borrowed batch ending after the start;
		// spine-3: a run ending an hour before the drain.
		{ID: "chat", Queue: "prod-inference", Nodes: onNodes(f, "chat", "leaf", "leaf-0-0")},
		{ID: "sft", Queue: "research", Preemptible: true, Nodes: onNodes(f, "sft", "leaf", "leaf-1-0")},
		{ID: "evals", Queue: "batch", Preemptible: true, Borrowing: true, Nodes: onNodes(f, "evals", "leaf", "leaf-2-0"), End: start.Add(time.Hour)},
		{ID: "short", Queue: "research", Nodes: onNodes(f, "short", "leaf", "leaf-3-0"), End: start.Add(-time.Hour)},
	}
	opts, err := c.Propose(now, calendar.Request{ID: "two", Queue: "research", Flavor: "H100", GPUs: 1000, Level: "spine",
		Start: start, Duration: time.Hour}, running)
	require.NoError(t, err)
	require.Len(t, opts, 2)
	assert.Equal(t, []string{"spine-2", "spine-3"}, opts[0].DomainNames)
	assert.Equal(t, calendar.Displaced{Borrowed: 64, Workloads: []string{"evals"}}, opts[0].Displaced)
	assert.Equal(t, start.Add(-time.Hour), opts[0].FreeBy)
	assert.Equal(t, 1024, opts[0].GPUs)
	assert.Equal(t, 24, opts[0].Stranded)
	assert.Equal(t, []string{"spine-0", "spine-1"}, opts[1].DomainNames)
	assert.Equal(t, calendar.Displaced{Blocking: 64, Guaranteed: 64, Workloads: []string{"chat", "sft"}}, opts[1].Displaced)
	// 1,024 held by research against its 600: 1,800 + 424 > 2,048.
	require.NotNil(t, opts[0].Quota)
	assert.ErrorIs(t, opts[0].Quota, calendar.ErrOverCommitted)

	// Pods: 8 x 8 GPUs fit one leaf; 9 do not, so two leaves.
	pods := calendar.Request{ID: "pods", Queue: "research", Flavor: "H100", Level: "leaf",
		PodSets: []gang.PodSet{{Name: "w", Count: 9, GPUsPerPod: 8}}, Start: start, Duration: time.Hour}
	opts, err = c.Propose(now, pods, running)
	require.NoError(t, err)
	assert.Len(t, opts[0].DomainNames, 2)
	assert.Equal(t, 128, opts[0].GPUs)
	assert.Equal(t, 56, opts[0].Stranded)
	assert.True(t, opts[0].Feasible())
}

func TestScheduleAndBookings(t *testing.T) {
	// Batch is guaranteed 400 at night only; research books a spine at
	// night beyond its 600 guarantee... only while the night leaves room.
	spec := referenceQuota()
	spec.Nodes[3].Quotas[0].Nominal = 0
	sched, err := quota.NewSchedule(spec, quota.ScheduleSpec{Rules: []quota.ScheduleRule{
		{Node: "batch", Window: quota.Window{Start: quota.ClockOf(20, 0), End: quota.ClockOf(8, 0)},
			Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 248}},
	}}, time.UTC)
	require.NoError(t, err)
	f := mustFleet(t, topology.Reference())
	cfg := calendar.Config{Fleet: f, Quota: mustTree(t, spec), Schedule: sched}
	c, err := calendar.New(t0(), cfg)
	require.NoError(t, err)

	// Day, 10:00-18:00: 1,800 guaranteed + research's 1,024 - 600 = 2,224.
	day := calendar.Request{ID: "day", Queue: "research", Flavor: "H100", GPUs: 1024, Level: "spine",
		Start: t0().Add(time.Hour), Duration: 8 * time.Hour}
	opts, err := c.Propose(t0(), day, nil)
	require.NoError(t, err)
	assert.ErrorIs(t, opts[0].Quota, calendar.ErrOverCommitted)
	// One spine by day fits (1,800); running into the night it does not:
	// 2,048 at 20:00 with batch's 248.
	one := day
	one.GPUs = 512
	opts, err = c.Propose(t0(), one, nil)
	require.NoError(t, err)
	assert.Nil(t, opts[0].Quota)
	one.Duration = 12 * time.Hour
	opts, err = c.Propose(t0(), one, nil)
	require.NoError(t, err)
	assert.Nil(t, opts[0].Quota, "2,048 is still within capacity")
	// Ten leaves (640 GPUs) are 40 beyond research's guarantee: fine by
	// day, too many from 20:00.
	one.GPUs, one.Level, one.Blocks = 640, "leaf", 10
	opts, err = c.Propose(t0(), one, nil)
	require.NoError(t, err)
	require.NotNil(t, opts[0].Quota)
	assert.Equal(t, calendar.OverCommitError{Queue: "research", Flavor: "H100", At: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC),
		Committed: 2048 + 40, Capacity: 2048}, *opts[0].Quota)

	// With the 12-hour spine approved, a schedule raising batch further is refused.
	one.GPUs, one.Level, one.Blocks = 512, "spine", 0
	approve(t, c, t0(), one)
	bigger, err := quota.NewSchedule(spec, quota.ScheduleSpec{Rules: []quota.ScheduleRule{
		{Node: "batch", Window: quota.Window{Start: quota.ClockOf(20, 0), End: quota.ClockOf(8, 0)},
			Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 300}},
	}}, time.UTC)
	require.NoError(t, err)
	before := snapshotJSON(t, c)
	assert.ErrorIs(t, c.SetSchedule(t0(), bigger), calendar.ErrOverCommitted)
	assert.Equal(t, before, snapshotJSON(t, c))
	require.NoError(t, c.Validate(t0()))
}

func TestReplayAndRestore(t *testing.T) {
	c, _ := newReference(t)
	start := t0().Add(24 * time.Hour)
	approve(t, c, t0(), spineRequest("a", start))
	approve(t, c, t0(), calendar.Request{ID: "b", Queue: "batch", Flavor: "H100", GPUs: 64, Level: "leaf",
		Start: start, Duration: time.Hour})
	_, err := c.Propose(t0(), spineRequest("c", start.Add(200*time.Hour)), nil)
	require.NoError(t, err)
	require.NoError(t, c.Reject(t0(), "c", "carol", "no budget"))
	require.NoError(t, c.Shorten(t0(), "a", start.Add(time.Hour), "alice", ""))
	require.NoError(t, c.Cancel(t0().Add(time.Hour), "b", "bob", ""))
	_, err = c.Propose(t0().Add(time.Hour), spineRequest("d", start.Add(300*time.Hour)), nil)
	require.NoError(t, err)

	data, err := json.Marshal(c.Log())
	require.NoError(t, err)
	var log []calendar.Decision
	require.NoError(t, json.Unmarshal(data, &log))
	cfg := calendar.Config{Fleet: mustFleet(t, topology.Reference()), Quota: mustTree(t, referenceQuota())}
	r, err := calendar.Replay(t0(), cfg, log)
	require.NoError(t, err)
	assert.Equal(t, c.Bookings(), r.Bookings())
	assert.Equal(t, c.Log(), r.Log())
	assert.Equal(t, []calendar.Kind{calendar.Approve, calendar.Approve, calendar.Reject, calendar.Shorten, calendar.Cancel},
		[]calendar.Kind{log[0].Kind, log[1].Kind, log[2].Kind, log[3].Kind, log[4].Kind})
	assert.Contains(t, string(data), `"kind":"approve"`)

	data, err = json.Marshal(c.Snapshot())
	require.NoError(t, err)
	var st calendar.State
	require.NoError(t, json.Unmarshal(data, &st))
	s, err := calendar.Restore(cfg, st)
	require.NoError(t, err)
	assert.Equal(t, c.Snapshot(), s.Snapshot())
	_, err = s.Approve(t0().Add(time.Hour), "d", 0, "alice") // a restored proposal can be approved
	require.NoError(t, err)

	// A log out of order, or one whose approvals conflict, is refused.
	bad := append([]calendar.Decision(nil), log...)
	bad[1].Seq = 7
	_, err = calendar.Replay(t0(), cfg, bad)
	assert.ErrorIs(t, err, calendar.ErrInvalidLog)
	dup := []calendar.Decision{log[0], log[0]}
	dup[1].Seq = 2
	_, err = calendar.Replay(t0(), cfg, dup)
	assert.ErrorIs(t, err, calendar.ErrInvalidLog)
	assert.ErrorIs(t, err, calendar.ErrDuplicateID)
	// A state whose bookings conflict is refused.
	st.Bookings = append(st.Bookings, st.Bookings[0])
	st.Bookings[1].ID = "copy"
	_, err = calendar.Restore(cfg, st)
	assert.ErrorIs(t, err, calendar.ErrConflict)
}

// A snapshot taken after a schedule change restores: the promise was
// checked from the change on, so Restore checks from then on, not from an
// earlier instant the new schedule was never checked at.
func TestSnapshotAfterAScheduleChangeRestores(t *testing.T) {
	c, f := newReference(t)
	cfg := calendar.Config{Fleet: f, Quota: mustTree(t, referenceQuota())}
	approve(t, c, t0(), spineRequest("a", t0()))
	later := t0().Add(time.Hour)
	require.NoError(t, c.SetSchedule(later, nil))
	st := c.Snapshot()
	assert.Equal(t, later, st.Time, "the snapshot is of the state as of the change")
	_, err := calendar.Restore(cfg, st)
	require.NoError(t, err)
}
