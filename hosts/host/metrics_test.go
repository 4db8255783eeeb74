package host_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/hosts/host"
)

// Metrics counts events and sets gauges from snapshots, as the text a
// scrape reads says: the wait histogram's cumulative buckets, counters by
// their labels, and labelled gauges reset by each snapshot.
func TestMetrics(t *testing.T) {
	m := host.NewMetrics()
	m.RecordAll([]fleet.Event{
		{Kind: fleet.EventAdmitted, Queue: "batch", Shape: gang.Batch, Wait: 3 * time.Second},
		{Kind: fleet.EventAdmitted, Queue: "batch", Shape: gang.Batch, Wait: 5 * time.Second},
		{Kind: fleet.EventDrainStarted, Queue: "batch", Reason: "reclaim", LostGPUSeconds: 10},
		{Kind: fleet.EventKilled, Queue: "batch"},
		{Kind: fleet.EventNodeDown, Node: "n1"},
		{Kind: fleet.EventExited, Queue: "batch"},
	})
	m.ObserveSnapshot(fleet.Snapshot{Nominated: 8, Fleet: fleet.FleetView{HealthyGPUs: 32, FreeGPUs: 8},
		Queues: []fleet.QueueView{{Name: "batch", IsQueue: true, Flavors: []fleet.FlavorView{{Flavor: "H100", InUse: 16}}}}})
	text := get(t, m)
	for _, line := range []string{
		"# TYPE fleet_queue_wait_seconds histogram",
		`fleet_queue_wait_seconds_bucket{queue="batch",le="2"} 0`,
		`fleet_queue_wait_seconds_bucket{queue="batch",le="4"} 1`,
		`fleet_queue_wait_seconds_bucket{queue="batch",le="8"} 2`,
		`fleet_queue_wait_seconds_bucket{queue="batch",le="131072"} 2`,
		`fleet_queue_wait_seconds_bucket{queue="batch",le="+Inf"} 2`,
		`fleet_queue_wait_seconds_sum{queue="batch"} 8`,
		`fleet_queue_wait_seconds_count{queue="batch"} 2`,
		`fleet_admissions_total{queue="batch",shape="batch"} 2`,
		`fleet_preemptions_total{queue="batch",reason="reclaim"} 1`,
		`fleet_preemption_lost_gpu_seconds_total{queue="batch"} 10`,
		`fleet_drain_deadline_misses_total{queue="batch"} 1`,
		"fleet_node_failures_total 1",
		"fleet_gpus_healthy 32",
		"fleet_gpus_free 8",
		"fleet_gpus_nominated 8",
		`fleet_gpus_allocated{flavor="H100",queue="batch"} 16`,
	} {
		assert.Contains(t, text, line+"\n")
	}
	assert.NotContains(t, text, "fleet_cross_spine_gangs_total", "a labelled family without series is left out")

	m.ObserveSnapshot(fleet.Snapshot{})
	text = get(t, m)
	assert.NotContains(t, text, "fleet_gpus_allocated", "a queue gone from the snapshot is not served")
	assert.Contains(t, text, "fleet_gpus_free 0\n")
	assert.Contains(t, text, `fleet_admissions_total{queue="batch",shape="batch"} 2`+"\n", "counters stay")
}

func get(t *testing.T, m *host.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	assert.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4"))
	return rec.Body.String()
}
