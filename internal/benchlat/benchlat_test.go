package benchlat

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spin keeps the calling thread busy for about d of wall time.
func spin(d time.Duration) int {
	x := 0
	for t0 := time.Now(); time.Since(t0) < d; {
		x++
	}
	return x
}

func TestThreadCPUTimeCountsTheThreadsOwnWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		assert.Zero(t, ThreadCPUTime(), "no thread clock is read here")
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p0, t0 := CPUTime(), ThreadCPUTime()
	require.NotZero(t, t0, "a thread that ran has used CPU")
	spin(20 * time.Millisecond)
	own, all := ThreadCPUTime()-t0, CPUTime()-p0
	assert.Greater(t, own, time.Duration(0), "busy work adds to the thread's CPU time")
	// The process's clock counts every thread, the thread's only itself;
	// the process's is read with microsecond resolution.
	assert.LessOrEqual(t, own, all+time.Millisecond)
}

func TestReportCPUEachReportsTheMeanAndP99OfClockReadings(t *testing.T) {
	res := testing.Benchmark(func(b *testing.B) {
		for range b.N {
		}
		ReportCPUEach(b, make([]time.Duration, 10))
	})
	assert.NotContains(t, res.Extra, "cpu-p99-ns", "all-zero readings are no measurement")
	res = testing.Benchmark(func(b *testing.B) {
		for range b.N {
		}
		cpu := make([]time.Duration, 100)
		for i := range cpu {
			cpu[i] = time.Duration(i+1) * time.Microsecond
		}
		ReportCPUEach(b, cpu)
	})
	assert.InDelta(t, 50_500, res.Extra["cpu-ns/op"], 1)
	assert.InDelta(t, 100_000, res.Extra["cpu-p99-ns"], 1)
}
