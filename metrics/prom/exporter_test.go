package prom_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
	"github.com/fleetsched/fleet/metrics/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScrape(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	x, err := prom.New(reg)
	require.NoError(t, err)
	_, err = prom.New(reg)
	require.Error(t, err, "registering twice is refused")

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := []fleet.Event{
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "chat", Queue: "inference", Shape: gang.Inference, GPUs: 4, Wait: 3 * time.Second},
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "pt", Queue: "research", Shape: gang.Training, GPUs: 64, Wait: 90 * time.Second, CrossesSpines: true},
		{Kind: fleet.EventDrainStarted, Time: t0.Add(time.Hour), Workload: "pt", Queue: "research", Reason: "reclaim", LostGPUSeconds: 38400},
		{Kind: fleet.EventKilled, Time: t0.Add(time.Hour + 2*time.Minute), Workload: "pt", Queue: "research"},
		{Kind: fleet.EventNodeDown, Time: t0.Add(2 * time.Hour), Node: "n7"},
	}
	x.RecordAll(events)
	x.ObserveSnapshot(fleet.Snapshot{Time: t0.Add(2 * time.Hour), Nominated: 8,
		Fleet: fleet.FleetView{HealthyGPUs: 2040, FreeGPUs: 100, StrandedGPUs: 12,
			LargestFreeBlock: []fleet.LevelBlock{{Level: "spine", Nodes: 3}, {Level: "leaf", Nodes: 2}},
			Crossings:        []fleet.LeafCrossings{{Leaf: "leaf-0-3", Gangs: 2}, {Leaf: "leaf-0-4", Gangs: 1}}},
		Queues: []fleet.QueueView{
			{Name: "all"},
			{Name: "inference", Parent: "all", IsQueue: true, Flavors: []fleet.FlavorView{{Flavor: "h100", Nominal: 1200, InUse: 500, Lendable: 700}}},
			{Name: "research", Parent: "all", IsQueue: true, Flavors: []fleet.FlavorView{{Flavor: "h100", Nominal: 600, InUse: 1000, Borrowed: 400}}},
		}})
	r, err := metrics.New(metrics.Config{})
	require.NoError(t, err)
	require.NoError(t, r.RecordAll(events[:2]))
	require.NoError(t, r.Observe(t0.Add(time.Minute), "chat", metrics.Sample{SMActivity: 0.5}))
	require.NoError(t, r.Observe(t0.Add(time.Minute), "pt", metrics.Sample{SMActivity: 0.01}))
	x.ObserveUsage(r)

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(body)

	for _, line := range []string{
		"# TYPE fleet_gpus_allocated gauge",
		`fleet_gpus_allocated{flavor="h100",queue="inference"} 500`,
		`fleet_gpus_borrowed{flavor="h100",queue="research"} 400`,
		`fleet_gpus_lendable{flavor="h100",queue="inference"} 700`,
		"fleet_gpus_healthy 2040",
		"fleet_gpus_free 100",
		"fleet_gpus_nominated 8",
		"fleet_stranded_gpus 12",
		`fleet_largest_free_block_nodes{level="spine"} 3`,
		`fleet_leaf_crossing_gangs{leaf="leaf-0-3"} 2`,
		`fleet_leaf_crossing_gangs{leaf="leaf-0-4"} 1`,
		`fleet_gpus_used{queue="inference"} 2`,
		`fleet_gpus_used{queue="research"} 0.64`,
		`fleet_gpus_idle{queue="research"} 64`,
		`fleet_gpus_idle{queue="inference"} 0`,
		"# TYPE fleet_queue_wait_seconds histogram",
		`fleet_queue_wait_seconds_bucket{queue="inference",le="4"} 1`,
		`fleet_queue_wait_seconds_bucket{queue="research",le="64"} 0`,
		`fleet_queue_wait_seconds_bucket{queue="research",le="128"} 1`,
		`fleet_queue_wait_seconds_sum{queue="research"} 90`,
		`fleet_queue_wait_seconds_count{queue="research"} 1`,
		"# TYPE fleet_preemptions_total counter",
		`fleet_preemptions_total{queue="research",reason="reclaim"} 1`,
		`fleet_preemption_lost_gpu_seconds_total{queue="research"} 38400`,
		`fleet_drain_deadline_misses_total{queue="research"} 1`,
		`fleet_admissions_total{queue="research",shape="training"} 1`,
		`fleet_cross_spine_gangs_total{queue="research"} 1`,
		"fleet_node_failures_total 1",
	} {
		assert.Contains(t, text, line+"\n")
	}
}
