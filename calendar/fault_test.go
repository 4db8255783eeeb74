package calendar_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// A node down inside a booked block gets the offer the calendar can
// make: keep the block when its other nodes still hold the booking, move
// to a whole healthy block of the same level when one is free for the
// rest of the window, none otherwise.
func TestNodeDownOffers(t *testing.T) {
	start := t0().Add(24 * time.Hour)
	leaf := func(id string, gpus int) calendar.Request {
		return calendar.Request{ID: id, Queue: "research", Flavor: "H100", GPUs: gpus, Level: "leaf",
			Start: start, Duration: 24 * time.Hour}
	}
	tests := []struct {
		name string
		// book approves requests in order; the last one is the booking
		// whose block loses a node.
		book  []calendar.Request
		at    time.Time // when the node fails
		block int       // 0: the first node of the booking's first block
		want  calendar.Offer
	}{{
		name: "a leaf of 56 GPUs booked on 64: kept",
		book: []calendar.Request{leaf("small", 56)},
		at:   t0(),
		want: calendar.Offer{Booking: "small", Queue: "research", Since: t0(), Down: []string{"node-0-0-0"},
			Broken: []string{"leaf-0-0"}, Remedy: calendar.Keep, Healthy: 56},
	}, {
		name: "a full leaf: the next healthy leaf, before the window",
		book: []calendar.Request{leaf("full", 64)},
		at:   t0(),
		want: calendar.Offer{Booking: "full", Queue: "research", Since: t0(), Down: []string{"node-0-0-0"},
			Broken: []string{"leaf-0-0"}, Remedy: calendar.Move, Replacements: []string{"leaf-0-1"}, Healthy: 56},
	}, {
		name: "a full leaf inside its window, its neighbour booked: the leaf after",
		book: []calendar.Request{leaf("other", 64), leaf("full", 64)},
		at:   start.Add(time.Hour),
		want: calendar.Offer{Booking: "full", Queue: "research", Since: start.Add(time.Hour), Down: []string{"node-0-1-0"},
			Broken: []string{"leaf-0-1"}, Remedy: calendar.Move, Replacements: []string{"leaf-0-2"}, Healthy: 56},
	}, {
		name: "pods of 8 GPUs that no longer fit: moved",
		book: []calendar.Request{{ID: "pods", Queue: "research", Flavor: "H100", Level: "leaf",
			PodSets: []gang.PodSet{{Name: "w", Count: 8, GPUsPerPod: 8}}, Start: start, Duration: time.Hour}},
		at: t0(),
		want: calendar.Offer{Booking: "pods", Queue: "research", Since: t0(), Down: []string{"node-0-0-0"},
			Broken: []string{"leaf-0-0"}, Remedy: calendar.Move, Replacements: []string{"leaf-0-1"}, Healthy: 56},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newReference(t)
			var b calendar.Booking
			for _, r := range tt.book {
				b = approve(t, c, t0(), r)
			}
			l, _ := f.Level(b.Level)
			d, _ := f.Domain(l, b.Domains[0])
			n, _ := f.Nodes(d)
			require.NoError(t, f.SetHealth(n, topology.Down))
			got := c.NodeDown(tt.at, n, nil)
			require.Len(t, got, 1)
			assert.Equal(t, tt.want, got[0])
			t.Log(got[0])
			o, ok := c.OfferFor(b.ID)
			require.True(t, ok)
			assert.Equal(t, tt.want, o)

			// A repair withdraws the offer.
			require.NoError(t, f.SetHealth(n, topology.Healthy))
			assert.Equal(t, []string{b.ID}, c.NodeUp(tt.at.Add(time.Minute), n, nil))
			assert.Empty(t, c.Offers(tt.at))
		})
	}
}

// When every other block of the level is booked, nothing can replace a
// broken full block: the offer says how short the booking is.
func TestNodeDownNoReplacement(t *testing.T) {
	f := mustFleet(t, topology.Reference())
	spec := referenceQuota()
	for i := range spec.Nodes {
		for j := range spec.Nodes[i].Quotas {
			spec.Nodes[i].Quotas[j].Nominal = 0 // nothing guaranteed: every spine can be booked
		}
	}
	c, err := calendar.New(t0(), calendar.Config{Fleet: f, Quota: mustTree(t, spec)})
	require.NoError(t, err)
	start := t0().Add(24 * time.Hour)
	for i, id := range []string{"a", "b", "c", "d"} {
		// "d" starts later, inside "c"'s window: it still rules its spine out.
		approve(t, c, t0(), spineRequest(id, start.Add(time.Duration(i/3)*time.Hour)))
	}
	b, _ := c.Booking("c")
	l, _ := f.Level("spine")
	d, _ := f.Domain(l, b.Domains[0])
	n, _ := f.Nodes(d)
	require.NoError(t, f.SetHealth(n+1, topology.Down))
	got := c.NodeDown(t0(), n+1, nil)
	require.Len(t, got, 1)
	assert.Equal(t, calendar.None, got[0].Remedy)
	assert.Equal(t, 8, got[0].Short)
	assert.Equal(t, 504, got[0].Healthy)
	_, err = c.Relocate(t0(), "c", "alice")
	assert.ErrorIs(t, err, calendar.ErrNoOffer)
}

