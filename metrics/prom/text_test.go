package prom_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/hosts/host"
	"github.com/fleetsched/fleet/metrics/prom"
)

// host.Metrics, which serves fleet's figures in the text format with the
// standard library only (for hosts/slurm), writes what the Exporter
// writes through the Prometheus client, byte for byte, for the same
// events and snapshots: same families, help, types, labels, buckets,
// order and number formats. The usage gauges, which host.Metrics does
// not keep, are left out of the comparison.
func TestHostMetricsMatchTheExporter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := []fleet.Event{
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "chat", Queue: "inference", Shape: gang.Inference, GPUs: 4, Wait: 3 * time.Second},
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "chat-2", Queue: "inference", Shape: gang.Inference, GPUs: 4, Wait: 1500 * time.Millisecond},
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "pt", Queue: "research", Shape: gang.Training, GPUs: 64, Wait: 90 * time.Second, CrossesSpines: true},
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "old", Queue: "research", Shape: gang.Training, GPUs: 8, Wait: 400000 * time.Second},
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "b", Queue: `q"\x`, Shape: gang.Batch, GPUs: 1, Wait: 0},
		{Kind: fleet.EventDrainStarted, Time: t0.Add(time.Hour), Workload: "pt", Queue: "research", Reason: "reclaim", LostGPUSeconds: 38400.25},
		{Kind: fleet.EventDrainStarted, Time: t0.Add(time.Hour), Workload: "b", Queue: `q"\x`},
		{Kind: fleet.EventKilled, Time: t0.Add(time.Hour + 2*time.Minute), Workload: "pt", Queue: "research"},
		{Kind: fleet.EventNodeDown, Time: t0.Add(2 * time.Hour), Node: "n7"},
		{Kind: fleet.EventExited, Time: t0.Add(2 * time.Hour), Workload: "pt", Queue: "research"},
	}
	snap := fleet.Snapshot{Time: t0.Add(2 * time.Hour), Nominated: 8,
		Fleet: fleet.FleetView{HealthyGPUs: 2040, FreeGPUs: 100, StrandedGPUs: 12,
			LargestFreeBlock: []fleet.LevelBlock{{Level: "spine", Nodes: 3}, {Level: "leaf", Nodes: 2}},
			Crossings:        []fleet.LeafCrossings{{Leaf: "leaf-0-4", Gangs: 1}, {Leaf: "leaf-0-3", Gangs: 2}}},
		Queues: []fleet.QueueView{
			{Name: "all"},
			{Name: "research", Parent: "all", IsQueue: true, Flavors: []fleet.FlavorView{
				{Flavor: "h100", Nominal: 600, InUse: 1000, Borrowed: 400}, {Flavor: "a100", Nominal: 8, InUse: 1}}},
			{Name: "inference", Parent: "all", IsQueue: true, Flavors: []fleet.FlavorView{{Flavor: "h100", Nominal: 1200, InUse: 500, Lendable: 700}}},
		}}
	empty := fleet.Snapshot{}

	for _, tc := range []struct {
		name   string
		events []fleet.Event
		snaps  []fleet.Snapshot
	}{
		{"nothing yet", nil, nil},
		{"events only", events, nil},
		{"events and a snapshot", events, []fleet.Snapshot{snap}},
		{"a snapshot, then an empty one", events, []fleet.Snapshot{snap, empty}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			x, err := prom.New(reg)
			require.NoError(t, err)
			m := host.NewMetrics()
			x.RecordAll(tc.events)
			m.RecordAll(tc.events)
			for _, s := range tc.snaps {
				x.ObserveSnapshot(s)
				m.ObserveSnapshot(s)
			}
			want := withoutFamilies(scrape(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})), "fleet_gpus_used", "fleet_gpus_idle")
			got := scrape(t, m)
			assert.Equal(t, want, got)
			if len(tc.events) > 0 {
				assert.Contains(t, got, `fleet_admissions_total{queue="q\"\\x",shape="batch"} 1`)
			}
		})
	}
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8"),
		"content type %q", resp.Header.Get("Content-Type"))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// withoutFamilies drops the named families' HELP, TYPE and sample lines.
func withoutFamilies(text string, names ...string) string {
	var out []string
	for _, line := range strings.SplitAfter(text, "\n") {
		f := strings.Fields(line)
		name := ""
		switch {
		case len(f) >= 3 && f[0] == "#":
			name = f[2]
		case len(f) >= 1:
			name, _, _ = strings.Cut(f[0], "{")
		}
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
