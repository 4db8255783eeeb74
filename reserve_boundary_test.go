package fleet_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// A blocked gang of two pods with a required level already holds a
// domain of that level: the one with the fewest GPUs of work it cannot
// evict (leaf-0-0, or spine-0). Lower-priority open-ended work that fits
// only there then waits behind it. Each leaf holds exactly the pair's 16
// GPUs; the domains after the last spine (the leaves) would hold it too.
func TestTwoPodGangHoldsItsDomain(t *testing.T) {
	for _, level := range []string{"leaf", "spine"} {
		s, err := fleet.New(smallConfig())
		require.NoError(t, err)
		for i, node := range []string{"node-0-0-0", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1"} {
			w := gang.Workload{ID: "r" + string(rune('0'+i)), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
				Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
			require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: node, GPUs: 1}}}))
		}
		pair := gang.Workload{ID: "pair", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
			PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Required: level}}
		require.NoError(t, s.Submit(t0, pair))
		require.Empty(t, s.Schedule(t0).Admit, "no %s has two whole nodes free", level)

		late := gang.Workload{ID: "late", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}
		require.NoError(t, s.Submit(t0, late))
		d := s.Schedule(t0.Add(time.Second))
		assert.Empty(t, d.Admit, "the only whole free node is in the held %s", level)
		x, err := s.Explain("late")
		require.NoError(t, err)
		assert.Equal(t, fleet.WaitReservation, x.Waiting, level)
		assert.Equal(t, "pair", x.Behind, level)
	}
}

// oldestFirst visits pending work in submission order, whatever its
// priority.
type oldestFirst struct{}

func (oldestFirst) Compare(a, b *fleet.Pending) int { return a.Submitted.Compare(b.Submitted) }

// Work of higher priority than a held gang may enter its domain, but is
// placed around it when the rest of the fleet has room: visited after the
// gang (a host's first-come order), a 7-GPU inference replica whose
// tightest fit is in the leaf held for a research pair starts on the next
// node outside it, and so does a 0.5-GPU replica.
func TestHigherPriorityWorkGoesAroundAHoldWhenItCan(t *testing.T) {
	half := gang.Workload{ID: "half", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUShare: 500}}}
	for _, w := range []gang.Workload{replica("rep", 7), half} {
		t.Run(w.ID, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Policy.Order = oldestFirst{}
			s, err := fleet.New(cfg)
			require.NoError(t, err)
			for i, node := range []string{"node-0-0-0", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1"} {
				r := gang.Workload{ID: "r" + string(rune('0'+i)), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
					Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
				require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: r, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: node, GPUs: 1}}}))
			}
			pair := gang.Workload{ID: "pair", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
				PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Required: "leaf"}}
			require.NoError(t, s.Submit(t0, pair))
			require.Empty(t, s.Schedule(t0).Admit)

			require.NoError(t, s.Submit(t0.Add(time.Second), w))
			d := s.Schedule(t0.Add(time.Second))
			require.Len(t, d.Admit, 1)
			assert.Equal(t, "node-0-1-0", d.Admit[0].Pods[0].Node, "not node-0-0-0, in the held leaf")
		})
	}
}

// A held domain is chosen by the GPUs of open-ended work the gang could
// not evict, and the gang can evict preemptible work of lower priority
// only: leaf-0-0, whose second node runs preemptible batch work, holds
// one such GPU (a research job's); leaf-0-1, one of whose nodes runs
// preemptible work of the gang's own priority, two; spine-1's leaves two
// each. Held for the pair, leaf-0-0 then turns away a research job whose
// tightest fit is its first node.
func TestHeldDomainCountsOnlyWorkTheGangCanEvict(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	adopt := func(id, queue, class, node string, gpus int, preemptible bool) {
		w := gang.Workload{ID: id, Queue: queue, PriorityClass: class, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: gpus}}, Drain: gang.DrainContract{Preemptible: preemptible}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: gpus}}}))
	}
	for _, node := range []string{"node-0-0-0", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1"} {
		adopt("r-"+node, "research", fleet.ClassReservedResearch, node, 1, false)
	}
	adopt("filler", "batch", fleet.ClassPreemptibleBatch, "node-0-0-1", 1, true)
	adopt("peer", "prod-inference", fleet.ClassProdInference, "node-0-1-1", 2, true)

	pair := gang.Workload{ID: "pair", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Required: "leaf"}}
	require.NoError(t, s.Submit(t0, pair))
	d := s.Schedule(t0)
	require.Empty(t, d.Admit)
	require.Empty(t, d.Drain, "every leaf holds work the pair cannot evict")

	late := gang.Workload{ID: "late", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 7}}}
	require.NoError(t, s.Submit(t0, late))
	d = s.Schedule(t0.Add(time.Second))
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "node-1-0-0", d.Admit[0].Pods[0].Node, "not node-0-0-0, in the held leaf-0-0")
}

