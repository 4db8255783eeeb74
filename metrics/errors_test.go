package metrics_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   metrics.Config
		field string
	}{
		{"negative bucket", metrics.Config{Bucket: -time.Hour}, "Bucket"},
		{"tiny bucket", metrics.Config{Bucket: time.Millisecond}, "Bucket"},
		{"threshold above 1", metrics.Config{IdleThreshold: 1.5}, "IdleThreshold"},
		{"threshold NaN", metrics.Config{IdleThreshold: math.NaN()}, "IdleThreshold"},
		{"negative window", metrics.Config{IdleWindow: -1}, "IdleWindow"},
		{"negative restart", metrics.Config{RestartTime: -1}, "RestartTime"},
		{"zero class limit", metrics.Config{IdleLimits: map[string]time.Duration{"notebook": 0}}, `IdleLimits["notebook"]`},
		{"negative price", metrics.Config{Flavors: map[string]metrics.Flavor{"a100": {DollarsPerGPUHour: -1}}}, `Flavors["a100"].DollarsPerGPUHour`},
		{"infinite peak", metrics.Config{Default: metrics.Flavor{PeakFLOPS: math.Inf(1)}}, "Default.PeakFLOPS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := metrics.New(tc.cfg)
			require.ErrorIs(t, err, metrics.ErrInvalidConfig)
			var ce *metrics.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
			assert.True(t, strings.HasPrefix(err.Error(), "metrics: invalid config: "+tc.field))
		})
	}
	r, err := metrics.New(metrics.Config{})
	require.NoError(t, err)
	cfg := r.Config()
	assert.Equal(t, time.Hour, cfg.Bucket)
	assert.Equal(t, metrics.H100(), cfg.Default)
	assert.Equal(t, 0.05, cfg.IdleThreshold)
}

func TestInputRefusedWhole(t *testing.T) {
	r, err := metrics.New(metrics.Config{})
	require.NoError(t, err)
	adm := fleet.Event{Kind: fleet.EventAdmitted, Time: at(time.Hour), Workload: "w", Queue: "q", Shape: gang.Batch, GPUs: 8}
	require.NoError(t, r.Record(adm))
	before := r.Report(t0, at(3*time.Hour))

	for _, tc := range []struct {
		name string
		e    fleet.Event
		want error
	}{
		{"zero time", fleet.Event{Kind: fleet.EventSubmitted, Workload: "x"}, metrics.ErrInvalidInput},
		{"back in time", fleet.Event{Kind: fleet.EventSubmitted, Time: t0, Workload: "x"}, metrics.ErrOutOfOrder},
		{"unknown kind", fleet.Event{Kind: 99, Time: at(2 * time.Hour), Workload: "x"}, metrics.ErrInvalidInput},
		{"negative GPUs", fleet.Event{Kind: fleet.EventAdmitted, Time: at(2 * time.Hour), Workload: "x", GPUs: -1}, metrics.ErrInvalidInput},
		{"borrowing more than held", fleet.Event{Kind: fleet.EventAdmitted, Time: at(2 * time.Hour), Workload: "x", GPUs: 1, BorrowedGPUs: 2}, metrics.ErrInvalidInput},
		{"no workload", fleet.Event{Kind: fleet.EventExited, Time: at(2 * time.Hour)}, metrics.ErrInvalidInput},
		{"NaN lost", fleet.Event{Kind: fleet.EventDrainStarted, Time: at(2 * time.Hour), Workload: "w", LostGPUSeconds: math.NaN()}, metrics.ErrInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, r.Record(tc.e), tc.want)
			good := fleet.Event{Kind: fleet.EventExited, Time: at(2 * time.Hour), Workload: "w"}
			err := r.RecordAll([]fleet.Event{good, tc.e})
			require.ErrorIs(t, err, tc.want)
			var ie *metrics.InputError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, 2, ie.Index)
			assert.Equal(t, before, r.Report(t0, at(3*time.Hour)), "a refused batch records nothing")
		})
	}

	require.ErrorIs(t, r.Observe(at(2*time.Hour), "nobody", metrics.Sample{}), metrics.ErrUnknownWorkload)
	require.ErrorIs(t, r.Observe(at(2*time.Hour), "w", metrics.Sample{SMActivity: 2}), metrics.ErrInvalidInput)
	require.ErrorIs(t, r.Observe(at(2*time.Hour), "w", metrics.Sample{MFU: -0.1}), metrics.ErrInvalidInput)
	require.ErrorIs(t, r.Observe(t0, "w", metrics.Sample{}), metrics.ErrOutOfOrder)
	require.ErrorIs(t, r.ObserveSnapshot(fleet.Snapshot{Time: t0}), metrics.ErrOutOfOrder)
	require.ErrorIs(t, r.ObserveSnapshot(fleet.Snapshot{}), metrics.ErrInvalidInput)
	assert.Equal(t, before, r.Report(t0, at(3*time.Hour)))
	assert.EqualError(t, r.Observe(at(2*time.Hour), "w", metrics.Sample{SMActivity: 2}),
		`metrics: invalid input: sample of "w": SM activity 2 outside 0-1`)

	// Events for workloads never admitted are skipped and counted.
	require.NoError(t, r.Record(fleet.Event{Kind: fleet.EventExited, Time: at(2 * time.Hour), Workload: "ghost"}))
	adm.Time = at(2 * time.Hour)
	require.NoError(t, r.Record(adm))
	assert.Equal(t, 2, r.Unmatched())
}

func TestCSV(t *testing.T) {
	r, err := metrics.New(metrics.Config{RestartTime: 5 * time.Minute})
	require.NoError(t, err)
	play(t, r, preemptScenario())
	rep := r.Report(t0, at(2*time.Hour))
	var b bytes.Buffer
	require.NoError(t, metrics.WriteCSV(&b, rep))
	recs, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, []string{"table", "row", "column", "value"}, recs[0])
	find := func(table, row, col string) string {
		for _, rec := range recs {
			if rec[0] == table && rec[1] == row && rec[2] == col {
				return rec[3]
			}
		}
		return "missing"
	}
	assert.Equal(t, "4.266666666666667", find("preemptions", "research/reclaim", "lost GPU-h"))
	assert.Equal(t, "1", find("drains", "", "deadline misses"))
	assert.Equal(t, "1", find("cross-spine", "research", "gangs admitted"))
	assert.Equal(t, "", find("cost", "fleet", "per useful PFLOP"), "undefined without MFU")

	b.Reset()
	require.NoError(t, metrics.WriteHourlyCSV(&b, rep))
	recs, err = csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	assert.Equal(t, []string{"2026-01-01T00:00:00Z", "0.000", "0.000", "16.000", "4.267", "0.000", "0.000", "0.000", "0.000", "0.000"}, recs[1])
}

func TestEmptyReport(t *testing.T) {
	r, err := metrics.New(metrics.Config{})
	require.NoError(t, err)
	rep := r.Report(t0, t0)
	assert.Empty(t, rep.Hourly)
	var b bytes.Buffer
	require.NoError(t, metrics.WriteMarkdown(&b, rep))
	assert.Contains(t, b.String(), "## Cost")
	assert.True(t, errors.Is(r.Record(fleet.Event{Kind: 0, Time: t0}), metrics.ErrInvalidInput))
}
