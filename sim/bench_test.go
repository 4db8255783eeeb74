package sim

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fleetsched/fleet/internal/benchlat"
)

// BenchmarkMonth simulates 30 days of the reference fleet under each
// policy. One iteration is a whole month; events/s is the simulator's
// speed and sim-days/s how much faster than real time a day passes.
func BenchmarkMonth(b *testing.B) {
	for _, p := range []Policy{Static, Borrow} {
		b.Run("gpus=2048/policy="+p.String(), func(b *testing.B) {
			c := Config{Policy: p, Seed: 1}
			b.ReportAllocs()
			b.ResetTimer()
			var took []time.Duration
			events := 0
			cpu := benchlat.CPUTime()
			for b.Loop() {
				t0 := time.Now()
				r, err := Run(c)
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
				events += r.Events
			}
			benchlat.ReportCPU(b, cpu)
			total := time.Duration(0)
			for _, d := range took {
				total += d
			}
			b.ReportMetric(float64(events)/total.Seconds(), "events/s")
			b.ReportMetric(30*float64(len(took))/total.Seconds(), "sim-days/s")
			b.ReportMetric(float64(p99(took)), "p99-ns")
		})
	}
}

// BenchmarkDay simulates one day of fleets of growing size.
func BenchmarkDay(b *testing.B) {
	for _, gpus := range []int{512, 2048, 8192} {
		b.Run("gpus="+strconv.Itoa(gpus), func(b *testing.B) {
			c := Config{GPUs: gpus, Seed: 1, Duration: 24 * time.Hour}
			b.ReportAllocs()
			b.ResetTimer()
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := Run(c); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			b.ReportMetric(float64(p99(took)), "p99-ns")
		})
	}
}

func p99(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return Quantile(s, 0.99)
}
