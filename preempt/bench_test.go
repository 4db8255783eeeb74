package preempt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/preempt"
)

// BenchmarkVictims times one victim search on the reference shapes, each
// with whole-node (fill=full) and mixed 1-8 GPU (fill=mixed) workloads:
// reclaim=64gpu (queue 7 takes back its quota from queue 0's borrowed
// work), spike=100gpu (inference returns to its guarantee from batch) and
// clear=512gpu (a 64 x 8 GPU gang clears one spine).
func BenchmarkVictims(b *testing.B) {
	cases := []struct {
		name  string
		build func(gpus int, mixed bool, seed uint64) *shapes.Victim
	}{
		{"reclaim=64gpu", shapes.Reclaim},
		{"spike=100gpu", shapes.Spike},
		{"clear=512gpu", shapes.Clear},
	}
	for _, gpus := range []int{2048, 16384} {
		for _, c := range cases {
			for _, mixed := range []bool{false, true} {
				fill := "full"
				if mixed {
					fill = "mixed"
				}
				b.Run(fmt.Sprintf("gpus=%d/%s/fill=%s", gpus, c.name, fill), func(b *testing.B) {
					v := c.build(gpus, mixed, 1)
					s := preempt.NewSearcher(preempt.Options{})
					p, err := s.Victims(v.View(), v.Request, nil)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(len(p.Victims)), "victims")
					lat := make([]time.Duration, 0, min(b.N, 1<<20))
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						if _, err := s.Victims(v.View(), v.Request, nil); err != nil {
							b.Fatal(err)
						}
						if len(lat) < cap(lat) {
							lat = append(lat, time.Since(t0))
						}
					}
					b.StopTimer()
					benchlat.ReportP99(b, lat)
				})
			}
		}
	}
}
