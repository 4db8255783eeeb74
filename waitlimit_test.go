package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
)

// waitLimitFleet is one 8-GPU node whose research queue (all of its
// quota, LowerOrNewerEqualPriority) runs "old", 8 GPUs, started at t0,
// and queues "gang", 8 GPUs of the same class, a minute later.
func waitLimitFleet(t *testing.T, limit time.Duration) *fleet.Scheduler {
	t.Helper()
	return waitLimitFleetAsking(t, limit, nil)
}

// waitLimitFleetAsking is waitLimitFleet with the gang's pods asking res
// besides their GPUs (from a node and a quota of 64 cores).
func waitLimitFleetAsking(t *testing.T, limit time.Duration, res []gang.Resource) *fleet.Scheduler {
	t.Helper()
	cfg := oneNodeConfig(map[string]int64{"research": 8})
	cfg.Topology.Nodes[0].Resources = map[string]int64{"cpu": 64000}
	cfg.Quota.Resources = []string{"cpu"}
	for i := range cfg.Quota.Nodes {
		n := &cfg.Quota.Nodes[i]
		for j := range n.Quotas {
			n.Quotas[j].Resources = []quota.ResourceQuota{{Name: "cpu", Nominal: map[string]int64{"research": 64000}[n.Name]}}
		}
	}
	cfg.Policy.WaitLimit = limit
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	run := func(id string) gang.Workload {
		return gang.Workload{ID: id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "w", Count: 1, GPUsPerPod: 8}}, Drain: gang.DrainContract{Preemptible: true}}
	}
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: run("old"), Started: t0,
		Pods: []fleet.PodAssignment{{PodSet: "w", Node: "node-0-0", GPUs: 8}}}))
	g := run("gang")
	g.PodSets[0].Resources = res
	require.NoError(t, s.Submit(t0.Add(time.Minute), g))
	return s
}

// Work that has waited Policy.WaitLimit may evict a run of its priority
// queued before it; before the limit, and with no limit, it may not
// (Kueue's LowerOrNewerEqualPriority), and cycles in which nothing else
// changed keep saying so until the limit is reached.
func TestWorkThatWaitedTheLimitEvictsOlderRunsOfItsPriority(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit time.Duration
	}{
		{"no limit", 0},
		{"two hours", 2 * time.Hour},
		{"ReferenceWaitLimit", fleet.ReferenceWaitLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := waitLimitFleet(t, tc.limit)
			reached := time.Minute + tc.limit // from t0: the gang was submitted at t0+1m
			at := []time.Duration{time.Minute, time.Hour, reached - time.Second}
			if tc.limit == 0 {
				reached = 0
				at = append(at, 30*24*time.Hour)
			}
			for _, a := range at {
				require.Empty(t, s.Schedule(t0.Add(a)).Drain, "at %s", a)
			}
			if tc.limit == 0 {
				return
			}
			d := s.Schedule(t0.Add(reached))
			require.Len(t, d.Drain, 1, "the limit is reached: nothing else changed")
			assert.Equal(t, "old", d.Drain[0].ID)
			assert.Equal(t, []string{"gang"}, d.Drain[0].Beneficiaries)
			assert.Equal(t, gang.DrainInQueue, d.Drain[0].Reason)
		})
	}
}

// The reclaim of work asking named resources (cpu here) follows the
// same limit: before it the older run stays, once it is reached the run
// drains for the gang, without a nomination.
func TestWorkAskingResourcesThatWaitedTheLimitReclaimsOlderRuns(t *testing.T) {
	s := waitLimitFleetAsking(t, 2*time.Hour, []gang.Resource{{Name: "cpu", Amount: 8000}})
	for _, a := range []time.Duration{time.Minute, time.Hour, 2*time.Hour + time.Minute - time.Second} {
		require.Empty(t, s.Schedule(t0.Add(a)).Drain, "at %s", a)
	}
	d := s.Schedule(t0.Add(2*time.Hour + time.Minute))
	require.Len(t, d.Drain, 1)
	assert.Equal(t, "old", d.Drain[0].ID)
	assert.Equal(t, []string{"gang"}, d.Drain[0].Beneficiaries)
	assert.Empty(t, d.Nominate, "a reclaim for named resources nominates nothing")
}

// Explain says when the wait limit will let a waiting workload evict the
// older runs of its priority.
func TestExplainSaysWhenTheWaitLimitLetsOlderRunsGo(t *testing.T) {
	s := waitLimitFleet(t, 2*time.Hour)
	s.Schedule(t0.Add(time.Hour))
	x, err := s.Explain("gang")
	require.NoError(t, err)
	assert.Contains(t, x.Message, "from 2026-11-01 02:01:00, once it has waited the wait limit (2h0m0s), "+
		"runs of its priority queued before it are candidates too")
}

func TestANegativeWaitLimitIsRefused(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	cfg.Policy.WaitLimit = -time.Hour
	_, err := fleet.New(cfg)
	require.ErrorIs(t, err, fleet.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "Policy.WaitLimit is negative")
}
