package fleet_test

import (
	"maps"
	"slices"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/quota"
)

// machineConfig is smallConfig with batch reclaimed after 20 minutes
// idle, 32 cores per node, the last two nodes MIG-partitioned, and quotas
// of cores beside GPUs (batch borrows all of its cores); research's cores
// are a resource group of their own, in two flavors of 64 each.
func machineConfig() fleet.Config {
	cfg := smallConfig()
	cfg.Policy.IdleReclaim = []fleet.IdleRule{{Class: fleet.ClassPreemptibleBatch, After: 20 * time.Minute}}
	for i := range cfg.Topology.Nodes {
		cfg.Topology.Nodes[i].Resources = map[string]int64{"cpu": 32000}
		cfg.Topology.Nodes[i].MIG = i >= len(cfg.Topology.Nodes)-2
	}
	cfg.Quota.Resources = []string{"cpu"}
	cores := map[string]int64{"prod-inference": 128000, "research": 128000}
	for i := range cfg.Quota.Nodes {
		n := &cfg.Quota.Nodes[i]
		for j := range n.Quotas {
			n.Quotas[j].Resources = []quota.ResourceQuota{{Name: "cpu", Nominal: cores[n.Name]}}
		}
		if n.Name == "research" {
			n.Quotas[0].Resources = nil
			for _, f := range []string{"cores-a", "cores-b"} {
				n.Quotas = append(n.Quotas, quota.FlavorQuota{Flavor: f, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000}}})
			}
			n.ResourceGroups = []quota.ResourceGroup{{GPUs: true, Flavors: []string{n.Quotas[0].Flavor}},
				{Resources: []string{"cpu"}, Flavors: []string{"cores-a", "cores-b"}}}
		}
	}
	cfg.Quota.Flavors = append(cfg.Quota.Flavors, "cores-a", "cores-b")
	cfg.Policy.DefragBudget = 2
	// Runs of a few hours reach a wait limit of half an hour: starved
	// work evicts older runs of its priority (Policy.WaitLimit).
	cfg.Policy.WaitLimit = 30 * time.Minute
	return cfg
}

// Usage reports a running workload busy or idle.
func (m *machine) Usage(t *rapid.T) {
	if len(m.h.running) == 0 {
		t.Skip("nothing runs")
	}
	id := rapid.SampledFrom(slices.Sorted(maps.Keys(m.h.running))).Draw(t, "id")
	busy := rapid.Bool().Draw(t, "busy")
	_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.ReportUsage(m.now, id, busy) })
	require.NoError(t, err)
}

// QuotaEdit changes inference's and research's guarantees and weights;
// edits the tree or the fleet refuses change nothing, in both twins.
func (m *machine) QuotaEdit(t *rapid.T) {
	name := rapid.SampledFrom([]string{"prod-inference", "research"}).Draw(t, "queue")
	var n = m.s.Quota().Nodes[0]
	for _, x := range m.s.Quota().Nodes {
		if x.Name == name {
			n = x
		}
	}
	n.Quotas[0].Nominal = int64(rapid.IntRange(16, 40).Draw(t, "nominal"))
	w := float64(rapid.IntRange(1, 4).Draw(t, "weight"))
	n.Weight = &w
	_, _ = both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.SetQueue(m.now, n) })
}

// NodePresence takes a node out of service or brings it back; a busy node
// or one whose capacity the guarantees need stays.
func (m *machine) NodePresence(t *rapid.T) {
	node := rapid.SampledFrom(m.nodes).Draw(t, "node")
	_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.RemoveNode(m.now, node) })
	if err != nil && rapid.Bool().Draw(t, "add") {
		_, _ = both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.AddNode(m.now, node) })
	}
}
