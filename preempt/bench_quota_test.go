package preempt_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/preempt"
)

// quotaCases are the quota decisions of the reference fleet (2,048 GPUs)
// on the design's reclaim shape, named after the rows of the comparison
// with Kueue: 256 running workloads of 8 GPUs (fill=full) or 2,048 of one
// GPU (fill=small); queue 7, idle, takes back its quota as 8 x 8 GPUs or
// 64 x 1 GPU; or queue 1, at its nominal quota, borrows 8 x 8 GPUs
// (borrowWithinCohort). Every victim must be queue 0's borrowed work or,
// for borrow-preempt, the preemptor's own work of lower priority.
var quotaCases = []struct {
	name  string
	build func() (*shapes.Victim, preempt.Request)
}{
	{"reclaim/workloads=256/ask=8x8gpu", func() (*shapes.Victim, preempt.Request) {
		v := shapes.Reclaim(2048, shapes.FillFull, 1)
		return v, v.Request
	}},
	{"reclaim/workloads=2048/ask=8x8gpu", func() (*shapes.Victim, preempt.Request) {
		v := shapes.Reclaim(2048, shapes.FillSmall, 1)
		return v, v.Request
	}},
	{"reclaim/workloads=2048/ask=64x1gpu", func() (*shapes.Victim, preempt.Request) {
		v := shapes.Reclaim(2048, shapes.FillSmall, 1)
		return v, v.Ask("reclaim", 64, 1, "")
	}},
	{"borrow-preempt/workloads=256/ask=8x8gpu", func() (*shapes.Victim, preempt.Request) {
		v := shapes.BorrowPreempt(2048, shapes.FillFull, 1)
		return v, v.Request
	}},
	{"borrow-preempt/workloads=2048/ask=8x8gpu", func() (*shapes.Victim, preempt.Request) {
		v := shapes.BorrowPreempt(2048, shapes.FillSmall, 1)
		return v, v.Request
	}},
}

// BenchmarkQuotaDecisions times one victim search per operation for each
// quota decision of quotaCases, a search that succeeds (checked before
// the timer, with every victim queue 0's). The state (fleet, tree, Index,
// scratch mirror) is built before the timer, as in BenchmarkVictims.
// p99-ns is the wall-clock 99th percentile; cpu-ns/op the process's CPU
// time per operation, which a loaded machine does not inflate.
func BenchmarkQuotaDecisions(b *testing.B) {
	for _, c := range quotaCases {
		b.Run(c.name, func(b *testing.B) {
			v, req := c.build()
			view := v.View()
			s := preempt.NewSearcher(preempt.Options{})
			p, err := s.Victims(view, req, nil)
			if err != nil {
				b.Fatal(err)
			}
			own := strings.HasPrefix(c.name, "borrow-preempt/")
			for _, x := range p.Victims {
				if !strings.HasPrefix(x.ID, "q0-") && !(own && strings.HasPrefix(x.ID, v.Queue+"-")) {
					b.Fatalf("victim %s is neither queue 0's borrowed work nor the preemptor's own", x.ID)
				}
			}
			timeVictims(b, s, view, req, len(p.Victims))
		})
	}
}

// timeVictims times s.Victims on a request that the caller checked
// succeeds, reporting allocations, CPU time, the p99 and the victims of
// the plan (after the timer: ResetTimer clears reported metrics).
func timeVictims(b *testing.B, s *preempt.Searcher, view preempt.View, req preempt.Request, victims int) {
	lat := make([]time.Duration, 0, min(b.N, 1<<20))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchlat.CPUTime()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := s.Victims(view, req, nil); err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(victims), "victims")
	benchlat.ReportCPU(b, cpu)
	benchlat.ReportP99(b, lat)
}
