package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// BenchmarkScheduleShared is BenchmarkSchedule's one-replica cycle for
// replicas that share GPUs, on the 85%-allocated mixed fleet: one pod of
// half a GPU, and four pods of a quarter.
func BenchmarkScheduleShared(b *testing.B) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s, _, _ := mixedScheduler(b, 2048, now)
	for _, tc := range []struct {
		name string
		ps   gang.PodSet
	}{
		{"replica=0.5gpu", gang.PodSet{Name: "server", Count: 1, GPUShare: 500}},
		{"replica=4x0.25gpu", gang.PodSet{Name: "server", Count: 4, GPUShare: 250}},
	} {
		b.Run("gpus=2048/"+tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, min(b.N, 1<<20))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("share-%d", i)
				w := gang.Workload{ID: id, Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
					PodSets: []gang.PodSet{tc.ps}}
				t0 := time.Now()
				if err := s.Submit(now, w); err != nil {
					b.Fatal(err)
				}
				d := s.Schedule(now)
				lat = append(lat, time.Since(t0))
				if len(d.Admit) != 1 {
					b.Fatalf("replica not admitted: %v", d)
				}
				if err := s.Cancel(now, id); err != nil {
					b.Fatal(err)
				}
				s.Schedule(now)
			}
			b.StopTimer()
			reportLatency(b, lat, 1)
		})
	}
}
