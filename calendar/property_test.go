package calendar_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// world is a random small fleet, quota tree and schedule.
type world struct {
	fleet *topology.Fleet
	tree  *quota.Tree
	sched *quota.Schedule
	spec  quota.Spec
	cfg   calendar.Config
	gpus  int64
}

func drawWorld(t *rapid.T, start time.Time) world {
	fleet, err := topology.New(topology.Uniform(topology.UniformSpec{
		Levels: []string{"spine", "leaf", "node"}, Fanout: []int{3, 2, 2}, GPUsPerNode: 4, Flavor: "H100",
	}))
	require.NoError(t, err)
	var w world
	w.fleet, w.gpus = fleet, 48
	queues := []string{"inference", "research", "batch"}
	w.spec = quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{{Name: "all", Kind: quota.Cohort,
		Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: int64(rapid.IntRange(0, 8).Draw(t, "pool"))}}}}}
	for _, q := range queues {
		w.spec.Nodes = append(w.spec.Nodes, quota.NodeSpec{Name: q, Parent: "all", Kind: quota.Queue,
			Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: int64(rapid.IntRange(0, 12).Draw(t, "nominal"))}}})
	}
	w.tree, err = quota.New(w.spec)
	require.NoError(t, err)
	var rules quota.ScheduleSpec
	for range rapid.IntRange(0, 3).Draw(t, "rules") {
		win := quota.Window{Start: quota.Clock(rapid.IntRange(0, 47).Draw(t, "from") * 30), End: quota.Clock(rapid.IntRange(0, 47).Draw(t, "to") * 30)}
		if rapid.Bool().Draw(t, "dated") {
			win.From = start.Add(time.Duration(rapid.IntRange(0, 96).Draw(t, "rangeFrom")) * time.Hour)
			win.Until = win.From.Add(time.Duration(rapid.IntRange(1, 96).Draw(t, "rangeLen")) * time.Hour)
		}
		rules.Rules = append(rules.Rules, quota.ScheduleRule{Node: rapid.SampledFrom(queues).Draw(t, "node"), Window: win,
			Quota: quota.FlavorQuota{Flavor: "H100", Nominal: int64(rapid.IntRange(0, 24).Draw(t, "ruleNominal"))}})
	}
	w.cfg = calendar.Config{Fleet: w.fleet, Quota: w.tree, Grace: time.Duration(rapid.IntRange(0, 3).Draw(t, "grace")) * time.Minute}
	if len(rules.Rules) > 0 {
		s, err := quota.NewSchedule(w.spec, rules, time.UTC)
		require.NoError(t, err)
		if s.ValidateCapacity(map[string]int64{"H100": w.gpus}, start) == nil {
			w.sched, w.cfg.Schedule = s, s
		}
	}
	return w
}

// nominal is node's nominal quota at t, read without the calendar.
func (w world) nominal(node string, t time.Time) int64 {
	if w.sched != nil {
		n, _ := w.sched.Nominal(node, "H100", t)
		return n
	}
	for _, n := range w.spec.Nodes {
		if n.Name == node {
			return n.Quotas[0].Nominal
		}
	}
	return 0
}

// committed is the promise at t, computed from the bookings alone.
func (w world) committed(bookings []calendar.Booking, t time.Time) int64 {
	var sum int64
	booked := map[string]int64{}
	for _, n := range w.spec.Nodes {
		sum += w.nominal(n.Name, t)
	}
	for _, b := range bookings {
		if !t.Before(b.Start) && t.Before(b.End) {
			booked[b.Queue] += int64(b.Held)
		}
	}
	for q, g := range booked {
		sum += max(0, g-w.nominal(q, t))
	}
	return sum
}

// checkPromise checks, on a 30-minute grid (every rule and booking edge
// falls on it) from now to the last booking's end (or two days; the
// schedule alone is quota's to check beyond):
// guarantees plus bookings never exceed capacity, and no two bookings hold
// a node at the same instant.
func (w world) checkPromise(t *rapid.T, c *calendar.Calendar, now time.Time) {
	bookings := c.Bookings()
	end := now.Add(48 * time.Hour)
	for _, b := range bookings {
		if b.End.After(end) {
			end = b.End
		}
	}
	for at := now.Truncate(30 * time.Minute); at.Before(end); at = at.Add(30 * time.Minute) {
		if at.Before(now) {
			continue
		}
		got := w.committed(bookings, at)
		require.LessOrEqual(t, got, w.gpus, "at %s: committed %d of %d with %d bookings", at, got, w.gpus, len(bookings))
	}
	nodesOf := func(b calendar.Booking) (lo, hi topology.NodeID) {
		l, _ := w.fleet.Level(b.Level)
		lo, hi = topology.NodeID(1<<30), topology.NodeID(-1)
		for _, name := range b.Domains {
			d, ok := w.fleet.Domain(l, name)
			require.True(t, ok)
			dlo, dhi := w.fleet.Nodes(d)
			lo, hi = min(lo, dlo), max(hi, dhi)
		}
		return lo, hi
	}
	for i, a := range bookings {
		for _, b := range bookings[i+1:] {
			if !a.Start.Before(b.End) || !b.Start.Before(a.End) {
				continue
			}
			for _, an := range a.Domains {
				for _, bn := range b.Domains {
					al, _ := w.fleet.Level(a.Level)
					bl, _ := w.fleet.Level(b.Level)
					ad, _ := w.fleet.Domain(al, an)
					bd, _ := w.fleet.Domain(bl, bn)
					alo, ahi := w.fleet.Nodes(ad)
					blo, bhi := w.fleet.Nodes(bd)
					require.False(t, alo < bhi && blo < ahi, "%s (%s) and %s (%s) overlap in time and nodes", a.ID, an, b.ID, bn)
				}
			}
		}
		lo, hi := nodesOf(a)
		require.Less(t, lo, hi)
	}
}

