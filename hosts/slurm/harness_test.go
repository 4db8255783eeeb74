package slurm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/hosts/host"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// The TestSlurm tests run against real daemons: one slurmctld and 64
// slurmd on this machine (hack/cluster). They fail when the cluster
// cannot be started.

const clusterNodes = 64

var cluster struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster.dir != "" {
		out, err := exec.Command("hack/cluster", "stop", cluster.dir).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "cluster stop: %v: %s\n", err, out)
		}
		os.RemoveAll(cluster.dir)
	}
	os.Exit(code)
}

// env is a test's view of the cluster.
type env struct {
	t    *testing.T
	dir  string
	conf string
	cmds *Commands
}

// startCluster starts the cluster once per test binary and clears it
// (no jobs, every node resumed) for each test.
func startCluster(t *testing.T) *env {
	t.Helper()
	cluster.once.Do(func() {
		dir, err := os.MkdirTemp("", "fleet-slurm-")
		if err != nil {
			cluster.err = err
			return
		}
		cluster.dir = dir
		out, err := exec.Command("hack/cluster", "start", dir, fmt.Sprint(clusterNodes)).CombinedOutput()
		if err != nil {
			cluster.err = fmt.Errorf("hack/cluster start: %w: %s", err, out)
		}
	})
	require.NoError(t, cluster.err, "Slurm could not be started (install slurmctld, slurmd, munge)")
	e := &env{t: t, dir: cluster.dir, conf: filepath.Join(cluster.dir, "etc", "slurm.conf")}
	e.cmds = &Commands{Runner: Exec{Conf: e.conf}}
	e.clear()
	t.Cleanup(e.clear)
	return e
}

// run runs a Slurm command and returns its output.
func (e *env) run(args ...string) string {
	e.t.Helper()
	out, err := Exec{Conf: e.conf}.Run(context.Background(), args...)
	require.NoError(e.t, err)
	return strings.TrimSpace(string(out))
}

// clear cancels every job, waits until none holds a node, and resumes
// every node (restarting the slurmd of any a test stopped).
func (e *env) clear() {
	e.t.Helper()
	ctx := context.Background()
	ex := Exec{Conf: e.conf}
	_, _ = ex.Run(ctx, "scancel", "--full", "--user=root")
	_, _ = ex.Run(ctx, "scancel", "--user=root")
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := ex.Run(ctx, "squeue", "-h", "-t", "PD,R,CG,CF,S", "-o", "%i %T %r %N")
		if err == nil && strings.TrimSpace(string(out)) == "" {
			break
		}
		if time.Now().After(deadline) {
			e.t.Logf("jobs left after 60 s: %s", out)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	nodes, err := e.cmds.Nodes(ctx, []string{"batch"})
	require.NoError(e.t, err)
	for _, n := range nodes {
		if n.State == "idle" {
			continue
		}
		pid := filepath.Join(e.dir, "run", "slurmd-"+n.Name+".pid")
		if b, err := os.ReadFile(pid); err != nil || exec.Command("kill", "-0", strings.TrimSpace(string(b))).Run() != nil {
			require.NoError(e.t, exec.Command("slurmd", "-N", n.Name, "-f", e.conf).Run(), "restart slurmd %s", n.Name)
		}
		_, _ = ex.Run(ctx, "scontrol", "update", "NodeName="+n.Name, "State=RESUME")
	}
	require.Eventually(e.t, func() bool {
		out, err := ex.Run(ctx, "sinfo", "-h", "-N", "-p", "batch", "-t", "idle", "-o", "%N")
		return err == nil && len(strings.Fields(string(out))) == clusterNodes
	}, 60*time.Second, 250*time.Millisecond, "nodes idle again")
	_ = os.RemoveAll(filepath.Join(e.dir, "jobs"))
	require.NoError(e.t, os.MkdirAll(filepath.Join(e.dir, "jobs"), 0o755))
}

// script writes a job script: it records its start and, on SIGTERM, the
// signal (then sleeps linger before exiting), and otherwise runs for
// runFor.
func (e *env) script(name string, linger, runFor time.Duration) string {
	e.t.Helper()
	jobs := filepath.Join(e.dir, "jobs")
	body := fmt.Sprintf(`#!/bin/bash
trap 'echo "$SLURM_JOB_ID $SLURM_JOB_NODELIST" >> %[1]s/term.log; sleep %[2]d; exit 0' TERM
echo "$SLURM_JOB_ID $SLURM_JOB_NODELIST" >> %[1]s/start.log
end=$((SECONDS + %[3]d))
while [ $SECONDS -lt $end ]; do sleep 0.5; done
`, jobs, int(linger.Seconds()), int(runFor.Seconds()))
	path := filepath.Join(jobs, name)
	require.NoError(e.t, os.WriteFile(path, []byte(body), 0o755))
	return path
}

// stubborn writes a job script that records its start and every SIGTERM
// and runs on regardless, until it is killed.
func (e *env) stubborn(name string) string {
	e.t.Helper()
	jobs := filepath.Join(e.dir, "jobs")
	body := fmt.Sprintf(`#!/bin/bash
trap 'echo "$SLURM_JOB_ID $SLURM_JOB_NODELIST" >> %[1]s/term.log' TERM
echo "$SLURM_JOB_ID $SLURM_JOB_NODELIST" >> %[1]s/start.log
while true; do sleep 0.5; done
`, jobs)
	path := filepath.Join(jobs, name)
	require.NoError(e.t, os.WriteFile(path, []byte(body), 0o755))
	return path
}

// sbatch submits a job and returns its ID.
func (e *env) sbatch(args ...string) string {
	e.t.Helper()
	jobs := filepath.Join(e.dir, "jobs")
	all := append([]string{"sbatch", "--parsable", "--chdir=" + jobs, "--output=/dev/null"}, args...)
	return strings.TrimSpace(strings.Split(e.run(all...), ";")[0])
}

// jobs lists every job.
func (e *env) jobs() map[string]Job {
	e.t.Helper()
	js, err := e.cmds.Jobs(context.Background(), []string{"inference", "research", "batch", "scratch", "native"})
	require.NoError(e.t, err)
	out := map[string]Job{}
	for _, j := range js {
		out[j.ID] = j
	}
	return out
}

// log reads a job log (start.log, term.log): job ID -> lines.
func (e *env) log(name string) map[string][]string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "jobs", name))
	out := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			out[f[0]] = append(out[f[0]], f[1])
		}
	}
	return out
}

