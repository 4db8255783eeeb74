package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// leafConfig is 4 leaves x 4 nodes x 8 GPUs and one queue that owns them.
func leafConfig() fleet.Config {
	return fleet.Config{
		Topology: topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{4, 4}, GPUsPerNode: 8, Flavor: "H100"}),
		Quota: quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
			{Name: "team", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 128}}}}},
		Classes: []fleet.PriorityClass{{Name: "c", Value: 1}},
	}
}

func nodeJob(id string, nodes int) gang.Workload {
	return gang.Workload{ID: id, Queue: "team", PriorityClass: "c", Shape: gang.Training,
		PodSets: []gang.PodSet{{Name: "w", Count: nodes, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Preferred: "leaf"}}
}

// node is the name of node i of leaf l in leafConfig's fleet.
func node(l, i int) string { return leafConfig().Topology.Nodes[4*l+i].Name }

func leafOf(t require.TestingT, f *topology.Fleet, name string) string {
	n, ok := f.Node(name)
	require.True(t, ok)
	return f.DomainName(f.DomainOf(n, 1))
}

// A gang that must span leaves takes, among leaves that fit it equally
// well, the one fewer running cross-leaf gangs use: the Scheduler feeds
// placement the crossings it keeps, and reports them per leaf.
func TestCrossLeafGangsSpreadOverUplinks(t *testing.T) {
	cfg := leafConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	adopt := func(id string, l, i int) {
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: nodeJob(id, 1), Started: t0, Pods: []fleet.PodAssignment{{PodSet: "w", Node: node(l, i), GPUs: 8}}}))
	}
	// Free nodes per leaf: 4, 3, 2, 2.
	adopt("f1", 1, 3)
	adopt("f2", 2, 2)
	adopt("f3", 2, 3)
	adopt("f4", 3, 2)
	adopt("f5", 3, 3)
	// a: 4 nodes of leaf 0 and the tightest leaf for the fifth, leaf 2.
	require.NoError(t, s.Submit(t0, nodeJob("a", 5)))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	f, err := topology.New(cfg.Topology)
	require.NoError(t, err)
	leaves := map[string]int{}
	for _, p := range d.Admit[0].Pods {
		leaves[leafOf(t, f, p.Node)]++
	}
	require.Equal(t, map[string]int{"leaf-0": 4, "leaf-2": 1}, leaves)
	require.Equal(t, []fleet.LeafCrossings{{Leaf: "leaf-0", Gangs: 1}, {Leaf: "leaf-2", Gangs: 1}}, s.Snapshot().Fleet.Crossings)

	// One more node of leaf 3 taken: leaves 2 and 3 have one free node
	// each, leaf 1 three. b (4 nodes) takes leaf 1 and one of them: by
	// node ID that would be leaf 2, which a crosses; it takes leaf 3.
	adopt("f6", 3, 1)
	require.NoError(t, s.Submit(t0, nodeJob("b", 4)))
	d = s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	leaves = map[string]int{}
	for _, p := range d.Admit[0].Pods {
		leaves[leafOf(t, f, p.Node)]++
	}
	require.Equal(t, map[string]int{"leaf-1": 3, "leaf-3": 1}, leaves)
	require.Equal(t, 1, s.Crossing("leaf-2"))
	require.Equal(t, 1, s.Crossing("leaf-3"))
	require.Equal(t, 0, s.Crossing("node-0-0"), "not a leaf")

	// The same fleet without crossings counted: lowest ID, leaf 2.
	for _, r := range s.Snapshot().Running {
		if r.ID == "b" {
			continue
		}
		for _, n := range r.Nodes {
			id, _ := f.Node(n.Node)
			require.NoError(t, f.Allocate(id, n.GPUs))
		}
	}
	w := nodeJob("b", 4)
	a, err := placement.Place(f, &w, placement.Options{})
	require.NoError(t, err)
	naive := map[string]int{}
	for _, p := range a.Pods {
		naive[f.DomainName(f.DomainOf(p.Node, 1))]++
	}
	require.Equal(t, map[string]int{"leaf-1": 3, "leaf-2": 1}, naive)

	// Gangs that end leave the counts.
	require.NoError(t, s.Exited(t0.Add(time.Minute), "a", gang.ExitFinished))
	require.Equal(t, []fleet.LeafCrossings{{Leaf: "leaf-1", Gangs: 1}, {Leaf: "leaf-3", Gangs: 1}}, s.Snapshot().Fleet.Crossings)
	require.NoError(t, s.CheckInvariants())
}

// After any sequence of submissions, cycles, exits and node failures,
// the crossings the Scheduler reports equal a recount of the running
// gangs' leaves, and survive Restore.
func TestPropertyCrossingsEqualRecount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := leafConfig()
		s, err := fleet.New(cfg)
		require.NoError(t, err)
		f, err := topology.New(cfg.Topology)
		require.NoError(t, err)
		now := t0
		for i := range rapid.IntRange(1, 30).Draw(t, "steps") {
			now = now.Add(time.Minute)
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				_ = s.Submit(now, nodeJob(fmt.Sprintf("w%d", i), rapid.IntRange(1, 7).Draw(t, "nodes")))
			case 2:
				if run := s.Snapshot().Running; len(run) > 0 {
					r := run[rapid.IntRange(0, len(run)-1).Draw(t, "victim")]
					require.NoError(t, s.Exited(now, r.ID, gang.ExitFinished))
				}
			case 3:
				n := rapid.IntRange(0, 15).Draw(t, "down")
				_, _ = s.SetNodeHealth(now, cfg.Topology.Nodes[n].Name, topology.Down)
			}
			s.Schedule(now)
			want := map[string]int{}
			for _, r := range s.Snapshot().Running {
				seen := map[string]bool{}
				for _, n := range r.Nodes {
					seen[leafOf(t, f, n.Node)] = true
				}
				if len(seen) > 1 {
					for l := range seen {
						want[l]++
					}
				}
			}
			got := map[string]int{}
			for _, c := range s.Snapshot().Fleet.Crossings {
				got[c.Leaf] = c.Gangs
			}
			require.Equal(t, want, got)
			require.NoError(t, s.CheckInvariants())
		}
		r, err := fleet.Restore(cfg, s.Snapshot())
		require.NoError(t, err)
		require.Equal(t, s.Snapshot().Fleet.Crossings, r.Snapshot().Fleet.Crossings)
	})
}
