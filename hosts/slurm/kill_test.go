package slurm

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/hosts/host"
)

// A victim that ignores SIGTERM is killed at its drain deadline on the
// host's clock, not before: a batch job that does not requeue (the rule
// makes it preemptible) is sent SIGTERM, traps it and runs on; cycles up
// to a second before the deadline leave it running; the first cycle at
// the deadline kills it (SIGKILL to its script, no second SIGTERM), and
// the inference replica it was drained for runs on its node.
func TestSlurmKillAtDeadline(t *testing.T) {
	e := startCluster(t)
	cfg := testConfig("")
	yes := true
	cfg.Rules[2].Preemptible = &yes
	clock := &host.ShiftedClock{}
	hs := e.hostClock(cfg, clock)
	long := e.script("long.sh", 0, 10*time.Minute)
	stubborn := e.stubborn("stubborn.sh")
	// As in TestSlurmReclaim: research within its quota, batch borrowing
	// all that inference lends, 16 nodes free.
	_, batch, nodeOf := hs.borrowed(stubborn, "--no-requeue")
	// 17 replicas: 16 take the free nodes, one takes back a batch node.
	var inf []string
	for range 17 {
		inf = append(inf, e.sbatch("-p", "inference", "-N1", "--gres=gpu:8", long))
	}
	hs.until(30*time.Second, "a victim drained", func(map[string]Job) bool { return len(hs.drains) > 0 })
	require.Len(t, hs.drains, 1, "one victim for the one replica beyond the free nodes")
	var victim string
	for id := range hs.drains {
		victim = id
	}
	dr := hs.drains[victim]
	require.Contains(t, batch, victim)
	beneficiary := dr.Beneficiaries[0]
	require.Contains(t, inf, beneficiary)
	require.Eventually(t, func() bool { return len(e.log("term.log")[victim]) == 1 }, 10*time.Second, 100*time.Millisecond,
		"the victim got SIGTERM (scancel --signal=TERM)")
	// The replicas on free nodes start before the clock moves: a job
	// released longer than Config.StartTimeout ago on the host's clock
	// and not running counts as a failed start.
	others := slices.DeleteFunc(slices.Clone(inf), func(id string) bool { return id == beneficiary })
	hs.until(60*time.Second, "the other replicas running", allRunning(others...))

	// Up to a second before the deadline on the host's clock, the victim
	// runs on: it is not killed.
	for _, before := range []time.Duration{20 * time.Second, 5 * time.Second, time.Second} {
		clock.Advance(dr.Deadline.Add(-before).Sub(clock.Now()))
		_, err := hs.h.Cycle(context.Background())
		require.NoError(t, err)
		require.True(t, clock.Now().Before(dr.Deadline))
		assert.Empty(t, hs.kills, "no kill %s before the deadline", before)
		assert.Equal(t, StateRunning, e.jobs()[victim].State, "the victim runs %s before the deadline", before)
	}
	assert.Equal(t, StatePending, e.jobs()[beneficiary].State, "the beneficiary waits for the victim's node")

	// At the deadline the host kills it.
	clock.Advance(dr.Deadline.Sub(clock.Now()))
	killedAt := time.Now()
	_, err := hs.h.Cycle(context.Background())
	require.NoError(t, err)
	require.Contains(t, hs.kills, victim, "killed by the first cycle at the deadline")
	k := hs.kills[victim]
	assert.Equal(t, dr.Deadline, k.Deadline)
	assert.GreaterOrEqual(t, k.Overdue, time.Duration(0))
	assert.Less(t, k.Overdue, time.Second, "the kill comes at the deadline, on the host's clock")
	require.Eventually(t, func() bool {
		j, ok := e.jobs()[victim]
		return !ok || j.Ended()
	}, 30*time.Second, 100*time.Millisecond, "the victim's job ends")
	ended := time.Since(killedAt)
	t.Logf("victim %s ended %s after the kill", victim, ended.Round(100*time.Millisecond))
	assert.Less(t, ended, 9*time.Second, "killed, not given the cluster's KillWait (10 s) again")
	assert.Len(t, e.log("term.log")[victim], 1, "no second SIGTERM: the kill is SIGKILL")

	js := hs.until(60*time.Second, "the beneficiary running", allRunning(inf...))
	assert.Equal(t, []string{nodeOf[victim]}, js[beneficiary].NodeList, "the beneficiary runs on the victim's node")
	for _, id := range batch {
		if id != victim {
			assert.Equal(t, StateRunning, js[id].State, "batch job %s untouched", id)
		}
	}
	assert.Equal(t, 1, hs.drained[victim], "drained once")
	assert.Len(t, e.log("term.log"), 1, "no other job got SIGTERM")

	// /metrics counts what happened: one reclaim drain, one kill past
	// its deadline, every admission, and a full fleet.
	srv := httptest.NewServer(hs.h.Handler())
	defer srv.Close()
	m := scrape(t, srv.URL+"/metrics")
	assert.Equal(t, 1.0, m[`fleet_preemptions_total{queue="batch",reason="reclaim"}`])
	assert.Equal(t, 1.0, m[`fleet_drain_deadline_misses_total{queue="batch"}`])
	assert.Equal(t, 17.0, m[`fleet_admissions_total{queue="prod-inference",shape="inference"}`])
	assert.Equal(t, 32.0, m[`fleet_admissions_total{queue="batch",shape="batch"}`])
	assert.Equal(t, 1.0, m[`fleet_admissions_total{queue="research",shape="training"}`])
	assert.Equal(t, 17.0, m[`fleet_queue_wait_seconds_count{queue="prod-inference"}`])
	assert.Equal(t, 512.0, m["fleet_gpus_healthy"])
	assert.Equal(t, 0.0, m["fleet_gpus_free"], "research 128 + batch 31 x 8 + inference 17 x 8 GPUs")
	assert.Equal(t, 136.0, m[`fleet_gpus_allocated{flavor="H100",queue="prod-inference"}`])
	assert.Equal(t, 248.0, m[`fleet_gpus_allocated{flavor="H100",queue="batch"}`])
}
