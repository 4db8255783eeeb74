package quote_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/sim"
	"github.com/fleetsched/fleet/sim/quote"
)

// BenchmarkQuote times the quote of examples/calendar: 1,024 GPUs as two
// whole spines of the reference fleet for three weeks, starting in ten
// days, from a week of recorded history; the forecasts (the baseline and
// one per option) run one after the other at a one-minute cycle, so
// ns/op is their sum, and cpu-ns/op their CPU time. The history is setup,
// not timed.
func BenchmarkQuote(b *testing.B) {
	b.Run("weeks=3", func(b *testing.B) {
		var h sim.History
		r, err := sim.Run(sim.Config{Seed: 1, Duration: 7 * 24 * time.Hour, Cycle: time.Minute, Observer: &h})
		if err != nil {
			b.Fatal(err)
		}
		s, now := r.Scheduler, r.Start.Add(7*24*time.Hour)
		req := calendar.Request{ID: "pretrain", Queue: sim.QueueResearch, Flavor: "H100", GPUs: 1024, Level: "spine",
			Blocks: 2, Start: now.Add(10 * 24 * time.Hour), Duration: 21 * 24 * time.Hour}
		opts, err := s.Propose(now, req)
		if err != nil {
			b.Fatal(err)
		}
		work := []gang.Workload{{ID: "pretrain-run", Queue: sim.QueueResearch, PriorityClass: fleet.ClassReservedResearch,
			Shape: gang.Training, Flavor: "H100", PodSets: []gang.PodSet{{Name: "w", Count: 128, GPUsPerPod: 8}},
			Drain: gang.DrainContract{CheckpointInterval: 20 * time.Minute}, ExpectedRuntime: req.Duration}}
		cfg := quote.Config{Fleet: sim.FleetConfig(2048, sim.Borrow), Demand: h.Workload(2048), Seed: 1, Work: work,
			Prepare: lowerInference(1024 - 848)}
		b.ReportAllocs()
		b.ResetTimer()
		cpu := benchlat.CPUTime()
		for range b.N {
			q, err := quote.For(now, s, req, opts, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if q.Recommended < 0 {
				b.Fatalf("no option quoted: %s", q.Reason)
			}
		}
		benchlat.ReportCPU(b, cpu)
		b.ReportMetric(float64(len(opts)+1), "forecasts")
	})
}

// lowerInference lowers prod-inference's guarantee (and its lending
// limit with it) by gpus, so that the booking's excess over research's
// guarantee fits the fleet.
func lowerInference(gpus int64) func(time.Time, *fleet.Scheduler) error {
	return func(now time.Time, s *fleet.Scheduler) error {
		spec := s.Quota()
		i := slices.IndexFunc(spec.Nodes, func(n quota.NodeSpec) bool { return n.Name == sim.QueueInference })
		n := spec.Nodes[i]
		n.Quotas = slices.Clone(n.Quotas)
		fq := &n.Quotas[0]
		fq.Nominal -= gpus
		if l, ok := fq.LendingLimit.Get(); ok && l > fq.Nominal {
			fq.LendingLimit = quota.LimitOf(fq.Nominal)
		}
		return s.SetQueue(now, n)
	}
}
