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

// A queue left with Kueue's default rules (reclaimWithinCohort and
// withinClusterQueue Never) waits behind the work that borrowed its
// quota; Explain names the rule and the setting that would let it in.
func TestExplainNamesTheRuleThatKeepsAQueueWaiting(t *testing.T) {
	cfg := oneLeaf(2, 16, quota.Limit{})
	for i := range cfg.Quota.Nodes {
		cfg.Quota.Nodes[i].Preemption = quota.Rules{} // Kueue's defaults: Never
	}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	for i, node := range []string{"node-0-0", "node-0-1"} {
		w := gang.Workload{ID: []string{"b0", "b1"}[i], Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
			Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}},
			Drain: gang.DrainContract{Preemptible: true}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0,
			Pods: []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: 8}}}))
	}
	now := t0.Add(time.Hour)
	require.NoError(t, s.Submit(now, replica("r", 8)))
	d := s.Schedule(now)
	assert.Empty(t, d.Drain, "Never takes nothing back")
	x, err := s.Explain("r")
	require.NoError(t, err)
	assert.Contains(t, x.Message, `queue "prod-inference"'s preemption rules keep it waiting: reclaimWithinCohort: Any`)

	// The setting it names lets it in.
	for _, n := range s.Quota().Nodes {
		if n.Name == "prod-inference" {
			n.Preemption.ReclaimWithinCohort = quota.ReclaimAny
			require.NoError(t, s.SetQueue(now, n))
		}
	}
	d = s.Schedule(now.Add(time.Second))
	assert.Len(t, d.Drain, 1, "with reclaimWithinCohort Any it takes its quota back")
	x, err = s.Explain("r")
	require.NoError(t, err)
	assert.NotContains(t, x.Message, "preemption rules keep it waiting")
}
