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

// A request that must borrow a named resource may not reclaim another
// queue's borrowed work (Kueue reclaims only for a preemptor within its
// nominal quota), but may still evict lower-priority work of its own
// queue, which leaves it within nominal: the reclaim for named
// resources searches its own queue's candidates again rather than
// giving up.
func TestReclaimForNamedResourcesRetriesWithItsOwnQueue(t *testing.T) {
	cfg := oneNodeConfig(map[string]int64{"research": 4, "batch": 4})
	cfg.Topology.Nodes[0].Resources = map[string]int64{"memory": 32}
	cfg.Quota.Resources = []string{"memory"}
	memory := map[string]int64{"research": 10, "batch": 10}
	for i := range cfg.Quota.Nodes {
		n := &cfg.Quota.Nodes[i]
		for j := range n.Quotas {
			n.Quotas[j].Resources = []quota.ResourceQuota{{Name: "memory", Nominal: memory[n.Name]}}
		}
		if n.Name == "research" {
			n.Preemption = quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny}
		}
	}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	job := func(id, queue, class string, mem int64) gang.Workload {
		return gang.Workload{ID: id, Queue: queue, PriorityClass: class, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 2, Resources: []gang.Resource{{Name: "memory", Amount: mem}}}},
			Drain:   gang.DrainContract{Preemptible: true}}
	}
	pod := []fleet.PodAssignment{{PodSet: "p", Node: "node-0-0", GPUs: 2}}
	// research's low-priority job holds 8 of its 10; batch borrows 2 of
	// research's memory.
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: job("low", "research", fleet.ClassPreemptibleBatch, 8), Started: t0, Pods: pod}))
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: job("borrower", "batch", fleet.ClassPreemptibleBatch, 12), Started: t0, Pods: pod}))
	now := t0.Add(time.Hour)
	require.NoError(t, s.Submit(now, job("high", "research", fleet.ClassReservedResearch, 5)))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1, "one victim makes room")
	assert.Equal(t, "low", d.Drain[0].ID, "its own queue's lower-priority work, as Kueue evicts")
	assert.Equal(t, []string{"high"}, d.Drain[0].Beneficiaries)
}
