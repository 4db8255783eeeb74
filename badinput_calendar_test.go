package fleet_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/quota"
)

// A booking that would end past year 9999 is refused at Propose: a
// snapshot holding it could not be marshalled (RFC 3339 holds years
// 0000-9999). So is a call whose now is past it.
func TestABookingEndingInYear10000IsRefused(t *testing.T) {
	s := newRef(t)
	before := s.Snapshot()
	start := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	_, err := s.Propose(t0, calendar.Request{ID: "far", Queue: "research", Flavor: "H100", GPUs: 64, Level: "leaf",
		Start: start, Duration: 48 * time.Hour})
	assert.ErrorIs(t, err, calendar.ErrBadDuration)
	assert.ErrorContains(t, err, "RFC 3339")
	assert.Equal(t, before, s.Snapshot())
	_, err = json.Marshal(s.Snapshot())
	require.NoError(t, err)

	_, err = s.Propose(t0, calendar.Request{ID: "last", Queue: "research", Flavor: "H100", GPUs: 64, Level: "leaf",
		Start: start, Duration: 23 * time.Hour})
	require.NoError(t, err, "the last day RFC 3339 holds is fine")

	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	err = s.Submit(late, training("late", 1, fleet.ClassReservedResearch, "research"))
	assert.ErrorIs(t, err, fleet.ErrInvalid)
	s.Schedule(late)
	assert.Equal(t, t0, s.Snapshot().Time, "Schedule treats it as the scheduler's now")
	last := time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC)
	require.NoError(t, s.Submit(last, training("last", 1, fleet.ClassReservedResearch, "research")),
		"a now in year 9999 is within RFC 3339")
	assert.Equal(t, last, s.Snapshot().Time)
	_, err = json.Marshal(s.Snapshot())
	assert.NoError(t, err)
}

// Bookings are promises a planned removal may not break: RemoveNode of a
// node inside an approved block not yet over is refused (ErrNodeBusy,
// naming the booking), and so is one that leaves guarantees plus
// bookings above the GPUs in service (ErrOverCapacity). Once the booking
// has ended the node may go, and the calendar counts it out: a later
// booking that needs it is refused.
func TestRemoveNodeInsideABookedBlockIsRefused(t *testing.T) {
	cfg := twoLeafConfig()
	cfg.Quota.Nodes = append(cfg.Quota.Nodes, quota.NodeSpec{Name: "ops", Kind: quota.Queue,
		Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 32}}})
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	_, err = s.Propose(t0, calendar.Request{ID: "A", Queue: "team", Flavor: "H100", GPUs: 32, Level: "leaf",
		Start: t0.Add(time.Hour), Duration: 2 * time.Hour})
	require.NoError(t, err)
	a, err := s.Approve(t0, "A", 0, "council")
	require.NoError(t, err)
	inside, outside := node(0, 1), node(1, 1)
	if a.Domains[0] != "leaf-0" {
		inside, outside = outside, inside
	}
	for _, tt := range []struct {
		name, node string
		at         time.Duration
		want       []error
	}{
		{"inside the block, before the start", inside, 0, []error{fleet.ErrNodeBusy, calendar.ErrConflict}},
		{"inside the block, in the window", inside, 2 * time.Hour, []error{fleet.ErrNodeBusy, calendar.ErrConflict}},
		{"outside it, over the promise", outside, 0, []error{fleet.ErrOverCapacity, calendar.ErrOverCommitted}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Snapshot()
			err := s.RemoveNode(t0.Add(tt.at), tt.node)
			for _, w := range tt.want {
				assert.ErrorIs(t, err, w)
			}
			if tt.node == inside {
				assert.ErrorContains(t, err, `"A"`)
			}
			assert.Equal(t, before, s.Snapshot(), "state unchanged")
		})
	}
	// After the booking, the node may go; a booking needing it is refused.
	after := t0.Add(3 * time.Hour)
	require.NoError(t, s.RemoveNode(after, inside))
	_, err = s.Propose(after, calendar.Request{ID: "B", Queue: "team", Flavor: "H100", GPUs: 32, Level: "leaf",
		Start: after.Add(time.Hour), Duration: time.Hour})
	if err == nil {
		_, err = s.Approve(after, "B", 0, "council")
	}
	assert.ErrorIs(t, err, calendar.ErrOverCommitted, "32 guaranteed + 32 booked > 56 in service")
	require.NoError(t, s.AddNode(after, inside))
	_, err = s.Propose(after, calendar.Request{ID: "C", Queue: "team", Flavor: "H100", GPUs: 32, Level: "leaf",
		Start: after.Add(time.Hour), Duration: time.Hour})
	require.NoError(t, err)
	_, err = s.Approve(after, "C", 0, "council")
	require.NoError(t, err, "back in service, the node counts again")
	_, err = fleet.Restore(cfg, throughJSON(t, s.Snapshot()))
	require.NoError(t, err)
}