// Relocating is a journaled decision: the booking holds the replacement,
// the old block is free, the log replays to the same bookings, a snapshot
// keeps pending offers, and a second relocation is refused.
func TestRelocate(t *testing.T) {
	c, f := newReference(t)
	start := t0().Add(24 * time.Hour)
	b := approve(t, c, t0(), spineRequest("pretrain", start))
	require.Equal(t, []string{"spine-0"}, b.Domains)
	l, _ := f.Level("spine")
	d, _ := f.Domain(l, "spine-0")
	n, _ := f.Nodes(d)
	require.NoError(t, f.SetHealth(n+3, topology.Down))
	// A proposal running on spine-1 makes spine-2 the better replacement.
	running := []calendar.Running{{ID: "inf", Queue: "prod-inference", Nodes: onNodes(f, "inf", "spine", "spine-1")}}
	offers := c.NodeDown(t0(), n+3, running)
	require.Len(t, offers, 1)
	assert.Equal(t, []string{"spine-2"}, offers[0].Replacements)

	// The offer survives a snapshot.
	raw, err := json.Marshal(c.Snapshot())
	require.NoError(t, err)
	var st calendar.State
	require.NoError(t, json.Unmarshal(raw, &st))
	c2, err := calendar.Restore(calendar.Config{Fleet: f, Quota: mustTree(t, referenceQuota())}, st)
	require.NoError(t, err)
	assert.Equal(t, c.Offers(t0()), c2.Offers(t0()))

	_, err = c.Relocate(t0(), "pretrain", "")
	assert.ErrorIs(t, err, calendar.ErrNoDecider)
	moved, err := c.Relocate(t0().Add(time.Minute), "pretrain", "bob")
	require.NoError(t, err)
	assert.Equal(t, []string{"spine-2"}, moved.Domains)
	assert.Empty(t, c.Offers(t0()))
	_, err = c.Relocate(t0().Add(time.Minute), "pretrain", "bob")
	assert.ErrorIs(t, err, calendar.ErrNoOffer)
	log := c.Log()
	require.Len(t, log, 2)
	assert.Equal(t, calendar.Decision{Seq: 2, At: t0().Add(time.Minute), Who: "bob", Kind: calendar.Relocate,
		Booking: "pretrain", From: []string{"spine-0"}, To: []string{"spine-2"}}, log[1])

	// spine-0 is free again: another booking may take it.
	other := spineRequest("next", start)
	other.Queue = "prod-inference"
	opts, err := c.Propose(t0().Add(time.Minute), other, nil)
	require.NoError(t, err)
	assert.Contains(t, names(opts), "spine-0")

	r, err := calendar.Replay(t0(), calendar.Config{Fleet: f, Quota: mustTree(t, referenceQuota())}, log)
	require.NoError(t, err)
	assert.Equal(t, c.Bookings(), r.Bookings())

	// A relocation whose replacement is taken meanwhile is refused whole.
	c3, err := calendar.Replay(t0(), calendar.Config{Fleet: f, Quota: mustTree(t, referenceQuota())}, log[:1])
	require.NoError(t, err)
	// Work that cannot be drained on spines 1 and 3 makes spine-2 the
	// blocker's first option.
	running = []calendar.Running{
		{ID: "x", Queue: "prod-inference", Nodes: onNodes(f, "x", "spine", "spine-1")},
		{ID: "y", Queue: "prod-inference", Nodes: onNodes(f, "y", "spine", "spine-3")},
	}
	blocker := spineRequest("blocker", start)
	blocker.Queue = "prod-inference"
	opts, err = c3.Propose(t0(), blocker, running)
	require.NoError(t, err)
	require.Equal(t, []string{"spine-2"}, opts[0].DomainNames)
	_, err = c3.Approve(t0(), "blocker", 0, "carol")
	require.NoError(t, err)
	bad := log[1]
	bad.Seq = 3
	_, err = calendar.Replay(t0(), calendar.Config{Fleet: f, Quota: mustTree(t, referenceQuota())}, append(c3.Log(), bad))
	var ce *calendar.ConflictError
	assert.True(t, errors.As(err, &ce), "%v", err)
}

func names(opts []calendar.Option) []string {
	var out []string
	for _, o := range opts {
		out = append(out, o.DomainNames...)
	}
	return out
}
