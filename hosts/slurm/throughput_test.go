package slurm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/quota"
)

const throughputJobs = 1000

// TestSlurmThroughput measures, on the same cluster and for the same
// jobs, fleet through Slurm's commands beside Slurm's own scheduler:
// how fast the 512 one-GPU jobs that fit are started out of 1,000
// queued, and the time from sbatch to RUNNING of one job on an idle
// cluster.
func TestSlurmThroughput(t *testing.T) {
	e := startCluster(t)
	cfg := testConfig("")
	cfg.Rules = []Rule{{Partition: "batch", Queue: "all", Class: fleet.ClassPreemptibleBatch, Shape: "batch"}}
	cfg.Period = Duration(100 * time.Millisecond)
	q := quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
		{Name: "fleet", Kind: quota.Cohort},
		{Name: "all", Parent: "fleet", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8 * clusterNodes}}},
	}}
	newHost := func() *Host {
		h, err := New(cfg, Options{Slurm: e.cmds, Quota: q,
			Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		require.NoError(t, err)
		return h
	}
	long := e.script("long.sh", 0, 10*time.Minute)
	fit := 8 * clusterNodes

	// fleet: 1,000 jobs queued (held), then the host's cycles.
	for range throughputJobs {
		e.sbatch("-p", "batch", "-N1", "--gres=gpu:1", long)
	}
	h := newHost()
	start := time.Now()
	var first time.Duration
	cycles := 0
	for running := 0; running < fit; running = e.count(StateRunning) {
		_, err := h.Cycle(context.Background())
		require.NoError(t, err)
		cycles++
		if cycles == 1 {
			first = time.Since(start)
		}
		require.Less(t, time.Since(start), 3*time.Minute, "fleet started %d of %d", running, fit)
	}
	fleetAll := time.Since(start)
	t.Logf("fleet: %d running after %s, %d cycles", fit, fleetAll, cycles)
	h.Scheduler(func(s *fleet.Scheduler) {
		require.Len(t, s.Snapshot().Running, fit)
	})
	e.clear()
	long = e.script("long.sh", 0, 10*time.Minute)

	// Slurm: the same 1,000 jobs queued held in the native partition,
	// then released at once to Slurm's scheduler.
	var ids []string
	for range throughputJobs {
		ids = append(ids, e.sbatch("-p", "native", "--hold", "-N1", "--gres=gpu:1", long))
	}
	start = time.Now()
	for i := 0; i < len(ids); i += 200 {
		e.run("scontrol", "release", strings.Join(ids[i:min(i+200, len(ids))], ","))
	}
	for running := 0; running < fit; running = e.count(StateRunning) {
		require.Less(t, time.Since(start), 3*time.Minute, "Slurm started %d of %d", running, fit)
		time.Sleep(20 * time.Millisecond)
	}
	slurmAll := time.Since(start)
	t.Logf("Slurm: %d running after %s", fit, slurmAll)
	e.clear()
	long = e.script("long.sh", 0, 10*time.Minute)

	// sbatch to RUNNING, one job at a time on an idle cluster: fleet's
	// host in its loop (period 100 ms), then Slurm's scheduler.
	ctx, cancel := context.WithCancel(context.Background())
	h = newHost()
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	fleetLat := e.latencies(t, "batch", long, 10)
	cancel()
	<-done
	e.clear()
	long = e.script("long.sh", 0, 10*time.Minute)
	slurmLat := e.latencies(t, "native", long, 10)

	t.Logf("%-34s %12s %12s", "1,000 one-GPU jobs queued", "fleet", "Slurm")
	t.Logf("%-34s %11.2fs %11.2fs", fmt.Sprintf("time to start the %d that fit", fit), fleetAll.Seconds(), slurmAll.Seconds())
	t.Logf("%-34s %12.0f %12.0f", "jobs started per second", float64(fit)/fleetAll.Seconds(), float64(fit)/slurmAll.Seconds())
	t.Logf("%-34s %11.2fs %12s", "first cycle (decide and carry out)", first.Seconds(), "-")
	t.Logf("%-34s %12d %12s", "cycles", cycles, "-")
	t.Logf("%-34s %11.2fs %11.2fs", "sbatch to RUNNING, median", median(fleetLat).Seconds(), median(slurmLat).Seconds())
	t.Logf("%-34s %11.2fs %11.2fs", "sbatch to RUNNING, max", slices.Max(fleetLat).Seconds(), slices.Max(slurmLat).Seconds())
}

// count counts the jobs in a state.
func (e *env) count(state string) int {
	e.t.Helper()
	out, err := Exec{Conf: e.conf}.Run(context.Background(), "squeue", "-h", "-t", state, "-o", "%i")
	require.NoError(e.t, err)
	return len(strings.Fields(string(out)))
}

// latencies submits n jobs one after the other and returns, for each,
// the time from sbatch's return to squeue showing it RUNNING.
func (e *env) latencies(t *testing.T, partition, script string, n int) []time.Duration {
	var out []time.Duration
	for range n {
		id := e.sbatch("-p", partition, "-N1", "--gres=gpu:8", script)
		start := time.Now()
		for {
			o, err := Exec{Conf: e.conf}.Run(context.Background(), "squeue", "-h", "-j", id, "-o", "%T")
			require.NoError(t, err)
			if strings.TrimSpace(string(o)) == StateRunning {
				break
			}
			require.Less(t, time.Since(start), 30*time.Second, "job %s in %s not running", id, partition)
			time.Sleep(10 * time.Millisecond)
		}
		out = append(out, time.Since(start))
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
