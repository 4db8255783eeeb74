package calendar_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
)

func snapshotJSON(t *testing.T, c *calendar.Calendar) string {
	b, err := json.Marshal(c.Snapshot())
	require.NoError(t, err)
	return string(b)
}

func TestProposeRefusals(t *testing.T) {
	start := t0().Add(48 * time.Hour)
	for _, tc := range []struct {
		name    string
		edit    func(*calendar.Request)
		running []calendar.Running
		want    error
	}{
		{"start in the past", func(r *calendar.Request) { r.Start = t0().Add(-time.Second) }, nil, calendar.ErrStartInPast},
		{"zero duration", func(r *calendar.Request) { r.Duration = 0 }, nil, calendar.ErrBadDuration},
		{"negative duration", func(r *calendar.Request) { r.Duration = -time.Hour }, nil, calendar.ErrBadDuration},
		{"unknown level", func(r *calendar.Request) { r.Level = "rack" }, nil, calendar.ErrUnknownLevel},
		{"unknown flavor", func(r *calendar.Request) { r.Flavor = "B200" }, nil, calendar.ErrUnknownFlavor},
		{"unknown pool", func(r *calendar.Request) { r.Pool = "gold" }, nil, calendar.ErrUnknownFlavor},
		{"unknown queue", func(r *calendar.Request) { r.Queue = "nobody" }, nil, calendar.ErrUnknownQueue},
		{"cohort as queue", func(r *calendar.Request) { r.Queue = "all" }, nil, calendar.ErrUnknownQueue},
		{"more GPUs than the fleet", func(r *calendar.Request) { r.GPUs = 4096 }, nil, calendar.ErrTooLarge},
		{"more blocks than the level", func(r *calendar.Request) { r.Blocks = 5 }, nil, calendar.ErrTooLarge},
		{"no block holds it", func(r *calendar.Request) { r.GPUs, r.Blocks = 1000, 1 }, nil, calendar.ErrTooLarge},
		{"empty ID", func(r *calendar.Request) { r.ID = "" }, nil, calendar.ErrInvalidRequest},
		{"no GPUs", func(r *calendar.Request) { r.GPUs = 0 }, nil, calendar.ErrInvalidRequest},
		{"negative GPUs", func(r *calendar.Request) { r.GPUs = -8 }, nil, calendar.ErrInvalidRequest},
		{"negative blocks", func(r *calendar.Request) { r.Blocks = -1 }, nil, calendar.ErrInvalidRequest},
		{"negative grace", func(r *calendar.Request) { r.Grace = -time.Second }, nil, calendar.ErrInvalidRequest},
		{"pod larger than a node", func(r *calendar.Request) {
			r.GPUs, r.PodSets = 0, []gang.PodSet{{Name: "w", Count: 1, GPUsPerPod: 16}}
		}, nil, calendar.ErrInvalidRequest},
		{"shared pods", func(r *calendar.Request) {
			r.GPUs, r.PodSets = 0, []gang.PodSet{{Name: "w", Count: 4, GPUShare: 500}}
		}, nil, calendar.ErrInvalidRequest},
		{"GPUs disagree with pods", func(r *calendar.Request) {
			r.PodSets = []gang.PodSet{{Name: "w", Count: 4, GPUsPerPod: 8}}
		}, nil, calendar.ErrInvalidRequest},
		{"approved ID", func(r *calendar.Request) { r.ID = "taken" }, nil, calendar.ErrDuplicateID},
		{"running on an unknown node", nil, []calendar.Running{{ID: "ghost", Nodes: []placement.NodeGPUs{{Node: 9999, GPUs: 8}}}}, calendar.ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newReference(t)
			_, err := c.Propose(t0(), spineRequest("taken", start.Add(30*24*time.Hour)), nil)
			require.NoError(t, err)
			_, err = c.Approve(t0(), "taken", 0, "alice")
			require.NoError(t, err)
			before := snapshotJSON(t, c)

			req := spineRequest("new", start)
			if tc.edit != nil {
				tc.edit(&req)
			}
			opts, err := c.Propose(t0(), req, tc.running)
			assert.Nil(t, opts)
			assert.ErrorIs(t, err, tc.want)
			var ce *calendar.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "propose", ce.Op)
			assert.Equal(t, before, snapshotJSON(t, c), "state changed")
		})
	}
}

