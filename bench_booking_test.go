package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
)

// bookedScheduler is the "mixed" shape at gpus GPUs with n approved
// bookings: whole leaves for research, four hours each, five at a time,
// back to back from an hour ahead, each on the leaves Propose ranks first.
func bookedScheduler(b *testing.B, gpus, n int, now time.Time) *fleet.Scheduler {
	s, _, _ := mixedScheduler(b, gpus, now)
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
	return s
}

// BenchmarkScheduleBookings is BenchmarkSchedule's cycle with approved
// bookings: every workload the cycle considers is checked against every
// block held, so the cycle must stay within the same budgets (20 us p99
// to admit one replica, 5 ms for 1,000 pending).
func BenchmarkScheduleBookings(b *testing.B) {
	const gpus = 2048
	for _, n := range []int{0, 50} {
		now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		s := bookedScheduler(b, gpus, n, now)
		_, r, sizes := mixedScheduler(b, gpus, now) // the same seeded stream of pending work
		b.Run(fmt.Sprintf("gpus=%d/bookings=%d/pending=1", gpus, n), func(b *testing.B) {
			benchOneReplica(b, s, now, "one", func(i int) gang.PodSet {
				return gang.PodSet{Name: "server", Count: 1, GPUsPerPod: 1 + i%8}
			})
		})
		b.Run(fmt.Sprintf("gpus=%d/bookings=%d/pending=1000", gpus, n), func(b *testing.B) {
			benchThousand(b, s, now, r, sizes)
		})
	}
}
