package sim

import (
	"bytes"
	"testing"
	"time"
)

// A run carried on from the scheduler another run left behind keeps the
// host's and the scheduler's books equal, and is deterministic.
func TestCarryOn(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	first, err := Run(Config{Seed: 3, Duration: day})
	if err != nil {
		t.Fatal(err)
	}
	cfg := FleetConfig(2048, Borrow)
	text := func() string {
		fork, err := first.Scheduler.Fork()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(Config{Seed: 4, Duration: day / 2, Fleet: cfg, From: fork, Check: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Violations) > 0 {
			t.Fatalf("violations: %v", r.Violations[:min(5, len(r.Violations))])
		}
		if !r.Start.Equal(first.Start.Add(day)) {
			t.Fatalf("start %v, want the first run's end", r.Start)
		}
		var b bytes.Buffer
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	a, b := text(), text()
	if a != b {
		t.Fatalf("two runs from the same fork differ:\n%s\n%s", a, b)
	}
	t.Log(a)
}