func TestDecisionRefusals(t *testing.T) {
	start := t0().Add(48 * time.Hour)
	type fixture struct {
		c *calendar.Calendar
	}
	setup := func(t *testing.T) fixture {
		c, _ := newReference(t)
		// "held" is approved on spine-3; "same" asks for the same window
		// (its option 0 is spine-3 too, proposed before the approval);
		// "second" is research's second spine (over-commits).
		for _, id := range []string{"held", "same"} {
			_, err := c.Propose(t0(), spineRequest(id, start), nil)
			require.NoError(t, err)
		}
		_, err := c.Approve(t0(), "held", 0, "alice")
		require.NoError(t, err)
		_, err = c.Propose(t0(), spineRequest("second", start.Add(time.Hour)), nil)
		require.NoError(t, err)
		return fixture{c}
	}
	for _, tc := range []struct {
		name string
		call func(c *calendar.Calendar) error
		want error
	}{
		{"approve without who", func(c *calendar.Calendar) error { _, err := c.Approve(t0(), "same", 1, ""); return err }, calendar.ErrNoDecider},
		{"approve unknown proposal", func(c *calendar.Calendar) error { _, err := c.Approve(t0(), "nope", 0, "bob"); return err }, calendar.ErrUnknownProposal},
		{"approve unknown option", func(c *calendar.Calendar) error { _, err := c.Approve(t0(), "same", 7, "bob"); return err }, calendar.ErrUnknownOption},
		{"approve negative option", func(c *calendar.Calendar) error { _, err := c.Approve(t0(), "same", -1, "bob"); return err }, calendar.ErrUnknownOption},
		{"approve after the start", func(c *calendar.Calendar) error {
			_, err := c.Approve(start.Add(time.Minute), "same", 1, "bob")
			return err
		}, calendar.ErrStartInPast},
		{"approve the same block twice", func(c *calendar.Calendar) error { _, err := c.Approve(t0(), "same", 0, "bob"); return err }, calendar.ErrConflict},
		{"approve beyond capacity", func(c *calendar.Calendar) error { _, err := c.Approve(t0(), "second", 0, "bob"); return err }, calendar.ErrOverCommitted},
		{"reject without who", func(c *calendar.Calendar) error { return c.Reject(t0(), "same", "", "") }, calendar.ErrNoDecider},
		{"reject unknown proposal", func(c *calendar.Calendar) error { return c.Reject(t0(), "held", "bob", "") }, calendar.ErrUnknownProposal},
		{"cancel without who", func(c *calendar.Calendar) error { return c.Cancel(t0(), "held", "", "") }, calendar.ErrNoDecider},
		{"cancel unknown booking", func(c *calendar.Calendar) error { return c.Cancel(t0(), "same", "bob", "") }, calendar.ErrUnknownBooking},
		{"cancel after the end", func(c *calendar.Calendar) error { return c.Cancel(start.Add(72*time.Hour), "held", "bob", "") }, calendar.ErrEnded},
		{"shorten without who", func(c *calendar.Calendar) error { return c.Shorten(t0(), "held", start.Add(time.Hour), "", "") }, calendar.ErrNoDecider},
		{"shorten unknown booking", func(c *calendar.Calendar) error { return c.Shorten(t0(), "same", start.Add(time.Hour), "bob", "") }, calendar.ErrUnknownBooking},
		{"shorten to the start", func(c *calendar.Calendar) error { return c.Shorten(t0(), "held", start, "bob", "") }, calendar.ErrBadEnd},
		{"shorten to a later end", func(c *calendar.Calendar) error { return c.Shorten(t0(), "held", start.Add(73*time.Hour), "bob", "") }, calendar.ErrBadEnd},
		{"shorten into the past", func(c *calendar.Calendar) error {
			return c.Shorten(start.Add(2*time.Hour), "held", start.Add(time.Hour), "bob", "")
		}, calendar.ErrBadEnd},
		{"shorten after the end", func(c *calendar.Calendar) error {
			return c.Shorten(start.Add(80*time.Hour), "held", start.Add(time.Hour), "bob", "")
		}, calendar.ErrEnded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			before := snapshotJSON(t, f.c)
			err := tc.call(f.c)
			assert.ErrorIs(t, err, tc.want)
			assert.Equal(t, before, snapshotJSON(t, f.c), "state changed")
		})
	}
}