// The domain held for a blocked gang is carried into the next cycle, so
// higher-priority work visited before the gang is placed around it too
// when the rest of the fleet has room; the hold survives a restart from
// a JSON snapshot and one by Adopt (PendingView.Reserved,
// Adoption.Reserved). In priority order, a 7-GPU inference replica whose
// tightest fit is in the leaf held for a research pair starts on the
// next node outside it.
func TestAHoldIsCarriedIntoTheNextCycle(t *testing.T) {
	setup := func(t *testing.T) (*fleet.Scheduler, []fleet.Adoption) {
		s, err := fleet.New(smallConfig())
		require.NoError(t, err)
		var adopted []fleet.Adoption
		for i, node := range []string{"node-0-0-0", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1"} {
			w := gang.Workload{ID: "r" + string(rune('0'+i)), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
				Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
			a := fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: node, GPUs: 1}}}
			require.NoError(t, s.Adopt(t0, a))
			adopted = append(adopted, a)
		}
		pair := gang.Workload{ID: "pair", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Required: "leaf"}}
		require.NoError(t, s.Submit(t0, pair))
		require.Empty(t, s.Schedule(t0).Admit)
		p := s.Snapshot().Pending
		require.Len(t, p, 1)
		require.Equal(t, "leaf-0-0", p[0].Reserved, "the leaf with the fewest GPUs of work the pair cannot evict")
		return s, append(adopted, fleet.Adoption{Workload: pair, Submitted: t0, Seq: p[0].Seq, Reserved: p[0].Reserved})
	}
	for _, restart := range []string{"none", "json", "adopt"} {
		t.Run(restart, func(t *testing.T) {
			s, adoptions := setup(t)
			switch restart {
			case "json":
				b, err := json.Marshal(s.Snapshot())
				require.NoError(t, err)
				var snap fleet.Snapshot
				require.NoError(t, json.Unmarshal(b, &snap))
				s, err = fleet.Restore(smallConfig(), snap)
				require.NoError(t, err)
			case "adopt":
				var err error
				s, err = fleet.New(smallConfig())
				require.NoError(t, err)
				for _, a := range adoptions {
					require.NoError(t, s.Adopt(t0, a))
				}
			}
			require.NoError(t, s.Submit(t0.Add(time.Second), replica("rep", 7)))
			d := s.Schedule(t0.Add(time.Second))
			require.Len(t, d.Admit, 1)
			assert.Equal(t, "node-0-1-0", d.Admit[0].Pods[0].Node, "not node-0-0-0, in the held leaf")
			assert.Equal(t, "leaf-0-0", s.Snapshot().Pending[0].Reserved, "the pair still holds it")
		})
	}
}

// What a host hands back as a hold must be one: a domain of the gang's
// required level, for a gang that can hold one, one gang at a time.
func TestAdoptRefusesAHoldThatCannotBe(t *testing.T) {
	pair := func(id string) gang.Workload {
		return gang.Workload{ID: id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Required: "leaf"}}
	}
	single := pair("single")
	single.PodSets[0].Count, single.Topology = 1, gang.TopologyRequest{}
	for _, tc := range []struct {
		name  string
		first *fleet.Adoption
		a     fleet.Adoption
		want  string
	}{
		{"a domain of another level", nil, fleet.Adoption{Workload: pair("p"), Reserved: "spine-0"}, `"spine-0" is no leaf`},
		{"a gang with no required level", nil, fleet.Adoption{Workload: single, Reserved: "leaf-0-0"}, "only a multi-node gang"},
		{"a second hold", &fleet.Adoption{Workload: pair("p"), Reserved: "leaf-0-0"},
			fleet.Adoption{Workload: pair("q"), Reserved: "leaf-0-1"}, `held for "p" already`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fleet.New(smallConfig())
			require.NoError(t, err)
			if tc.first != nil {
				require.NoError(t, s.Adopt(t0, *tc.first))
			}
			before := s.Snapshot()
			err = s.Adopt(t0, tc.a)
			require.ErrorIs(t, err, fleet.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, before, s.Snapshot(), "nothing adopted")
		})
	}
}

// Explain tells a blocked gang which domain is held for it and what keeps
// it from starting there: work it cannot evict that is expected to end
// at a known time (the planned start), or work with no expected end.
func TestExplainNamesTheDomainHeldForAGang(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime time.Duration
		start   time.Time
		blocked int
		text    string
	}{
		{"expected ends", 2 * time.Hour, t0.Add(2 * time.Hour), 0,
			"holds leaf-0-0: work of its priority or lower that it cannot evict stays out; " +
				"the work there it cannot evict is expected to end by " + t0.Add(2*time.Hour).Format(time.DateTime)},
		{"no expected end", 0, time.Time{}, 1,
			"holds leaf-0-0: work of its priority or lower that it cannot evict stays out; " +
				"1 GPU runs work there that it cannot evict and that has no expected end, so no start can be planned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fleet.New(smallConfig())
			require.NoError(t, err)
			for i, node := range []string{"node-0-0-0", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1"} {
				w := gang.Workload{ID: "r" + string(rune('0'+i)), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
					Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}, ExpectedRuntime: tc.runtime}
				require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: node, GPUs: 1}}}))
			}
			pair := gang.Workload{ID: "pair", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
				PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Required: "leaf"}}
			require.NoError(t, s.Submit(t0, pair))
			require.Empty(t, s.Schedule(t0).Admit)
			x, err := s.Explain("pair")
			require.NoError(t, err)
			assert.Equal(t, "leaf-0-0", x.Reserved)
			assert.Equal(t, tc.start, x.ReservedStart)
			assert.Equal(t, tc.blocked, x.ReservedBlocked)
			assert.Contains(t, x.Message, tc.text)
		})
	}
}

