package placement_test

import (
	"fmt"
	"math/bits"
	"testing"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// BenchmarkPlace times one placement decision on the "fragmented"
// reference shape (every spine but the last holds one random 0-8 GPU
// workload per node; the last spine is empty) at each fleet size:
// a 1-GPU replica, 64 x 1 GPU preferring a leaf, 16 x 3 GPUs preferring
// a leaf (best fit counts pods, not GPUs), 8 x 8 GPUs requiring a leaf,
// and 64 x 8 GPUs requiring one spine (only the empty spine holds it),
// also in rank groups of 8 per leaf.
func BenchmarkPlace(b *testing.B) {
	reqs := []struct {
		name string
		w    *gang.Workload
	}{
		{"replica=1gpu", work("r", 1, 1, "", "")},
		{"gang=64x1gpu", work("g", 64, 1, "", "leaf")},
		{"gang=16x3gpu", work("g", 16, 3, "", "leaf")},
		{"gang=8x8gpu", work("g", 8, 8, "leaf", "")},
		{"gang=64x8gpu", work("g", 64, 8, "spine", "leaf")},
		{"gang=64x8gpu-rank8leaf", ranked(work("g", 64, 8, "spine", "leaf"), gang.RankGroup{Size: 8, Level: "leaf", Required: true})},
	}
	for _, gpus := range shapes.Ladder() {
		f := shapes.NewFleet(gpus)
		shapes.Fragmented(f, 1)
		for _, r := range reqs {
			b.Run(fmt.Sprintf("gpus=%d/%s", gpus, r.name), func(b *testing.B) {
				timePlace(b, placement.NewPlacer(placement.Options{}), f, r.w)
			})
		}
		// Sharing on: the same fragmented fleet where every third node with
		// a free GPU also holds a 0.3 share on it; a 0.5-GPU replica goes
		// to the tightest shared GPU, with the default best fit and with
		// the Fragmentation ranker over a learnt mix.
		fs := shapes.NewFleet(gpus)
		shapes.Fragmented(fs, 1)
		for n := range topology.NodeID(fs.NumNodes()) {
			if m := fs.FreeMask(n); m != 0 && n%3 == 0 {
				if err := fs.AllocateClaim(topology.Claim{Node: n, GPU: bits.TrailingZeros64(m), Share: 300}); err != nil {
					b.Fatal(err)
				}
			}
		}
		half := &gang.Workload{ID: "h", Queue: "q", Shape: gang.Inference,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUShare: 500}}}
		frag := placement.NewFragmentation()
		for _, k := range []int{1, 1, 2, 8} {
			frag.Observe(work("m", 1, k, "", ""))
		}
		frag.Observe(half)
		for _, c := range []struct {
			name string
			opt  placement.Options
		}{{"replica=0.5gpu", placement.Options{}}, {"replica=0.5gpu-fragmentation", placement.Options{Ranker: frag}}} {
			b.Run(fmt.Sprintf("gpus=%d/%s", gpus, c.name), func(b *testing.B) {
				timePlace(b, placement.NewPlacer(c.opt), fs, half)
			})
		}
	}
}

// timePlace times p placing w on f, a decision that must succeed (it is
// checked once before timing): ns/op and p99 by the clock, and cpu-ns/op,
// the process's CPU time per decision, which other work on the machine
// does not inflate.
func timePlace(b *testing.B, p *placement.Placer, f *topology.Fleet, w *gang.Workload) {
	b.Helper()
	if _, err := p.Place(f, w); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, min(b.N, 1<<20))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchlat.CPUTime()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := p.Place(f, w); err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
	}
	b.StopTimer()
	benchlat.ReportCPU(b, cpu)
	benchlat.ReportP99(b, lat)
}

// ranked gives w's first pod set the rank groups gs.
func ranked(w *gang.Workload, gs ...gang.RankGroup) *gang.Workload {
	w.PodSets[0].RankGroups = gs
	return w
}
