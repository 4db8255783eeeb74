package quote_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/sim"
	"github.com/fleetsched/fleet/sim/quote"
)

// smallQuote quotes two leaves of a 512-GPU fleet for a day, a day after
// a day of history.
func smallQuote(t *testing.T) (*fleet.Scheduler, *quote.Quote) {
	t.Helper()
	day := 24 * time.Hour
	var h sim.History
	r, err := sim.Run(sim.Config{GPUs: 512, Seed: 7, Duration: day, Observer: &h})
	if err != nil {
		t.Fatal(err)
	}
	s, now := r.Scheduler, r.Start.Add(day)
	req := calendar.Request{ID: "finetune", Queue: sim.QueueResearch, Flavor: "H100", GPUs: 128,
		Level: "leaf", Blocks: 2, Start: now.Add(day / 2), Duration: day / 2}
	opts, err := s.Propose(now, req)
	if err != nil {
		t.Fatal(err)
	}
	work := gang.Workload{ID: "finetune-0", Queue: sim.QueueResearch, PriorityClass: fleet.ClassReservedResearch,
		Shape: gang.Training, Flavor: "H100", PodSets: []gang.PodSet{{Name: "w", Count: 16, GPUsPerPod: 8}},
		ExpectedRuntime: day / 2}
	q, err := quote.For(now, s, req, opts, quote.Config{Fleet: sim.FleetConfig(512, sim.Borrow),
		Demand: h.Workload(512), Seed: 1, Work: []gang.Workload{work}})
	if err != nil {
		t.Fatal(err)
	}
	return s, q
}

func memo(t *testing.T, q *quote.Quote) string {
	t.Helper()
	var b bytes.Buffer
	if err := q.WriteMemo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A quote is deterministic, leaves the scheduler alone, recommends an
// approvable option and renders a memo within MemoWidth columns.
func TestQuote(t *testing.T) {
	s, q := smallQuote(t)
	before, _ := json.Marshal(s.Snapshot())
	m := memo(t, q)
	t.Log("\n" + m)
	if q.Recommended < 0 || !q.Options[q.Recommended].Approvable() {
		t.Fatalf("recommended %d: %s", q.Recommended, q.Reason)
	}
	o := q.Options[q.Recommended]
	if o.BookedGPUh < 100 {
		t.Errorf("the booking's work ran %.0f GPU-h, want about 128 x 12", o.BookedGPUh)
	}
	for _, line := range strings.Split(m, "\n") {
		if n := len([]rune(line)); n > quote.MemoWidth {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	_, q2 := smallQuote(t)
	if m2 := memo(t, q2); m2 != m {
		t.Errorf("two quotes of the same state differ:\n%s\n%s", m, m2)
	}
	after, _ := json.Marshal(s.Snapshot())
	if !bytes.Equal(before, after) {
		t.Error("quoting changed the scheduler")
	}
}
