package slurm

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/topology"
)

// Jobs of every shape submitted with sbatch run on exactly the nodes
// fleet chose.
func TestSlurmRunsOnChosenNodes(t *testing.T) {
	e := startCluster(t)
	hs := e.host(testConfig(""))
	long := e.script("long.sh", 0, 10*time.Minute)
	var ids []string
	for range 6 {
		ids = append(ids, e.sbatch("-p", "inference", "-N1", "--gres=gpu:2", long))
	}
	for range 2 {
		ids = append(ids, e.sbatch("-p", "research", "-N4", "--gres=gpu:8", "--requeue", long))
	}
	for range 8 {
		ids = append(ids, e.sbatch("-p", "batch", "-N1", "--gres=gpu:4", "--requeue", long))
	}
	js := e.jobs()
	for _, id := range ids {
		require.Equal(t, StatePending, js[id].State, "job %s", id)
		require.True(t, js[id].Held(), "job %s starts held", id)
	}
	js = hs.until(60*time.Second, "every job running", allRunning(ids...))
	for _, id := range ids {
		got := slices.Clone(js[id].NodeList)
		slices.Sort(got)
		assert.Equal(t, hs.admitted[id], got, "job %s runs where fleet placed it", id)
		assert.Len(t, got, js[id].Nodes, "job %s", id)
	}
}

// A 64-GPU gang asking one leaf switch lands under one leaf, never split:
// with a node drained in each of leaves 0 to 6, only leaf 7 is whole.
func TestSlurmGangOneLeaf(t *testing.T) {
	e := startCluster(t)
	hs := e.host(testConfig(""))
	for l := range 7 {
		e.run("scontrol", "update", fmt.Sprintf("NodeName=gpu%03d", l*8+3), "State=DRAIN", "Reason=fragment")
	}
	long := e.script("long.sh", 0, 10*time.Minute)
	gang := e.sbatch("-p", "research", "-N8", "--gres=gpu:8", "--switches=1", "--requeue", long)
	// A second gang of the same size has no whole leaf left: it waits,
	// and its Comment says why.
	second := e.sbatch("-p", "research", "-N8", "--gres=gpu:8", "--switches=1", "--requeue", long)
	js := hs.until(60*time.Second, "the gang running, the second explained", func(js map[string]Job) bool {
		return js[gang].State == StateRunning && js[second].Comment != ""
	})
	nodes := js[gang].NodeList
	require.Len(t, nodes, 8)
	for _, n := range nodes {
		assert.Equal(t, 7, leafOf(n), "node %s of the gang", n)
	}
	assert.Equal(t, StatePending, js[second].State)
	assert.True(t, js[second].Held())
	assert.Contains(t, js[second].Comment, "fleet: ")
	t.Logf("second gang's Comment: %s", js[second].Comment)
}

// Inference reclaims capacity batch borrowed: the victims get SIGTERM,
// are requeue-held, and the inference jobs run on their nodes.
func TestSlurmReclaim(t *testing.T) {
	e := startCluster(t)
	hs := e.host(testConfig(""))
	long := e.script("long.sh", 0, 10*time.Minute)
	// Research takes 128 GPUs of its own and batch borrows 256: all that
	// inference (300 guaranteed, 175 of them lendable) lends. 128 GPUs
	// stay free.
	research, batch, nodeOf := hs.borrowed(long, "--requeue")
	// 18 inference replicas of 8 GPUs: 16 take the free nodes, 2 take
	// back borrowed capacity.
	var inf []string
	for range 18 {
		inf = append(inf, e.sbatch("-p", "inference", "-N1", "--gres=gpu:8", long))
	}
	js := hs.until(90*time.Second, "inference running", allRunning(inf...))
	terms := e.log("term.log")
	var victims []string
	victimNodes := map[string]bool{}
	for _, id := range batch {
		if hs.drained[id] > 0 {
			victims = append(victims, id)
			victimNodes[nodeOf[id]] = true
		}
	}
	require.Len(t, victims, 2, "one 8-GPU batch job per inference replica beyond the free nodes")
	for _, id := range victims {
		assert.Equal(t, 1, hs.drained[id], "victim %s drained once", id)
		assert.Equal(t, []string{nodeOf[id]}, terms[id], "victim %s got SIGTERM on its node", id)
		assert.Equal(t, StatePending, js[id].State, "victim %s requeued", id)
		assert.True(t, js[id].Held(), "victim %s held", id)
		assert.Contains(t, js[id].Comment, "fleet: ", "victim %s says why it waits", id)
	}
	infNodes := map[string]bool{}
	for _, id := range inf {
		infNodes[js[id].NodeList[0]] = true
	}
	for n := range victimNodes {
		assert.True(t, infNodes[n], "a reclaiming replica runs on victim node %s", n)
	}
	assert.Len(t, terms, 2, "no other job got SIGTERM")
	assert.Equal(t, StateRunning, js[research].State, "research, within its quota, untouched")
	assert.Zero(t, hs.drained[research])
}