// The domain held for a blocked gang stays put while no other domain
// holds less work the gang cannot evict: once a long run on leaf-0-1
// ends, leaf-0-1's expected end (1 h) is earlier than that of the held
// leaf-0-0 (2 h), but the hold does not move, or it would never empty.
func TestHeldDomainStaysPutWhenAnotherOnlyEndsSooner(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	for _, r := range []struct {
		id, node string
		runtime  time.Duration
	}{
		{"a0", "node-0-0-0", 2 * time.Hour}, {"a1", "node-0-0-1", 2 * time.Hour},
		{"long", "node-0-1-0", 3 * time.Hour}, {"b0", "node-0-1-0", time.Hour}, {"b1", "node-0-1-1", time.Hour},
		{"c0", "node-1-0-0", 4 * time.Hour}, {"c1", "node-1-0-1", 4 * time.Hour},
		{"d0", "node-1-1-0", 4 * time.Hour}, {"d1", "node-1-1-1", 4 * time.Hour},
	} {
		w := gang.Workload{ID: r.id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}, ExpectedRuntime: r.runtime}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0,
			Pods: []fleet.PodAssignment{{PodSet: "p", Node: r.node, GPUs: 1}}}))
	}
	pair := gang.Workload{ID: "pair", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
		PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Required: "leaf"}}
	require.NoError(t, s.Submit(t0, pair))
	require.Empty(t, s.Schedule(t0).Admit)
	x, err := s.Explain("pair")
	require.NoError(t, err)
	require.Equal(t, "leaf-0-0", x.Reserved, "the leaf whose work ends first")

	require.NoError(t, s.Exited(t0.Add(time.Minute), "long", gang.ExitFinished))
	require.Empty(t, s.Schedule(t0.Add(time.Minute)).Admit)
	x, err = s.Explain("pair")
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-0", x.Reserved, "leaf-0-1 now ends sooner, but holds no less work the gang cannot evict")
}

// A workload the last cycle found no node for is placed as soon as one
// comes back, though nothing of quota changed: the kept verdict that it
// does not fit stands only while neither the fleet nor the quota tree
// changes.
func TestAWorkloadRefusedForTopologyStartsWhenANodeComesBack(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	for i, node := range []string{"node-0-0-1", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1"} {
		w := gang.Workload{ID: "r" + string(rune('0'+i)), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
			Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: 1}}}))
	}
	_, err = s.SetNodeHealth(t0, "node-0-0-0", topology.Down)
	require.NoError(t, err)
	w := gang.Workload{ID: "whole", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}
	require.NoError(t, s.Submit(t0, w))
	require.Empty(t, s.Schedule(t0).Admit, "no healthy node has 8 GPUs free")
	x, err := s.Explain("whole")
	require.NoError(t, err)
	require.Equal(t, fleet.WaitTopology, x.Waiting)

	_, err = s.SetNodeHealth(t0.Add(time.Minute), "node-0-0-0", topology.Healthy)
	require.NoError(t, err)
	d := s.Schedule(t0.Add(time.Minute))
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "node-0-0-0", d.Admit[0].Pods[0].Node)
}

// A workload the last cycle refused for quota is admitted as soon as its
// queue's quota is raised, though the fleet has not changed: the kept
// verdict stands only while neither changes.
func TestAWorkloadRefusedForQuotaStartsWhenItsQuotaIsRaised(t *testing.T) {
	cfg := leafConfig()
	cfg.Quota.Nodes[0].Quotas[0].Nominal = 16
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Submit(t0, nodeJob("first", 2)))
	require.Len(t, s.Schedule(t0).Admit, 1)
	require.NoError(t, s.Submit(t0, nodeJob("second", 2)))
	require.Empty(t, s.Schedule(t0).Admit, "team's 16 GPUs are in use")
	x, err := s.Explain("second")
	require.NoError(t, err)
	require.Equal(t, fleet.WaitQuota, x.Waiting)

	n := cfg.Quota.Nodes[0]
	n.Quotas = []quota.FlavorQuota{{Flavor: "H100", Nominal: 32}}
	require.NoError(t, s.SetQueue(t0.Add(time.Minute), n))
	d := s.Schedule(t0.Add(time.Minute))
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "second", d.Admit[0].ID)
}
