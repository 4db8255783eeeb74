package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// A cycle in which nothing changed repeats the last search's answer that
// no plan exists, but only until a victim's MinRuntime protection ends:
// then the same request, with nothing else changed, evicts it.
func TestAVictimIsEvictedOnceItsMinRuntimeEndsWithNothingElseChanged(t *testing.T) {
	cfg := oneNodeConfig(map[string]int64{"research": 8})
	for i := range cfg.Classes {
		if cfg.Classes[i].Name == fleet.ClassPreemptibleBatch {
			cfg.Classes[i].MinRuntime = 10 * time.Minute
		}
	}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	job := func(id, queue, class string) gang.Workload {
		return gang.Workload{ID: id, Queue: queue, PriorityClass: class, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}, Drain: gang.DrainContract{Preemptible: true}}
	}
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: job("borrower", "batch", fleet.ClassPreemptibleBatch),
		Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Node: "node-0-0", GPUs: 8}}}))
	require.NoError(t, s.Submit(t0, job("owner", "research", fleet.ClassReservedResearch)))

	for _, after := range []time.Duration{0, time.Minute, 5 * time.Minute, 10*time.Minute - time.Second} {
		d := s.Schedule(t0.Add(after))
		require.Empty(t, d.Drain, "at %s the borrower is still protected", after)
		x, err := s.Explain("owner")
		require.NoError(t, err)
		require.NotNil(t, x.Preemption, "at %s", after)
		assert.Contains(t, x.Preemption.Error(), "min runtime", "at %s", after)
	}
	d := s.Schedule(t0.Add(10 * time.Minute))
	require.Len(t, d.Drain, 1, "its protection ended: nothing else changed")
	assert.Equal(t, "borrower", d.Drain[0].ID)
	assert.Equal(t, []string{"owner"}, d.Drain[0].Beneficiaries)
}

// oneNodeConfig is the reference configuration on one node of 8 GPUs,
// with the given nominal quotas (0 for a queue not named) and no lending
// limits.
func oneNodeConfig(nominal map[string]int64) fleet.Config {
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{1, 1},
		GPUsPerNode: 8, Flavor: "H100"})
	for i := range cfg.Quota.Nodes {
		n := &cfg.Quota.Nodes[i]
		for j := range n.Quotas {
			n.Quotas[j].Nominal = nominal[n.Name]
			n.Quotas[j].LendingLimit = quota.Limit{}
		}
	}
	return cfg
}
