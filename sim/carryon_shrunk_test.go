package sim

import (
	"testing"
	"time"
)

// A job running below its full size when a run carries on (an elastic
// job shrunk for a reclaim) runs on at that size: the carried-on run
// counts what it holds, and a Grow takes it back to its full size, not
// beyond (BenchmarkQuote's forecasts grew such jobs past it).
func TestCarryOnKeepsAShrunkJobsSize(t *testing.T) {
	t.Parallel()
	first, err := Run(Config{Seed: 3, Duration: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	shrunk := 0
	for _, v := range first.Scheduler.Snapshot().Running {
		if v.SplitOf == "" && v.GPUs < v.Spec.GPUs() {
			shrunk++
		}
	}
	if shrunk == 0 {
		t.Fatal("no job runs below its full size at the end of the first run: pick another seed")
	}
	fork, err := first.Scheduler.Fork()
	if err != nil {
		t.Fatal(err)
	}
	// Little new demand after the carry-on, so that the shrunk jobs grow.
	quiet := Workload{InferenceTrough: 0.05, InferencePeak: 0.06, TrainingLoad: 0.01, BatchBacklog: 1}
	r, err := Run(Config{Seed: 4, Duration: 12 * time.Hour, Fleet: FleetConfig(2048, Borrow), From: fork, Check: true,
		Workload: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Violations) > 0 {
		t.Fatalf("violations: %v", r.Violations[:min(5, len(r.Violations))])
	}
	if r.Grows == 0 {
		t.Fatalf("no job grew after the carry-on (%d shrunk at its start)", shrunk)
	}
	t.Logf("%d jobs shrunk when the run carried on, %d grows after", shrunk, r.Grows)
}
