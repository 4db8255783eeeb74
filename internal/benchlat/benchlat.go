// Package benchlat reports the tail latency of benchmarks: every
// benchmark of the module times its iterations one by one and reports the
// 99th percentile beside ns/op, so that a rare slow decision is not hidden
// by the mean.
package benchlat

import (
	"slices"
	"testing"
	"time"
)

// ReportP99 reports the 99th percentile of lat as the "p99-ns" metric. It
// sorts lat in place. With no samples it reports nothing.
func ReportP99(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// ReportCPU reports the CPU time per operation since start (a CPUTime
// reading) as "cpu-ns/op": on a machine shared with other work it stays
// near the operation's own cost while wall-clock figures grow with the
// load. It reports nothing where CPUTime is not available.
func ReportCPU(b *testing.B, start time.Duration) {
	if start == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64((CPUTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// ReportCPUEach reports the mean and the 99th percentile of per-operation
// CPU times (differences of CPUTime or ThreadCPUTime readings around each
// operation) as "cpu-ns/op" and "cpu-p99-ns": on a shared machine a tail
// that is the operation's own stays apart from one that other work
// causes. It sorts cpu in place. It reports nothing without samples or
// where the clock read is not available (every time 0).
func ReportCPUEach(b *testing.B, cpu []time.Duration) {
	var total time.Duration
	for _, c := range cpu {
		total += c
	}
	if total == 0 {
		return
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(len(cpu)), "cpu-ns/op")
	slices.Sort(cpu)
	b.ReportMetric(float64(cpu[len(cpu)*99/100].Nanoseconds()), "cpu-p99-ns")
}
