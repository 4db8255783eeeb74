package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/sim"
)

// checker watches a run for the booking's promise: from the start on,
// the booked blocks hold only the booking's work; every drain gives its
// victim the contract's notice and the victim is gone by its deadline
// (or killed at it, within one cycle).
type checker struct {
	booking string
	start   time.Time
	end     time.Time
	booked  map[string]bool // node names in the blocks
	// failed are the booked nodes that went down: a block is promised
	// whole unless a node in it failed, and the booking's gang, hot-swapped
	// elsewhere, leaves such a node idle for lending once it is back.
	failed    map[string]bool
	cycle     time.Duration
	draining  map[string]time.Time // victim -> deadline
	p         promise
	snapshots int
}

// promise is what the checker found.
type promise struct {
	// Foreign counts snapshots from the start on with other work in the
	// blocks; First names the first such workload and when.
	Foreign int
	First   string
	// NodesFailed counts the booked nodes that went down in the window.
	NodesFailed int
	// Checked is the snapshots taken in the window.
	Checked int
	// Drains, Kills and Late count the drains, the victims killed at the
	// deadline and those gone later than a cycle after it; MinNotice is
	// the shortest notice a drain gave.
	Drains, BookingDrains, Kills, Late int
	MinNotice                          time.Duration
	// Started is when the booking's work started.
	Started time.Time
}

// Kept reports whether the promise held.
func (p promise) Kept() bool {
	return p.Foreign == 0 && p.Checked > 0 && p.Late == 0 && p.MinNotice >= fleet.DefaultGrace && !p.Started.IsZero()
}

func newChecker(cfg fleet.Config, b calendar.Booking, req calendar.Request) *checker {
	c := &checker{booking: b.ID, start: b.Start, end: b.End, booked: map[string]bool{}, failed: map[string]bool{}, cycle: time.Minute,
		draining: map[string]time.Time{}}
	for _, n := range cfg.Topology.Nodes {
		for _, d := range n.Path {
			if slices.Contains(b.Domains, d) {
				c.booked[n.Name] = true
			}
		}
	}
	return c
}

func (c *checker) Events(events []fleet.Event) error {
	for _, e := range events {
		switch e.Kind {
		case fleet.EventDrainStarted:
			c.p.Drains++
			if e.Reason == "booking" {
				c.p.BookingDrains++
			}
			notice := e.Deadline.Sub(e.Time)
			if c.p.Drains == 1 || notice < c.p.MinNotice {
				c.p.MinNotice = notice
			}
			c.draining[e.Workload] = e.Deadline
		case fleet.EventNodeDown:
			if c.booked[e.Node] && !c.failed[e.Node] && !e.Time.Before(c.start) && e.Time.Before(c.end) {
				c.failed[e.Node] = true
				c.p.NodesFailed++
			}
		case fleet.EventKilled:
			c.p.Kills++
		case fleet.EventExited:
			if d, ok := c.draining[e.Workload]; ok {
				if e.Time.After(d.Add(c.cycle)) {
					c.p.Late++
				}
				delete(c.draining, e.Workload)
			}
		case fleet.EventAdmitted:
			if e.Workload == c.booking+"-run" && c.p.Started.IsZero() {
				c.p.Started = e.Time
			}
		}
	}
	return nil
}

func (c *checker) Usage(time.Time, []sim.Usage) error { return nil }

func (c *checker) Snapshot(s fleet.Snapshot) error {
	if s.Time.Before(c.start) || !s.Time.Before(c.end) {
		return nil
	}
	c.p.Checked++
	for _, r := range s.Running {
		if r.Spec.Booking == c.booking {
			continue
		}
		for _, n := range r.Nodes {
			if c.booked[n.Node] && !c.failed[n.Node] {
				if c.p.Foreign == 0 {
					c.p.First = fmt.Sprintf("%s at %s", r.ID, s.Time.Format("2 Jan 15:04"))
				}
				c.p.Foreign++
				break
			}
		}
	}
	return nil
}

func (c *checker) verdict() promise { return c.p }

func (p promise) write(w io.Writer, req calendar.Request) {
	f := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	kept := "kept"
	if !p.Kept() {
		kept = "BROKEN"
	}
	f("Promise %s:\n", kept)
	f("- blocks whole from the start: %d snapshots of the window, %d with other work in the blocks",
		p.Checked, p.Foreign)
	if p.First != "" {
		f(" (first: %s)", p.First)
	}
	if p.NodesFailed > 0 {
		f(";\n  %d booked nodes failed in the window and are not counted", p.NodesFailed)
	}
	f("\n- the booking's work started at the start + %s\n", p.Started.Sub(req.Start))
	f("- drains: %d (%d for the booking), shortest notice %s, %d killed at the deadline, %d late\n",
		p.Drains, p.BookingDrains, p.MinNotice, p.Kills, p.Late)
}