// A node going DOWN under a gang: Slurm requeues the gang, the host holds
// it again and fleet places it on healthy nodes.
func TestSlurmNodeDown(t *testing.T) {
	e := startCluster(t)
	hs := e.host(testConfig(""))
	long := e.script("long.sh", 0, 10*time.Minute)
	gang := e.sbatch("-p", "research", "-N4", "--gres=gpu:8", "--requeue", long)
	js := hs.until(60*time.Second, "gang running", allRunning(gang))
	// RUNNING comes before the script's first line: the node goes down
	// under a gang that has started.
	require.Eventually(t, func() bool { return len(e.log("start.log")[gang]) == 1 }, 30*time.Second, 100*time.Millisecond,
		"the gang's script started")
	down := js[gang].NodeList[1]
	e.run("scontrol", "update", "NodeName="+down, "State=DOWN", "Reason=test")
	js = hs.until(90*time.Second, "gang running again, without the down node", func(js map[string]Job) bool {
		j := js[gang]
		return j.State == StateRunning && !slices.Contains(j.NodeList, down)
	})
	assert.Len(t, js[gang].NodeList, 4)
	assert.Eventually(t, func() bool { return len(e.log("start.log")[gang]) == 2 }, 30*time.Second, 100*time.Millisecond,
		"started twice: before and after the node went down")
	assert.Len(t, e.log("start.log")[gang], 2, "and no more")
	hs.h.Scheduler(func(s *fleet.Scheduler) {
		for _, n := range s.Snapshot().Fleet.Unhealthy {
			if n.Node == down {
				assert.Equal(t, topology.Down, n.Health)
			}
		}
	})
}

// Bad input is reported on the job and changes nothing else: a managed
// partition no rule maps, and a gang larger than its queue can ever
// reach. Slurm itself refuses more GPUs per node than any node has.
func TestSlurmBadInput(t *testing.T) {
	e := startCluster(t)
	hs := e.host(testConfig(""))
	long := e.script("long.sh", 0, 10*time.Minute)
	unmapped := e.sbatch("-p", "scratch", "-N1", "--gres=gpu:1", long)
	huge := e.sbatch("-p", "research", "-N64", "--gres=gpu:8", long)
	good := e.sbatch("-p", "batch", "-N1", "--gres=gpu:8", long)
	// Slurm takes a job asking 16 GPUs of one node (it would wait for a
	// node configuration that does not exist); fleet refuses it.
	wide := e.sbatch("-p", "batch", "-N1", "--gres=gpu:16", long)
	js := hs.until(30*time.Second, "refusals written", func(js map[string]Job) bool {
		return js[unmapped].Comment != "" && js[huge].Comment != "" && js[wide].Comment != "" &&
			js[good].State == StateRunning
	})
	t.Logf("unmapped: %s", js[unmapped].Comment)
	t.Logf("wide: %s", js[wide].Comment)
	t.Logf("huge: %s", js[huge].Comment)
	assert.Contains(t, js[unmapped].Comment, `fleet: refused: no rule maps partition "scratch"`)
	assert.Contains(t, js[wide].Comment, "fleet: refused:")
	// A gang beyond what its queue can ever reach is taken, and waits
	// with the reason.
	assert.Contains(t, js[huge].Comment, "never fits")
	for _, id := range []string{unmapped, wide} {
		hs.h.Scheduler(func(s *fleet.Scheduler) {
			_, err := s.Explain(id)
			assert.ErrorIs(t, err, fleet.ErrUnknownID, "job %s not in the scheduler", id)
		})
	}
	for _, id := range []string{unmapped, huge, wide} {
		assert.Equal(t, StatePending, js[id].State)
		assert.True(t, js[id].Held(), "job %s stays held", id)
	}
	hs.h.Scheduler(func(s *fleet.Scheduler) {
		snap := s.Snapshot()
		assert.Len(t, snap.Running, 1, "the good job runs")
	})
}

