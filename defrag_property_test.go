package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// The bounded search (domains ranked by the victim index's aggregates,
// stopped at the first bound above the best plan) finds a plan exactly
// when planning every domain in full does, at the same cost and move
// count, for whole domains and for part of one (gpus below a domain's,
// bounded by its cheapest nodes), with gangs on one node or two;
// planning changes nothing.
func TestPlanDefragEqualsPlanningEveryDomain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, err := fleet.New(fleet.ReferenceConfig())
		require.NoError(t, err)
		used := map[string]int{}
		// Some gangs span two nodes of a leaf, so that a node's movers
		// also hold GPUs elsewhere.
		for i := range rapid.IntRange(0, 12).Draw(t, "pairs") {
			sp, lf, nd := rapid.IntRange(0, 3).Draw(t, "pspine"), rapid.IntRange(0, 7).Draw(t, "pleaf"), rapid.IntRange(0, 6).Draw(t, "pnode")
			a, b := fmt.Sprintf("node-%d-%d-%d", sp, lf, nd), fmt.Sprintf("node-%d-%d-%d", sp, lf, nd+1)
			g := rapid.IntRange(1, 4).Draw(t, "pgpus")
			if used[a]+g > 8 || used[b]+g > 8 {
				continue
			}
			w := gang.Workload{ID: fmt.Sprintf("pair-%d", i), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
				Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: g}},
				Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
			started := t0.Add(-time.Duration(rapid.IntRange(0, 120).Draw(t, "page")) * time.Minute)
			pods := []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: a, GPUs: g}, {PodSet: "p", Index: 1, Node: b, GPUs: g}}
			require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: started, Pods: pods}))
			used[a] += g
			used[b] += g
		}
		for sp := range 4 {
			for lf := range 8 {
				for nd := range 8 {
					node := fmt.Sprintf("node-%d-%d-%d", sp, lf, nd)
					g := min(rapid.IntRange(0, 8).Draw(t, "gpus"), 8-used[node])
					if g == 0 {
						continue
					}
					w := gang.Workload{ID: fmt.Sprintf("w-%d-%d-%d", sp, lf, nd), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
						Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: g}},
						Drain: gang.DrainContract{Preemptible: rapid.IntRange(0, 9).Draw(t, "pre") > 0, CheckpointInterval: 10 * time.Minute}}
					if rapid.Bool().Draw(t, "batch") {
						w.Queue, w.PriorityClass = "batch", fleet.ClassPreemptibleBatch
					}
					started := t0.Add(-time.Duration(rapid.IntRange(0, 120).Draw(t, "age")) * time.Minute)
					pods := []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: g}}
					require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: started, Pods: pods}))
				}
			}
		}
		now := t0.Add(time.Hour)
		level := rapid.SampledFrom([]string{"leaf", "spine"}).Draw(t, "level")
		gpus := rapid.SampledFrom([]int{0, 1, 8, 20, 24, 64, 200, 256, 512}).Draw(t, "want")
		prio := rapid.SampledFrom([]int32{0, 100, 500, 1000}).Draw(t, "prio")
		before := s.Snapshot()
		plan, err := s.PlanDefrag(now, level, "H100", gpus, prio)
		lost, moves, ok := s.PlanDefragNaive(now, level, "H100", gpus, prio)
		require.Equal(t, ok, err == nil, "found a plan: %v", err)
		require.Equal(t, before, s.Snapshot(), "planning changes nothing")
		if !ok {
			return
		}
		assert.InDelta(t, lost, plan.LostGPUSeconds, 1e-6)
		assert.Equal(t, moves, len(plan.Moves))
		assert.GreaterOrEqual(t, plan.FreeGPUs, max(gpus, 1))
	})
}

// A partial plan whose cheapest nodes by the victim index's bounds cannot
// move (research work, above the batch gang's priority) reads on past
// them, and plans as planning every domain does.
func TestPlanDefragReadsPastUnmovableCheapNodes(t *testing.T) {
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	for sp := range 4 {
		for lf := range 8 {
			for nd := range 8 {
				w := gang.Workload{ID: fmt.Sprintf("w-%d-%d-%d", sp, lf, nd), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
					Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}},
					Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
				started := t0 // young: cheap to move
				if lf == 7 && nd >= 6 {
					w.Queue, w.PriorityClass = "batch", fleet.ClassPreemptibleBatch
					started = t0.Add(-time.Duration(30+sp*10+nd) * time.Minute)
				}
				pods := []fleet.PodAssignment{{PodSet: "p", Node: fmt.Sprintf("node-%d-%d-%d", sp, lf, nd), GPUs: 1}}
				require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: started, Pods: pods}))
			}
		}
	}
	now := t0.Add(10 * time.Minute)
	for _, gpus := range []int{8, 16} {
		plan, err := s.PlanDefrag(now, "spine", "H100", gpus, 100)
		require.NoError(t, err)
		lost, moves, ok := s.PlanDefragNaive(now, "spine", "H100", gpus, 100)
		require.True(t, ok)
		assert.InDelta(t, lost, plan.LostGPUSeconds, 1e-6)
		assert.Equal(t, moves, len(plan.Moves))
		for _, m := range plan.Moves {
			assert.Contains(t, m.ID, "w-0-7-")
		}
	}
}
