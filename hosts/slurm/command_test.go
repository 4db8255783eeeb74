package slurm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

func TestParseGres(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		typ  string
		fail bool
	}{
		{"gpu:8", 8, "", false},
		{"gpu:h100:8", 8, "h100", false},
		{"gpu:h100:8(S:0-1)", 8, "h100", false},
		{"gres:gpu:4", 4, "", false},
		{"gres/gpu:a100:2,gres/nic:1", 2, "a100", false},
		{"gpu:h100:4(S:0),gpu:a100:4(S:1)", 8, "h100", false},
		{"nic:2", 0, "", false},
		{"", 0, "", false},
		{"gpu", 1, "", false},
		{"gpu:h100", 1, "h100", false},
		{"gpu:h100:x:y", 0, "", true},
		{"gpu:h100:-1", 0, "", true},
	} {
		n, typ, err := parseGres(tc.in)
		if tc.fail {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.n, n, tc.in)
		assert.Equal(t, tc.typ, typ, tc.in)
	}
}

func TestParseNodes(t *testing.T) {
	out := "gpu001|32|256000|gpu:h100:8|idle|none|\n" +
		"gpu001|32|256000|gpu:h100:8|idle|none|\n" +
		"gpu002|32|256000|gpu:h100:8(S:0)|mixed+drain|fan failed [root@2026-12-01T20:00:00]|\n"
	nodes, err := ParseNodes([]byte(out))
	require.NoError(t, err)
	require.Len(t, nodes, 2, "a node of several partitions once")
	assert.Equal(t, Node{Name: "gpu002", CPUs: 32, MemoryMB: 256000, GPUs: 8, GPUType: "h100",
		State: "mixed+drain", Reason: "fan failed [root@2026-12-01T20:00:00]"}, nodes[1])
	_, err = ParseNodes([]byte("gpu001|x|256000|gpu:8|idle|none|\n"))
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "CPUs", pe.Field)
	assert.ErrorIs(t, err, ErrCommand)
}

func TestParseJobs(t *testing.T) {
	out := "7|research|ml|(null)|RUNNING|None|4|gres:gpu:8|gpu[017-020]|gpu[017-020]|2026-12-01T20:29:22|" +
		"2026-12-01T20:29:23|1|4294901759|2|16G|1|train|fleet: a | in a comment|\n" +
		"8|batch|(null)|(null)|PENDING|JobHeldUser|1|gres:gpu:h100:2||||N/A|0|0|1|0|0|wrap|(null)|\n"
	jobs, err := ParseJobs([]byte(out), time.UTC)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	assert.Equal(t, Job{ID: "7", Name: "train", Partition: "research", Account: "ml", State: StateRunning, Reason: "None",
		Nodes: 4, GPUsPerNode: 8, CPUsPerNode: 2, MemoryMB: 16 << 10,
		NodeList: []string{"gpu017", "gpu018", "gpu019", "gpu020"}, ReqNodes: []string{"gpu017", "gpu018", "gpu019", "gpu020"},
		Submit: time.Date(2026, 12, 1, 20, 29, 22, 0, time.UTC), Start: time.Date(2026, 12, 1, 20, 29, 23, 0, time.UTC),
		Requeue: true, Priority: 4294901759, Switches: 1, Comment: "fleet: a | in a comment"}, jobs[0])
	assert.True(t, jobs[1].Held())
	assert.Equal(t, "h100", jobs[1].GPUType)
	assert.Empty(t, jobs[1].Comment)
	_, err = ParseJobs([]byte("9|batch|(null)|(null)|PENDING|None|one|gres:gpu:8||||||0|0|1|0|0|wrap|(null)|\n"), time.UTC)
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "NumNodes", pe.Field)
}

