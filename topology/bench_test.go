package topology_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/topology"
)

// BenchmarkAllocate times allocating and releasing one node's GPUs, the
// unit of every placement and exit. Its cost should follow the tree's
// depth, not the fleet's size, and allocate nothing.
func BenchmarkAllocate(b *testing.B) {
	for _, gpus := range []int{2048, 16384, 131072} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			f, err := topology.New(topology.Scaled(gpus))
			if err != nil {
				b.Fatal(err)
			}
			// About 85% allocated with partly used nodes, so the indexes
			// are realistically populated.
			for n := range topology.NodeID(f.NumNodes()) {
				if int(n)%7 != 0 {
					_ = f.Allocate(n, 1+int(n)%8)
				}
			}
			var free []topology.NodeID
			for n := range topology.NodeID(f.NumNodes()) {
				if f.Allocated(n) == 0 {
					free = append(free, n)
				}
			}
			lat := make([]time.Duration, 0, min(b.N, 1<<20))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n := free[i%len(free)]
				t0 := time.Now()
				if err := f.Allocate(n, 8); err != nil {
					b.Fatal(err)
				}
				if err := f.Release(n, 8); err != nil {
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

// BenchmarkClone times the copy a what-if simulation starts from.
func BenchmarkClone(b *testing.B) {
	for _, gpus := range []int{2048, 131072} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			f, err := topology.New(topology.Scaled(gpus))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = f.Clone()
			}
		})
	}
}
