package sim_test

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/sim"
	"github.com/fleetsched/fleet/topology"
)

// promiseHours is how long each case of TestBookedBlocksWholeAtStart
// simulates. The default keeps the test to seconds on 2 cores; a long run
// before a release:
//
//	go test ./sim -run BookedBlocksWhole -rapid.checks=1000 -promise.hours=72 -timeout 60m
var promiseHours = flag.Int("promise.hours", 6, "simulated hours per case of TestBookedBlocksWholeAtStart")

// wholeChecker watches a run: at the first snapshot at or after each
// booking's start, no workload but the booking's own that started before
// the start holds GPUs in its blocks, and every node of them is up unless
// one of them failed since the approval.
type wholeChecker struct {
	fleet    *topology.Fleet
	bookings []calendar.Booking
	blockOf  map[string][]string // node name -> blocks of bookings holding it
	failed   map[string]bool     // blocks a node failed in
	checked  map[string]bool     // bookings checked at their start
	broken   []string
}

func newWholeChecker(t *rapid.T, cfg fleet.Config, bookings []calendar.Booking) *wholeChecker {
	f, err := topology.New(cfg.Topology)
	if err != nil {
		t.Fatal(err)
	}
	c := &wholeChecker{fleet: f, bookings: bookings, blockOf: map[string][]string{}, failed: map[string]bool{}, checked: map[string]bool{}}
	for _, b := range bookings {
		l, _ := f.Level(b.Level)
		for _, name := range b.Domains {
			d, _ := f.Domain(l, name)
			lo, hi := f.Nodes(d)
			for n := lo; n < hi; n++ {
				c.blockOf[f.NodeName(n)] = append(c.blockOf[f.NodeName(n)], name)
			}
		}
	}
	return c
}

func (c *wholeChecker) Events(events []fleet.Event) error {
	for _, e := range events {
		if e.Kind == fleet.EventNodeDown && e.Reason == topology.Down.String() {
			for _, b := range c.blockOf[e.Node] {
				c.failed[b] = true
			}
		}
	}
	return nil
}

func (c *wholeChecker) Usage(time.Time, []sim.Usage) error { return nil }

func (c *wholeChecker) Snapshot(s fleet.Snapshot) error {
	for _, b := range c.bookings {
		if c.checked[b.ID] || s.Time.Before(b.Start) || !s.Time.Before(b.End) {
			continue
		}
		c.checked[b.ID] = true
		for _, r := range s.Running {
			if r.Spec.Booking == b.ID || !r.Started.Before(b.Start) {
				continue
			}
			for _, n := range r.Nodes {
				if blocks := c.blockOf[n.Node]; slices.ContainsFunc(blocks, func(x string) bool { return slices.Contains(b.Domains, x) }) {
					c.broken = append(c.broken, fmt.Sprintf("%s at %s: %s (started %s, draining %v) holds %d GPUs on %s in %v",
						b.ID, s.Time.Format(time.DateTime), r.ID, r.Started.Format(time.DateTime), r.Draining, n.GPUs, n.Node, b.Domains))
				}
			}
		}
		for _, u := range s.Fleet.Unhealthy {
			for _, blk := range c.blockOf[u.Node] {
				if slices.Contains(b.Domains, blk) && !c.failed[blk] {
					c.broken = append(c.broken, fmt.Sprintf("%s: node %s of %s unhealthy at the start without a failure", b.ID, u.Node, blk))
				}
			}
		}
	}
	return nil
}

// Every approved block is whole at its start unless a node in it failed:
// random leaf bookings on a 512-GPU fleet under the workload model, a
// share of drain victims that hang until killed at their deadline, and
// node failures at a high rate. The booking's gangs arrive at the start.
func TestBookedBlocksWholeAtStart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := sim.FleetConfig(512, sim.Borrow)
		s, err := fleet.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
		window := time.Duration(*promiseHours) * time.Hour
		var bookings []calendar.Booking
		var arrivals []sim.Arrival
		for i := range rapid.IntRange(1, 5).Draw(t, "bookings") {
			id := fmt.Sprintf("book-%d", i)
			// Starts fall on the snapshots' 5-minute period.
			start := t0.Add(time.Duration(rapid.IntRange(2, int(window/(5*time.Minute))-2).Draw(t, "start")) * 5 * time.Minute)
			dur := time.Duration(rapid.IntRange(30, 360).Draw(t, "minutes")) * time.Minute
			queue := rapid.SampledFrom([]string{sim.QueueResearch, sim.QueueInference, sim.QueueBatch}).Draw(t, "queue")
			nodes := rapid.IntRange(1, 8).Draw(t, "nodes")
			opts, err := s.Propose(t0, calendar.Request{ID: id, Queue: queue, Flavor: "H100", GPUs: nodes * 8, Level: "leaf",
				Start: start, Duration: dur})
			if err != nil {
				t.Fatalf("propose %s: %v", id, err)
			}
			b, err := s.Approve(t0, id, rapid.IntRange(0, len(opts)-1).Draw(t, "option"), "council")
			if err != nil {
				continue // a conflict or an over-commitment: refused, nothing bound
			}
			bookings = append(bookings, b)
			w := gang.Workload{ID: id + "-run", Queue: queue, PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
				Flavor: "H100", Booking: id, ExpectedRuntime: dur / 2,
				PodSets:  []gang.PodSet{{Name: "w", Count: nodes, GPUsPerPod: 8}},
				Topology: gang.TopologyRequest{Required: "leaf"},
				Drain:    gang.DrainContract{CheckpointInterval: 20 * time.Minute}}
			arrivals = append(arrivals, sim.Arrival{At: start, Workload: w})
		}
		if len(bookings) == 0 {
			return
		}
		c := newWholeChecker(t, cfg, bookings)
		r, err := sim.Run(sim.Config{Fleet: cfg, From: s, Seed: rapid.Uint64().Draw(t, "seed"), Start: t0, Duration: window,
			Sample: 5 * time.Minute, Cycle: 30 * time.Second, Arrivals: arrivals, Observer: c,
			DrainFailShare: rapid.Float64Range(0.1, 0.5).Draw(t, "drain failures"), FailuresPerGPUDay: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Violations) > 0 {
			t.Fatalf("host violations: %v", r.Violations)
		}
		for _, b := range bookings {
			if !c.checked[b.ID] {
				t.Fatalf("%s was never checked at its start %s", b.ID, b.Start.Format(time.DateTime))
			}
		}
		if len(c.broken) > 0 {
			t.Fatalf("blocks not whole at their start (kills %d of %d drains):\n%v", r.Kills, r.Drains, c.broken)
		}
	})
}