func FuzzParseJobs(f *testing.F) {
	f.Add("7|research|ml|(null)|RUNNING|None|4|gres:gpu:8|gpu[017-020]|gpu[017-020]|2026-12-01T20:29:22|" +
		"2026-12-01T20:29:23|1|4294901759|2|16G|1|train|x|\n")
	f.Add("gpu001|32|256000|gpu:h100:8|idle|none|\n")
	f.Fuzz(func(t *testing.T, s string) {
		if jobs, err := ParseJobs([]byte(s), time.UTC); err == nil {
			lines := 0
			for _, l := range strings.Split(s, "\n") {
				if strings.TrimSpace(l) != "" {
					lines++
				}
			}
			if len(jobs) != lines {
				t.Fatalf("%d jobs from %d lines", len(jobs), lines)
			}
		} else if !errors.Is(err, ErrCommand) && !errors.As(err, new(*ParseError)) {
			t.Fatalf("untyped error %v", err)
		}
		if _, err := ParseNodes([]byte(s)); err != nil && !errors.Is(err, ErrCommand) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func TestHealth(t *testing.T) {
	for state, want := range map[string]topology.Health{
		"idle": topology.Healthy, "mixed": topology.Healthy, "allocated": topology.Healthy,
		"idle+drain": topology.Cordoned, "mixed+drain": topology.Cordoned, "drained": topology.Cordoned,
		"down": topology.Down, "idle+not_responding": topology.Down, "down+drain": topology.Down,
		"idle*": topology.Down, "mixed+maint": topology.Cordoned, "idle+powered_down": topology.Down,
	} {
		assert.Equal(t, want, Health(state), state)
	}
}

func TestWorkload(t *testing.T) {
	cfg := testConfig("")
	yes := true
	cfg.Rules = append(cfg.Rules, Rule{Partition: "scratch", Account: "eval", Queue: "batch", Preemptible: &yes})
	for _, tc := range []struct {
		name string
		job  Job
		want gang.Workload
		err  string
	}{
		{"gang on one leaf", Job{ID: "1", Partition: "research", Nodes: 8, GPUsPerNode: 8, Switches: 1, Requeue: true},
			gang.Workload{ID: "1", Queue: "research", PriorityClass: "reserved-research", Shape: gang.Training,
				PodSets:  []gang.PodSet{{Name: PodSetName, Count: 8, GPUsPerPod: 8}},
				Topology: gang.TopologyRequest{Required: "leaf"}, Drain: gang.DrainContract{Preemptible: true}}, ""},
		{"typed inference", Job{ID: "2", Partition: "inference", Nodes: 1, GPUsPerNode: 2, GPUType: "h100"},
			gang.Workload{ID: "2", Queue: "prod-inference", PriorityClass: "prod-inference", Shape: gang.Inference,
				PodSets: []gang.PodSet{{Name: PodSetName, Count: 1, GPUsPerPod: 2}}, Flavor: "H100"}, ""},
		{"account rule, no shape", Job{ID: "3", Partition: "scratch", Account: "eval", Nodes: 1, GPUsPerNode: 1},
			gang.Workload{ID: "3", Queue: "batch", Shape: gang.Batch,
				PodSets: []gang.PodSet{{Name: PodSetName, Count: 1, GPUsPerPod: 1}}, Drain: gang.DrainContract{Preemptible: true}}, ""},
		{"no rule", Job{ID: "4", Partition: "scratch", Nodes: 1, GPUsPerNode: 1}, gang.Workload{}, `no rule maps partition "scratch"`},
		{"no nodes", Job{ID: "5", Partition: "batch", Nodes: 0, GPUsPerNode: 1}, gang.Workload{}, "asks 0 nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := cfg.Workload(&tc.job)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrJob)
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, w)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no partitions", Config{Rules: []Rule{{Queue: "q"}}}},
		{"no rules", Config{Partitions: []string{"p"}}},
		{"no queue", Config{Partitions: []string{"p"}, Rules: []Rule{{Partition: "p"}}}},
		{"bad shape", Config{Partitions: []string{"p"}, Rules: []Rule{{Queue: "q", Shape: "serving"}}}},
	} {
		assert.ErrorIs(t, tc.cfg.Validate(), ErrConfig, tc.name)
	}
	c := testConfig("")
	assert.NoError(t, c.Validate())
}