// testConfig maps the partitions to the reference queues; scratch is
// managed but has no rule. Batch may be drained at once (no minimum
// runtime) with a 30 s deadline.
func testConfig(stateFile string) Config {
	return Config{
		Partitions: []string{"inference", "research", "batch", "scratch"},
		Rules: []Rule{
			{Partition: "inference", Queue: "prod-inference", Class: fleet.ClassProdInference, Shape: "inference"},
			{Partition: "research", Queue: "research", Class: fleet.ClassReservedResearch, Shape: "training"},
			{Partition: "batch", Queue: "batch", Class: fleet.ClassPreemptibleBatch, Shape: "batch"},
		},
		Classes: []Class{
			{Name: fleet.ClassProdInference, Value: 1000},
			{Name: fleet.ClassReservedResearch, Value: 500, Grace: Duration(30 * time.Second)},
			{Name: fleet.ClassPreemptibleBatch, Value: 100, Grace: Duration(30 * time.Second)},
		},
		StateFile:        stateFile,
		CommentsPerCycle: 16,
	}
}

// harness is a host under test with what its cycles decided.
type harness struct {
	e *env
	h *Host
	// admitted is, per job, the nodes of its last admission.
	admitted map[string][]string
	drained  map[string]int
	// drains and kills are, per job, the last Drain and Kill decided.
	drains  map[string]fleet.Drain
	kills   map[string]fleet.Kill
	decided []fleet.Decisions
	// metrics is what the host's cycles recorded.
	metrics *host.Metrics
}

func (e *env) host(cfg Config) *harness {
	e.t.Helper()
	return e.hostClock(cfg, WallClock{})
}

