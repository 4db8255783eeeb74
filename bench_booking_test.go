package fleet_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/traces"
	"github.com/fleetsched/fleet/topology"
)

// bookedScheduler is the "mixed" shape at gpus GPUs with n approved
// bookings: whole leaves for research, four hours each, five at a time,
// back to back from an hour ahead, each on the leaves Propose ranks first.
//
// With first set, the bookings are approved on the empty fleet and the
// seeded stream then fills it around them, as the scheduler places work
// while bookings hold blocks: the fleet, and the cycle's decisions,
// compare with the shape without bookings. Without it the fleet is filled
// first and the bookings take the leaves the calendar ranks first, the
// emptiest, which hold nearly all the free GPUs: work that may not enter
// a booked block (inference, not preemptible) has to be placed around
// them and preemptible research fills them instead, a cycle of other
// decisions than the one without bookings.
func bookedScheduler(b *testing.B, gpus, n int, first bool, now time.Time) (*fleet.Scheduler, *rand.Rand, *traces.Sampler) {
	s, err := fleet.New(fleet.ReferenceConfigFor(topology.Scaled(gpus)))
	if err != nil {
		b.Fatal(err)
	}
	var r *rand.Rand
	var sizes *traces.Sampler
	if !first {
		r, sizes = fillMixed(b, s, gpus, now)
	}
	for i := range n {
		id := fmt.Sprintf("book-%d", i)
		req := calendar.Request{ID: id, Queue: "research", Flavor: "H100", GPUs: 64, Level: "leaf",
			Start: now.Add(time.Hour + time.Duration(i/5)*4*time.Hour), Duration: 4 * time.Hour}
		if _, err := s.Propose(now, req); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Approve(now, id, 0, "council"); err != nil {
			b.Fatal(err)
		}
	}
	if got := len(s.Bookings()); got != n {
		b.Fatalf("%d bookings approved, want %d", got, n)
	}
	if first {
		r, sizes = fillMixed(b, s, gpus, now)
	}
	return s, r, sizes
}

// BenchmarkScheduleBookings is BenchmarkSchedule's cycle with approved
// bookings: every workload the cycle considers is checked against every
// block held, so the cycle must stay within the same budgets (20 us p99
// to admit one replica, 5 ms for 1,000 pending). bookings=50 approves
// them before the fleet fills, so it makes the decisions of bookings=0;
// bookings=50/on-free approves them on the filled fleet, where they hold
// the free GPUs (see bookedScheduler).
func BenchmarkScheduleBookings(b *testing.B) {
	const gpus = 2048
	for _, c := range []struct {
		n     int
		first bool
		name  string
	}{{0, true, "bookings=0"}, {50, true, "bookings=50"}, {50, false, "bookings=50/on-free"}} {
		now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		s, r, sizes := bookedScheduler(b, gpus, c.n, c.first, now)
		b.Run(fmt.Sprintf("gpus=%d/%s/pending=1", gpus, c.name), func(b *testing.B) {
			benchOneReplica(b, s, now, "one", func(i int) gang.PodSet {
				return gang.PodSet{Name: "server", Count: 1, GPUsPerPod: 1 + i%8}
			})
		})
		b.Run(fmt.Sprintf("gpus=%d/%s/pending=1000", gpus, c.name), func(b *testing.B) {
			benchThousand(b, s, now, r, sizes)
		})
	}
}
