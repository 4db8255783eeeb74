package preempt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
)

// BenchmarkVictimsShrink times the spike decision of BenchmarkVictims
// (inference takes back 25 x 4 GPUs from borrowing batch on a full fleet)
// when every batch workload is elastic: pods of one GPU, down to one pod.
// Each victim then gives up the pods the replicas need instead of
// stopping; "shrunk" counts the victims that shrink, and the cost is
// that of the victim search with its placements per kept pod.
func BenchmarkVictimsShrink(b *testing.B) {
	for _, gpus := range []int{2048, 16384} {
		b.Run(fmt.Sprintf("gpus=%d/spike=100gpu/fill=full", gpus), func(b *testing.B) {
			v := shapes.Spike(gpus, shapes.FillFull, 1)
			batch, _ := v.Tree.Node("batch")
			for i := range v.Running {
				r := &v.Running[i]
				if r.Queue != batch {
					continue
				}
				var pods []placement.Pod
				for _, x := range r.Nodes {
					for range x.GPUs {
						pods = append(pods, placement.Pod{Index: len(pods), Node: x.Node, GPUs: 1})
					}
				}
				for k := len(pods) - 1; k >= 0; k-- {
					r.Shrinkable = append(r.Shrinkable, pods[k])
				}
				r.Keep = []int{1}
			}
			view := v.View()
			s := preempt.NewSearcher(preempt.Options{})
			p, err := s.Victims(view, v.Request, nil)
			if err != nil {
				b.Fatal(err)
			}
			shrunk := 0
			for _, x := range p.Victims {
				if x.Shrink() {
					shrunk++
				}
			}
			if shrunk == 0 {
				b.Fatal("no victim shrinks")
			}
			lat := make([]time.Duration, 0, min(b.N, 1<<20))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := benchlat.CPUTime()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := s.Victims(view, v.Request, nil); err != nil {
					b.Fatal(err)
				}
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(t0))
				}
			}
			b.StopTimer()
			// After the timer: ResetTimer clears reported metrics.
			b.ReportMetric(float64(len(p.Victims)), "victims")
			b.ReportMetric(float64(shrunk), "shrunk")
			b.ReportMetric(p.LostGPUSeconds, "lost-GPU-s")
			benchlat.ReportCPU(b, cpu)
			benchlat.ReportP99(b, lat)
		})
	}
}