func TestConflictAndOverCommitDetails(t *testing.T) {
	c, _ := newReference(t)
	start := t0().Add(48 * time.Hour)
	for _, id := range []string{"a", "b"} {
		_, err := c.Propose(t0(), spineRequest(id, start), nil)
		require.NoError(t, err)
	}
	_, err := c.Approve(t0(), "a", 0, "alice")
	require.NoError(t, err)
	_, err = c.Approve(t0(), "b", 0, "bob")
	var ce *calendar.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []calendar.Conflict{{Booking: "a", Queue: "research", Domain: "spine-0", Start: start, End: start.Add(72 * time.Hour)}}, ce.Conflicts)

	// Proposed again, b's options now say so: spine-0 is last, with its conflict.
	opts, err := c.Propose(t0(), spineRequest("b", start.Add(24*time.Hour)), nil)
	require.NoError(t, err)
	last := opts[len(opts)-1]
	assert.Equal(t, []string{"spine-0"}, last.DomainNames)
	assert.False(t, last.Feasible())
	require.Len(t, last.Conflicts, 1)
	assert.Equal(t, "a", last.Conflicts[0].Booking)
	var oe *calendar.OverCommitError
	_, err = c.Approve(t0(), "b", 0, "bob")
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, calendar.OverCommitError{Queue: "research", Flavor: "H100", At: start.Add(24 * time.Hour), Committed: 2224, Capacity: 2048}, *oe)

	// A leaf inside the booked spine conflicts; a leaf elsewhere does not.
	leaf := calendar.Request{ID: "leaf", Queue: "batch", Flavor: "H100", GPUs: 64, Level: "leaf", Blocks: 1,
		Start: start.Add(time.Hour), Duration: time.Hour}
	opts, err = c.Propose(t0(), leaf, nil)
	require.NoError(t, err)
	for _, o := range opts {
		assert.Empty(t, o.Conflicts)
		assert.NotContains(t, o.DomainNames[0], "leaf-0-")
	}
}

// TestProposalExpiresWhenItsStartPasses: a proposal nobody decided stays
// approvable until its start; a Propose after that drops it, so pending
// proposals do not pile up in a long-lived calendar or its snapshots.
func TestProposalExpiresWhenItsStartPasses(t *testing.T) {
	c, _ := newReference(t)
	start := t0().Add(time.Hour)
	_, err := c.Propose(t0(), spineRequest("early", start), nil)
	require.NoError(t, err)
	_, err = c.Propose(t0(), spineRequest("late", start.Add(72*time.Hour)), nil)
	require.NoError(t, err)

	_, err = c.Approve(start.Add(time.Minute), "early", 0, "bob")
	require.ErrorIs(t, err, calendar.ErrStartInPast, "still proposed: the answer names the start")

	_, err = c.Propose(start.Add(time.Minute), spineRequest("next", start.Add(48*time.Hour)), nil)
	require.NoError(t, err)
	var ids []string
	for _, p := range c.Snapshot().Proposals {
		ids = append(ids, p.Request.ID)
	}
	assert.Equal(t, []string{"late", "next"}, ids)
	_, err = c.Approve(start.Add(time.Minute), "early", 0, "bob")
	require.ErrorIs(t, err, calendar.ErrUnknownProposal)
	assert.Contains(t, err.Error(), "(or its start passed)")
}
