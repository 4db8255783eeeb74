package sim

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func philly(t *testing.T) []TraceJob {
	t.Helper()
	f, err := os.Open("testdata/philly-sample.csv")
	require.NoError(t, err)
	defer f.Close()
	jobs, err := ReadPhilly(f)
	require.NoError(t, err)
	return jobs
}

// Compression hits the offered load asked for and keeps every job's size
// and run time.
func TestCompressTraceHitsTarget(t *testing.T) {
	jobs := philly(t)
	window := 24 * time.Hour
	as := OfferedGPUs(jobs, 512, window)
	for _, tc := range []struct {
		name   string
		target float64
	}{
		{"as recorded", as},
		{"half", as / 2},
		{"sparser", as / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, f := CompressTrace(jobs, 512, window, tc.target)
			require.Len(t, out, len(jobs))
			got := OfferedGPUs(out, 512, window)
			// One job more or less moves the load by its own GPU-hours.
			assert.InEpsilon(t, tc.target, got, 0.05, "compression %.3f", f)
			for i := range jobs {
				require.Equal(t, jobs[i].GPUs, out[i].GPUs)
				require.Equal(t, jobs[i].Duration, out[i].Duration)
				require.Equal(t, time.Duration(float64(jobs[i].Arrival)/f), out[i].Arrival)
			}
		})
	}
	_, f := CompressTrace(jobs, 512, window, as)
	assert.InDelta(t, 1, f, 0.05, "the recorded load needs no compression")
}

// The load control moves the fleet: the same trace offered at 1.1x the
// training share of the fleet keeps it busier than at a third of it.
func TestTraceRunAtTargetLoad(t *testing.T) {
	t.Parallel()
	use := func(target float64) float64 {
		jobs, _ := CompressTrace(philly(t), 512, 12*time.Hour, target)
		c := short(Borrow, 1)
		c.Duration = 12 * time.Hour
		c.Trace = jobs
		r := run(t, c)
		assert.Empty(t, r.Violations)
		return r.Avg(r.TrainingGPUh + r.BatchGPUh)
	}
	share := float64(512 - 300)
	assert.Greater(t, use(1.1*share), 1.5*use(share/3))
}