// TestPromiseProperty drives random proposals, approvals, rejections,
// cancellations and shortenings over random quota schedules and running
// work, and checks after every step that guarantees plus approved bookings
// never exceed capacity at any instant and that no node is booked twice at
// once; at the end, Restore of a snapshot and Replay of the log give the
// same bookings.
func TestPromiseProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		w := drawWorld(t, now)
		c, err := calendar.New(now, w.cfg)
		require.NoError(t, err)
		levels := []string{"spine", "leaf", "node"}
		queues := []string{"inference", "research", "batch"}
		var running []calendar.Running
		for i := range rapid.IntRange(0, 6).Draw(t, "running") {
			n := topology.NodeID(rapid.IntRange(0, w.fleet.NumNodes()-1).Draw(t, "node"))
			r := calendar.Running{ID: fmt.Sprintf("w%d", i), Queue: rapid.SampledFrom(queues).Draw(t, "queue"),
				Preemptible: rapid.Bool().Draw(t, "preemptible"), Borrowing: rapid.Bool().Draw(t, "borrowing"),
				Nodes: []placement.NodeGPUs{{Node: n, GPUs: 4}}}
			if rapid.Bool().Draw(t, "ends") {
				r.End = now.Add(time.Duration(rapid.IntRange(1, 72).Draw(t, "end")) * time.Hour)
			}
			running = append(running, r)
		}
		ids, rescheduled := 0, false
		for range rapid.IntRange(1, 25).Draw(t, "steps") {
			switch rapid.IntRange(0, 5).Draw(t, "action") {
			case 0, 1: // propose, and maybe approve
				ids++
				req := calendar.Request{ID: fmt.Sprintf("b%d", ids), Queue: rapid.SampledFrom(queues).Draw(t, "queue"), Flavor: "H100",
					GPUs: rapid.IntRange(1, 48).Draw(t, "gpus"), Level: rapid.SampledFrom(levels).Draw(t, "level"),
					Blocks:   rapid.IntRange(0, 2).Draw(t, "blocks"),
					Start:    now.Add(time.Duration(rapid.IntRange(0, 96).Draw(t, "start")) * time.Hour),
					Duration: time.Duration(rapid.IntRange(1, 48).Draw(t, "duration")) * time.Hour}
				opts, err := c.Propose(now, req, running)
				if err != nil {
					require.ErrorIs(t, err, calendar.ErrTooLarge)
					continue
				}
				i := rapid.IntRange(0, len(opts)).Draw(t, "option")
				if i == len(opts) {
					require.NoError(t, c.Reject(now, req.ID, "carol", "not now"))
					continue
				}
				_, err = c.Approve(now, req.ID, i, "alice")
				if opts[i].Feasible() {
					require.NoError(t, err)
				} else {
					require.Error(t, err)
				}
			case 2: // cancel
				if bs := c.Bookings(); len(bs) > 0 {
					b := rapid.SampledFrom(bs).Draw(t, "cancel")
					err := c.Cancel(now, b.ID, "bob", "")
					if b.End.After(now) {
						require.NoError(t, err)
					} else {
						require.ErrorIs(t, err, calendar.ErrEnded)
					}
				}
			case 3: // shorten
				if bs := c.Bookings(); len(bs) > 0 {
					b := rapid.SampledFrom(bs).Draw(t, "shorten")
					end := b.Start.Add(time.Duration(rapid.IntRange(1, 48).Draw(t, "newLen")) * time.Hour)
					err := c.Shorten(now, b.ID, end, "bob", "")
					if end.Before(b.End) && !end.Before(now) && b.End.After(now) {
						require.NoError(t, err)
					} else {
						require.Error(t, err)
					}
				}
			case 4: // time passes
				now = now.Add(time.Duration(rapid.IntRange(1, 12).Draw(t, "advance")) * time.Hour)
			case 5: // a schedule change, refused if it breaks the promise
				if w.sched != nil && rapid.Bool().Draw(t, "drop") {
					// Dropping a schedule that lowered a guarantee raises it
					// back: refused when an approved booking counts on it.
					before := c.Snapshot()
					if err := c.SetSchedule(now, nil); err != nil {
						require.ErrorIs(t, err, calendar.ErrOverCommitted)
						require.Equal(t, before, c.Snapshot())
						break
					}
					w.sched, w.cfg.Schedule, rescheduled = nil, nil, true
				}
			}
			w.checkPromise(t, c, now)
			for _, h := range c.Due(now) {
				require.False(t, now.Before(h.DrainAt))
				require.True(t, now.Before(h.End))
			}
		}

		snap := c.Snapshot()
		data, err := json.Marshal(snap)
		require.NoError(t, err)
		var back calendar.State
		require.NoError(t, json.Unmarshal(data, &back))
		r, err := calendar.Restore(w.cfg, back)
		require.NoError(t, err)
		require.Equal(t, snap, r.Snapshot())

		if rescheduled {
			return // the log replays under the schedule it was written under
		}
		replayed, err := calendar.Replay(now, w.cfg, c.Log())
		require.NoError(t, err)
		require.Equal(t, c.Bookings(), replayed.Bookings())
	})
}
