package placement_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/placement"
)

// BenchmarkPlace times one placement decision on the "fragmented"
// reference shape (every spine but the last holds one random 0-8 GPU
// workload per node; the last spine is empty) at each fleet size:
// a 1-GPU replica, 64 x 1 GPU preferring a leaf, 8 x 8 GPUs requiring a
// leaf, and 64 x 8 GPUs requiring one spine (only the empty spine holds it).
func BenchmarkPlace(b *testing.B) {
	reqs := []struct {
		name string
		w    *gang.Workload
	}{
		{"replica=1gpu", work("r", 1, 1, "", "")},
		{"gang=64x1gpu", work("g", 64, 1, "", "leaf")},
		{"gang=8x8gpu", work("g", 8, 8, "leaf", "")},
		{"gang=64x8gpu", work("g", 64, 8, "spine", "leaf")},
	}
	for _, gpus := range shapes.Ladder() {
		f := shapes.NewFleet(gpus)
		shapes.Fragmented(f, 1)
		for _, r := range reqs {
			b.Run(fmt.Sprintf("gpus=%d/%s", gpus, r.name), func(b *testing.B) {
				p := placement.NewPlacer(placement.Options{})
				if _, err := p.Place(f, r.w); err != nil {
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, min(b.N, 1<<20))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if _, err := p.Place(f, r.w); err != nil {
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