// The host killed mid-drain and restarted re-drains nothing: the new host
// adopts the victims still ending as drains in progress (from Slurm's
// states and its state file) and the reclaimers' nominations, and starts
// the reclaimers on the victims' nodes once they are gone.
func TestSlurmRestartMidDrain(t *testing.T) {
	e := startCluster(t)
	state := filepath.Join(t.TempDir(), "state.json")
	first := e.host(testConfig(state))
	long := e.script("long.sh", 0, 10*time.Minute)
	// Victims take 6 s to checkpoint after SIGTERM (within the test
	// cluster's KillWait of 10 s).
	slow := e.script("slow.sh", 6*time.Second, 10*time.Minute)
	research, _, nodeOf := first.borrowed(slow, "--requeue")
	var inf []string
	for range 18 {
		inf = append(inf, e.sbatch("-p", "inference", "-N1", "--gres=gpu:8", long))
	}
	first.until(30*time.Second, "drains started", func(map[string]Job) bool { return len(first.drained) == 2 })
	// The first host stops here, its victims still ending.
	js := e.jobs()
	var victims []string
	for id := range first.drained {
		victims = append(victims, id)
		assert.Equal(t, StateCompleting, js[id].State, "victim %s still ending at the restart", id)
	}
	st, err := LoadState(state)
	require.NoError(t, err)
	require.Len(t, st.Drains, 2, "the drains are in the state file")
	require.Len(t, st.Nominated, 2, "the reclaimers' nominations are in the state file")
	second := e.host(testConfig(state))
	js = second.until(90*time.Second, "inference running after the restart", allRunning(inf...))
	assert.Empty(t, second.drained, "the restarted host drains nothing")
	terms := e.log("term.log")
	assert.Len(t, terms, 2, "SIGTERM went to the two victims only")
	infNodes := map[string]bool{}
	for _, id := range inf {
		infNodes[js[id].NodeList[0]] = true
	}
	for _, id := range victims {
		assert.Equal(t, []string{nodeOf[id]}, terms[id], "victim %s signalled once", id)
		assert.Equal(t, StatePending, js[id].State, "victim %s requeued", id)
		assert.True(t, js[id].Held(), "victim %s held", id)
		assert.True(t, infNodes[nodeOf[id]], "a reclaimer runs on victim %s's node", id)
	}
	assert.Equal(t, StateRunning, js[research].State)
	st, err = LoadState(state)
	require.NoError(t, err)
	assert.Empty(t, st.Drains, "no drain left in the state file")
}

// Run serves /metrics, /healthz and /readyz on Config.Listen while it
// cycles: the figures are those of the jobs it started.
func TestSlurmServesMetrics(t *testing.T) {
	e := startCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := testConfig("")
	cfg.Listen, cfg.Period = addr, Duration(200*time.Millisecond)
	h, err := New(cfg, Options{Slurm: e.cmds, Quota: referenceQuota(),
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	long := e.script("long.sh", 0, 10*time.Minute)
	gangID := e.sbatch("-p", "research", "-N4", "--gres=gpu:8", "--requeue", long)
	infID := e.sbatch("-p", "inference", "-N1", "--gres=gpu:2", long)
	require.Eventually(t, func() bool {
		js := e.jobs()
		return js[gangID].State == StateRunning && js[infID].State == StateRunning
	}, 60*time.Second, 200*time.Millisecond, "both jobs running")
	base := "http://" + addr
	var m map[string]float64
	require.Eventually(t, func() bool {
		m = scrape(t, base+"/metrics")
		return m["fleet_gpus_free"] == 512-34
	}, 10*time.Second, 200*time.Millisecond, "a cycle after both started")
	assert.Equal(t, 1.0, m[`fleet_admissions_total{queue="research",shape="training"}`])
	assert.Equal(t, 1.0, m[`fleet_admissions_total{queue="prod-inference",shape="inference"}`])
	assert.Equal(t, 512.0, m["fleet_gpus_healthy"])
	assert.Equal(t, 32.0, m[`fleet_gpus_allocated{flavor="H100",queue="research"}`])
	assert.Equal(t, 2.0, m[`fleet_gpus_allocated{flavor="H100",queue="prod-inference"}`])
	assert.Equal(t, 1.0, m[`fleet_queue_wait_seconds_count{queue="research"}`])
	assert.Zero(t, m["fleet_node_failures_total"])
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "the server stops with Run")
}
