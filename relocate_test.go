package fleet_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/topology"
)

// A node fails inside a booked spine, before or during the window. The
// host sees it (an event, Decisions.Broken, Explain) with the calendar's
// offer; a spine booked whole is offered a whole healthy spine, one booked
// with room to spare keeps its block. Accepting the move is journaled,
// the booking's gang then starts in the replacement spine, and Snapshot
// and Replay keep the offer and the move.
func TestBookedNodeFailure(t *testing.T) {
	start := t0.Add(24 * time.Hour)
	tests := []struct {
		name   string
		nodes  int           // the booking's gang: whole 8-GPU nodes
		failAt time.Duration // after the start (negative: before)
		want   calendar.Remedy
		accept bool
	}{
		{name: "whole spine, a day before the start, moved", nodes: 64, failAt: -23 * time.Hour, want: calendar.Move, accept: true},
		{name: "whole spine, inside the window, moved", nodes: 64, failAt: time.Hour, want: calendar.Move, accept: true},
		{name: "whole spine, move not accepted", nodes: 64, failAt: -time.Hour, want: calendar.Move},
		{name: "56 nodes of a spine, kept", nodes: 56, failAt: -time.Hour, want: calendar.Keep},
		{name: "56 nodes of a spine, inside the window, kept", nodes: 56, failAt: time.Hour, want: calendar.Keep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newRef(t)
			var j bytes.Buffer
			jr := fleet.NewJournal(s, &j)
			_, err := jr.Propose(t0, calendar.Request{ID: "pretrain", Queue: "research", Flavor: "H100",
				GPUs: tt.nodes * 8, Level: "spine", Start: start, Duration: 6 * time.Hour})
			require.NoError(t, err)
			b, err := jr.Approve(t0, "pretrain", 0, "gpu-council")
			require.NoError(t, err)
			old := b.Domains[0]
			spineOf := func(node string) string { return "spine-" + strings.Split(node, "-")[1] }
			gangID := "run-1"
			submit := func(now time.Time, id string) {
				g := training(id, tt.nodes, fleet.ClassReservedResearch, "research")
				g.Booking = "pretrain"
				require.NoError(t, jr.Submit(now, g))
			}
			failAt := start.Add(tt.failAt)
			if failAt.After(start) {
				submit(start, gangID)
				d := jr.Schedule(start)
				require.Len(t, d.Admit, 1)
				assert.Equal(t, old, spineOf(d.Admit[0].Pods[0].Node))
			} else {
				submit(t0, gangID)
			}

			// The failure: a node of the booked spine.
			node := "node-" + strings.TrimPrefix(old, "spine-") + "-0-3"
			affected, err := jr.SetNodeHealth(failAt, node, topology.Down)
			require.NoError(t, err)
			if failAt.After(start) && tt.want == calendar.Move {
				assert.Equal(t, []string{gangID}, affected, "the gang on the lost node fails")
			}
			d := jr.Schedule(failAt)
			require.Len(t, d.Broken, 1)
			o := d.Broken[0]
			assert.Equal(t, tt.want, o.Remedy)
			assert.Equal(t, []string{node}, o.Down)
			assert.Equal(t, []string{old}, o.Broken)
			var broken *fleet.Event
			for i, e := range d.Events {
				if e.Kind == fleet.EventBlockBroken {
					broken = &d.Events[i]
				}
			}
			require.NotNil(t, broken, "an event for the broken block")
			assert.Equal(t, "pretrain", broken.Booking)
			assert.Equal(t, node, broken.Node)
			assert.Equal(t, tt.want.String(), broken.Reason)
			assert.Equal(t, strings.Join(o.Replacements, "+"), broken.NewNode)
			if tt.want == calendar.Move {
				require.Len(t, o.Replacements, 1)
				assert.NotEqual(t, old, o.Replacements[0])
			}
			if x, err := s.Explain(gangID); err == nil {
				assert.Contains(t, x.Message, "booking pretrain lost node ["+node+"]")
			}

			// A restart keeps the offer.
			r, err := fleet.Restore(fleet.ReferenceConfig(), s.Snapshot())
			require.NoError(t, err)
			require.Equal(t, s.Snapshot(), r.Snapshot())
			require.Len(t, r.Snapshot().Calendar.Offers, 1)

			now := failAt.Add(time.Minute)
			if tt.accept {
				moved, err := jr.RelocateBooking(now, "pretrain", "gpu-council")
				require.NoError(t, err)
				assert.Equal(t, o.Replacements, moved.Domains)
				d = jr.Schedule(now)
				assert.Empty(t, d.Broken)
				assert.Contains(t, kinds(d.Events), fleet.EventRelocated)
				log := s.Snapshot().Calendar.Log
				assert.Equal(t, calendar.Relocate, log[len(log)-1].Kind)
				assert.Equal(t, "gpu-council", log[len(log)-1].Who)
			} else {
				_, err := jr.RelocateBooking(now, "nope", "gpu-council")
				require.ErrorIs(t, err, calendar.ErrUnknownBooking)
			}
			if failAt.After(start) && tt.want == calendar.Move {
				gangID = "run-2"
				submit(now, gangID)
			}
			at := now
			if at.Before(start) {
				at = start
			}
			d = jr.Schedule(at)
			var admitted *fleet.Admission
			for i, a := range d.Admit {
				if a.ID == gangID {
					admitted = &d.Admit[i]
				}
			}
			if tt.want == calendar.Move && !tt.accept {
				// The block without its node no longer holds the gang.
				assert.Nil(t, admitted)
				x, err := s.Explain(gangID)
				require.NoError(t, err)
				assert.Contains(t, x.Message, "offers ["+o.Replacements[0]+"]")
			} else if failAt.Before(start) || tt.want == calendar.Move {
				require.NotNil(t, admitted, "%s starts at %s", gangID, at)
				want := old
				if tt.accept {
					want = o.Replacements[0]
				}
				for _, p := range admitted.Pods {
					assert.Equal(t, want, spineOf(p.Node))
					assert.NotEqual(t, node, p.Node)
				}
			}

			// The repair withdraws what is left of the offer.
			_, err = jr.SetNodeHealth(at.Add(time.Minute), node, topology.Healthy)
			require.NoError(t, err)
			d = jr.Schedule(at.Add(time.Minute))
			assert.Empty(t, d.Broken)
			if !tt.accept {
				assert.Contains(t, kinds(d.Events), fleet.EventBlockWhole)
			}

			require.NoError(t, jr.Err())
			replayed, err := fleet.Replay(fleet.ReferenceConfig(), &j, nil)
			require.NoError(t, err)
			assert.Equal(t, s.Snapshot(), replayed.Snapshot())
		})
	}
}

func kinds(events []fleet.Event) []fleet.EventKind {
	var out []fleet.EventKind
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

// A booked block's offer names what the replacement would displace.
func ExampleScheduler_RelocateBooking() {
	s, _ := fleet.New(fleet.ReferenceConfig())
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	start := now.Add(48 * time.Hour)
	_, _ = s.Propose(now, calendar.Request{ID: "pretrain", Queue: "research", Flavor: "H100", GPUs: 512,
		Level: "spine", Start: start, Duration: 24 * time.Hour})
	_, _ = s.Approve(now, "pretrain", 0, "gpu-council")

	now = now.Add(time.Hour)
	_, _ = s.SetNodeHealth(now, "node-0-2-5", topology.Down)
	d := s.Schedule(now)
	for _, o := range d.Broken {
		fmt.Println(o)
	}
	b, err := s.RelocateBooking(now, "pretrain", "gpu-council")
	fmt.Println(b.Domains, err)
	// Output:
	// booking pretrain lost node [node-0-2-5] of [spine-0] at 2026-11-01 01:00:00; the calendar offers [spine-1] in its place
	// [spine-1] <nil>
}