// hostClock is host with the host reading clock.
func (e *env) hostClock(cfg Config, clock Clock) *harness {
	e.t.Helper()
	hs := &harness{e: e, admitted: map[string][]string{}, drained: map[string]int{},
		drains: map[string]fleet.Drain{}, kills: map[string]fleet.Kill{}, metrics: host.NewMetrics()}
	q := referenceQuota()
	sl := e.cmds
	if dir := os.Getenv("FLEET_SLURM_RECORD"); dir != "" {
		// Record the host's commands as a session for the replay tests.
		rec := &Record{Runner: e.cmds.Runner}
		sl = &Commands{Runner: rec, TopologyFile: filepath.Join(e.dir, "etc", "topology.conf")}
		clock = rec.Clock(clock)
		e.t.Cleanup(func() {
			f, err := os.Create(filepath.Join(dir, e.t.Name()+".session"))
			require.NoError(e.t, err)
			defer f.Close()
			require.NoError(e.t, WriteSession(f, rec.Calls()))
		})
	}
	h, err := New(cfg, Options{Slurm: sl, Quota: q, Clock: clock, Metrics: hs.metrics,
		Logger: slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Observe: func(d fleet.Decisions) {
			for _, a := range d.Admit {
				nodes := make([]string, len(a.Pods))
				for i, p := range a.Pods {
					nodes[i] = p.Node
				}
				slices.Sort(nodes)
				hs.admitted[a.ID] = nodes
			}
			for _, dr := range d.Drain {
				hs.drained[dr.ID]++
				hs.drains[dr.ID] = dr
			}
			for _, k := range d.Kill {
				hs.kills[k.ID] = k
			}
			if len(d.Admit)+len(d.Drain)+len(d.Kill)+len(d.Nominate) > 0 {
				hs.decided = append(hs.decided, d)
			}
		}})
	require.NoError(e.t, err)
	hs.h = h
	return hs
}

// referenceQuota is the reference quotas scaled to the cluster's 512
// GPUs.
func referenceQuota() quota.Spec {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{clusterNodes / 8, 8}, GPUsPerNode: 8})
	return fleet.ReferenceConfigFor(spec).Quota
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// until runs cycles until ok holds, failing after timeout.
func (hs *harness) until(timeout time.Duration, what string, ok func(map[string]Job) bool) map[string]Job {
	hs.e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := hs.h.Cycle(context.Background())
		require.NoError(hs.e.t, err)
		js := hs.e.jobs()
		if ok(js) {
			return js
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, id := range slices.SortedFunc(keys(js), cmpID) {
				j := js[id]
				fmt.Fprintf(&b, "\n  %s %s %s %q %v comment=%q", j.ID, j.Partition, j.State, j.Reason, j.NodeList, j.Comment)
			}
			hs.e.t.Fatalf("%s: not after %s; jobs:%s", what, timeout, b.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func keys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// allRunning holds when every job of ids runs.
func allRunning(ids ...string) func(map[string]Job) bool {
	return func(js map[string]Job) bool {
		for _, id := range ids {
			if js[id].State != StateRunning {
				return false
			}
		}
		return true
	}
}

// borrowed fills the cluster as the reclaim tests start from: research
// runs a 16-node gang within its quota, and 32 one-node batch jobs of
// script (sbatch flags batchArgs) borrow all that inference lends; 16
// nodes stay free. It returns the jobs once they run, and each batch
// job's node.
func (hs *harness) borrowed(script string, batchArgs ...string) (research string, batch []string, nodeOf map[string]string) {
	hs.e.t.Helper()
	long := hs.e.script("long.sh", 0, 10*time.Minute)
	research = hs.e.sbatch("-p", "research", "-N16", "--gres=gpu:8", "--requeue", long)
	for range 32 {
		args := append([]string{"-p", "batch", "-N1", "--gres=gpu:8"}, batchArgs...)
		batch = append(batch, hs.e.sbatch(append(args, script)...))
	}
	js := hs.until(90*time.Second, "research and batch running", allRunning(append([]string{research}, batch...)...))
	nodeOf = map[string]string{}
	for _, id := range batch {
		nodeOf[id] = js[id].NodeList[0]
	}
	return research, batch, nodeOf
}

// scrape reads the host's /metrics: each sample's value by its name and
// labels as written ("fleet_gpus_free", `fleet_admissions_total{queue="batch",shape="batch"}`).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4"))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, "sample line %q", line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, "sample line %q", line)
		out[line[:i]] = v
	}
	return out
}

// leafOf names the leaf switch of a node: 8 nodes per leaf.
func leafOf(node string) int {
	var n int
	fmt.Sscanf(node, "gpu%d", &n)
	return (n - 1) / 8
}
