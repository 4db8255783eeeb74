package main

import (
	"testing"

	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/sim"
)

// BenchmarkMonthObserved simulates one month of the reference fleet per
// policy with the example's metrics recorder observing it, as the example
// runs it: one iteration is a whole observed month and its report.
// cpu-ns/op is the process's CPU time (the collector's included), which
// other work on a shared machine leaves near the month's own cost.
func BenchmarkMonthObserved(b *testing.B) {
	o := options{days: 30, seed: 1, seeds: 1, gpus: 2048}
	for _, p := range []sim.Policy{sim.Static, sim.Borrow} {
		b.Run("gpus=2048/policy="+p.String(), func(b *testing.B) {
			b.ReportAllocs()
			events := 0
			c0 := benchlat.CPUTime()
			for b.Loop() {
				oc, err := simulate(o, p, o.seed, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				events += oc.res.Events
			}
			benchlat.ReportCPU(b, c0)
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
