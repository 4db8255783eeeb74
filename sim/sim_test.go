package sim

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
)

// short is a run the normal test suite affords: a 512-GPU fleet (one
// spine of 8 leaves) for a day, with the invariant checks on.
func short(p Policy, seed uint64) Config {
	return Config{GPUs: 512, Policy: p, Seed: seed, Duration: 24 * time.Hour, Check: true}
}

func run(t *testing.T, c Config) *Result {
	t.Helper()
	r, err := Run(c)
	require.NoError(t, err)
	return r
}

func text(t *testing.T, r *Result) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.WriteText(&b))
	return b.String()
}

func TestSameSeedSameReport(t *testing.T) {
	t.Parallel()
	a := text(t, run(t, short(Borrow, 7)))
	b := text(t, run(t, short(Borrow, 7)))
	require.Equal(t, a, b, "two runs of one seed differ")
	c := text(t, run(t, short(Borrow, 8)))
	assert.NotEqual(t, a, c, "another seed gives the same run")
}

func TestInvariantsHold(t *testing.T) {
	t.Parallel()
	for _, p := range []Policy{Static, Borrow} {
		t.Run(p.String(), func(t *testing.T) {
			c := short(p, 3)
			c.FailuresPerGPUDay = 5e-3 // ten times the default, so nodes do fail
			r := run(t, c)
			assert.Empty(t, r.Violations)
			assert.Positive(t, r.NodeFailures)
			assert.Positive(t, r.Completed[2]+r.Completed[3], "no training or batch job finished")
			assert.Positive(t, r.Checkpoints)
			assert.InDelta(t, 24, r.Hours, 1e-9)
		})
	}
}

func TestBorrowingRecoversWhatStaticWastes(t *testing.T) {
	t.Parallel()
	static := run(t, short(Static, 5))
	borrow := run(t, short(Borrow, 5))
	// Under the static split the inference guarantee it does not use is
	// idle: a third of it or more, given a 12-hour trough at 500 of 1,200.
	assert.Greater(t, static.Avg(static.ReservedIdleGPUh), 0.3*float64(static.InferenceNominal))
	assert.Zero(t, static.BorrowedGPUh)
	// Borrowing lends it to training and batch instead.
	assert.Positive(t, borrow.BorrowedGPUh)
	others := func(r *Result) float64 { return r.TrainingGPUh + r.BatchGPUh }
	assert.Greater(t, others(borrow), others(static)+0.5*static.ReservedIdleGPUh,
		"borrowing should recover at least half the idle reservation")
	assert.Less(t, borrow.IdleGPUh, static.IdleGPUh/2)
}

func TestInferenceGetsCapacityBack(t *testing.T) {
	t.Parallel()
	c := short(Borrow, 11)
	c.FailuresPerGPUDay = -1 // a lost node is not a reclaim
	r := run(t, c)
	if r.Drains == 0 {
		t.Skip("the scheduler drained no victim: it does not preempt for inference")
	}
	require.NotEmpty(t, r.RestoreTimes)
	// From the drain of its first victim to its admission, a replica
	// waits at most the grace period plus one cycle.
	bound := fleet.DefaultGrace + 10*time.Second
	assert.LessOrEqual(t, Quantile(r.RestoreTimes, 1), bound,
		"an inference replica got borrowed capacity back later than the grace period plus one cycle after the drain")
	// From its submission it may also wait for victims past their
	// minimum runtime; the design's target is five minutes.
	assert.LessOrEqual(t, Quantile(r.ReclaimWaits, 0.99), 5*time.Minute)
}

func TestConfigRefused(t *testing.T) {
	for name, c := range map[string]Config{
		"tiny fleet":    {GPUs: 4},
		"drain bounds":  {DrainMin: time.Minute, DrainMax: time.Second},
		"repair bounds": {RepairMin: time.Hour, RepairMax: time.Minute},
		"autoscale":     {Cycle: 7 * time.Second, Autoscale: time.Minute},
		"trough > peak": {Workload: Workload{InferenceTrough: 0.5, InferencePeak: 0.4}},
		"trough hours":  {Workload: Workload{TroughHours: 25}},
		"negative":      {Duration: -time.Hour},
		"backlog":       {Workload: Workload{TrainingBacklog: -1}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Run(c)
			require.ErrorIs(t, err, ErrInvalidConfig)
			assert.True(t, strings.HasPrefix(err.Error(), "sim: "))
		})
	}
}

func TestDiurnalCurve(t *testing.T) {
	trough := 0
	for m := range 24 * 60 {
		v := diurnal(float64(m)/60, 12)
		require.True(t, v >= 0 && v <= 1)
		if v == 0 {
			trough++
		}
	}
	assert.InDelta(t, 12*60, trough, 1, "minutes a day at the trough")
	assert.Equal(t, 1.0, diurnal(13, 12))
}

func TestReadPhilly(t *testing.T) {
	in := "# comment\ntimestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-09 07:01:55,66.0,1,66.0,11cb48\n" +
		"2017-10-09 06:13:03,2951.0,16,47216.0,6214e9\n"
	jobs, err := ReadPhilly(strings.NewReader(in))
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	assert.Equal(t, TraceJob{Arrival: 0, Duration: 2951 * time.Second, GPUs: 16, Team: "6214e9"}, jobs[0])
	assert.Equal(t, 48*time.Minute+52*time.Second, jobs[1].Arrival)

	for name, bad := range map[string]string{
		"empty":    "timestamp,duration,num_gpus,gpu_time,cluster\n",
		"time":     "2017-13-09 07:01:55,66.0,1,66.0,a\n",
		"duration": "2017-10-09 07:01:55,-1,1,66.0,a\n",
		"gpus":     "2017-10-09 07:01:55,66.0,0,66.0,a\n",
		"fields":   "2017-10-09 07:01:55,66.0,1\n",
		"no team":  "2017-10-09 07:01:55,66.0,1,66.0,\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadPhilly(strings.NewReader(bad))
			require.ErrorIs(t, err, ErrTrace)
			var te *TraceError
			assert.True(t, errors.As(err, &te))
		})
	}
}

func FuzzReadPhilly(f *testing.F) {
	f.Add("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n")
	f.Add("2017-10-09 07:01:55,1e308,65536,1,x\n")
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadPhilly(strings.NewReader(in))
		if err != nil {
			require.ErrorIs(t, err, ErrTrace)
			return
		}
		for i, j := range jobs {
			require.Positive(t, j.GPUs)
			require.Positive(t, j.Duration)
			require.GreaterOrEqual(t, j.Arrival, time.Duration(0))
			if i > 0 {
				require.GreaterOrEqual(t, j.Arrival, jobs[i-1].Arrival)
			}
		}
	})
}

func TestTraceRun(t *testing.T) {
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n"
	for h := range 30 {
		in += "2017-10-09 " + twoDigits(h%24) + ":00:00,3600.0,8,28800.0,vc" + twoDigits(h%3) + "\n"
		in += "2017-10-09 " + twoDigits(h%24) + ":30:00,1800.0,2,3600.0,vc" + twoDigits(h%3) + "\n"
	}
	jobs, err := ReadPhilly(strings.NewReader(in))
	require.NoError(t, err)
	c := short(Borrow, 1)
	c.Duration = 12 * time.Hour
	c.Trace = jobs
	r := run(t, c)
	assert.Empty(t, r.Violations)
	assert.Positive(t, r.Completed[2])
	assert.Positive(t, r.Completed[3])
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }
