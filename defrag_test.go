package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// scattered puts a 2-GPU research job that checkpoints on the first node
// of every leaf of the reference fleet: 1,984 GPUs are free, but no leaf
// has 8 whole free nodes.
func scattered(t *testing.T, budget float64) *fleet.Scheduler {
	cfg := fleet.ReferenceConfig()
	cfg.Policy.DefragBudget = budget
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	for sp := range 4 {
		for lf := range 8 {
			w := gang.Workload{ID: fmt.Sprintf("small-%d-%d", sp, lf), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
				Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 2}},
				Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
			pods := []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: fmt.Sprintf("node-%d-%d-0", sp, lf), GPUs: 2}}
			require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods}))
		}
	}
	return s
}

func leafGang(id string) gang.Workload {
	w := training(id, 8, fleet.ClassReservedResearch, "research")
	w.Topology = gang.TopologyRequest{Required: "leaf"}
	return w
}

// Without a budget, a gang blocked by fragmentation waits; with one, the
// cheapest move opens a leaf: the mover drains (reason defrag) and the
// leaf is nominated for the gang, which starts once the mover has left.
func TestDefragmentationOpensALeafForABlockedGang(t *testing.T) {
	off := scattered(t, 0)
	now := t0.Add(time.Hour)
	require.NoError(t, off.Submit(now, leafGang("g")))
	d := off.Schedule(now)
	require.Empty(t, d.Admit)
	require.Empty(t, d.Drain)
	x, err := off.Explain("g")
	require.NoError(t, err)
	assert.Equal(t, fleet.WaitTopology, x.Waiting)

	s := scattered(t, 3) // three GPU-hours of lost work an hour: one move (2.1)
	require.NoError(t, s.Submit(now, leafGang("g")))
	d = s.Schedule(now)
	require.Len(t, d.Drain, 1, "one 2-GPU mover opens a leaf")
	mv := d.Drain[0]
	assert.Equal(t, gang.DrainDefrag, mv.Reason)
	assert.Equal(t, []string{"g"}, mv.Beneficiaries)
	// 2 GPUs x (1 h since start + 3 min restart).
	assert.InDelta(t, 2*63*60, mv.LostGPUSeconds, 1e-6)
	// Its new place is reserved in the same decision, outside the leaf.
	require.Len(t, mv.MoveTo, 1)
	assert.Equal(t, 2, mv.MoveTo[0].GPUs)
	assert.NotEqual(t, "node-0-0-", mv.MoveTo[0].Node[:9], "it moves out of the leaf it opens")
	require.NoError(t, s.CheckInvariants())
	x, err = s.Explain("g")
	require.NoError(t, err)
	assert.Equal(t, fleet.WaitVictims, x.Waiting)

	now = now.Add(time.Minute)
	require.NoError(t, s.Exited(now, mv.ID, gang.ExitDrained))
	d = s.Schedule(now)
	require.Len(t, d.Admit, 2, "the gang, and the mover at its new place")
	// Both start in queue order: the mover keeps its place in the queue.
	assert.Equal(t, []string{mv.ID, "g"}, []string{d.Admit[0].ID, d.Admit[1].ID})
	assert.Equal(t, "leaf", d.Admit[1].Span)
	assert.Equal(t, mv.MoveTo[0].Node, d.Admit[0].Pods[0].Node)
	assert.Zero(t, d.Admit[0].Wait, "a restart does not wait in the queue")
	require.NoError(t, s.CheckInvariants())

	// The budget is spent for this hour: a second blocked gang waits.
	require.NoError(t, s.Submit(now, leafGang("g2")))
	d = s.Schedule(now)
	assert.Empty(t, d.Drain, "a second move would exceed the hour's budget")
}

// On request: the plan to open a whole spine, and its cost, before
// anything moves; carried out, its moves drain.
func TestPlanDefragOpensASpineOnRequest(t *testing.T) {
	s := scattered(t, 0)
	now := t0.Add(time.Hour)
	before := s.Snapshot()
	plan, err := s.PlanDefrag(now, "spine", "H100", 0, 1000)
	require.NoError(t, err)
	require.Equal(t, before, s.Snapshot(), "planning changes nothing")
	assert.Equal(t, "spine", plan.Level)
	assert.Len(t, plan.Moves, 8, "one mover per leaf of the spine")
	assert.Equal(t, 512, plan.FreeGPUs)
	assert.InDelta(t, 8*2*63*60, plan.LostGPUSeconds, 1e-6)
	for _, m := range plan.Moves {
		require.Len(t, m.To, 1)
		assert.NotEqual(t, plan.Domain[6:7], m.To[0].Node[5:6], "%s moves inside the spine it opens", m.ID)
	}
	drains, err := s.Defragment(now, plan)
	require.NoError(t, err)
	assert.Len(t, drains, 8)
	_, err = s.Defragment(now, plan)
	require.ErrorIs(t, err, fleet.ErrBadState, "a plan whose movers already drain is stale")

	for _, bad := range []struct {
		level, flavor string
		gpus          int
	}{{"rack", "H100", 0}, {"spine", "B200", 0}, {"spine", "H100", -1}, {"node", "H100", 8}} {
		_, err := s.PlanDefrag(now, bad.level, bad.flavor, bad.gpus, 1000)
		assert.Error(t, err, "%+v", bad)
	}
}

// A plan prefers moving lower-priority work to moving the requester's own
// guaranteed work: a research gang's leaf is opened by moving a batch job
// that loses twice the work of a research job elsewhere, not the research
// job (whose work counts four times); a host asking at a priority above
// both moves the cheaper one.
func TestDefragPrefersMovingLowerPriorityWork(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	adopt := func(id, queue, class, node string, gpus int, age time.Duration) {
		w := gang.Workload{ID: id, Queue: queue, PriorityClass: class, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: gpus}},
			Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
		require.NoError(t, s.Adopt(t0.Add(time.Hour), fleet.Adoption{Workload: w, Started: t0.Add(time.Hour - age), Pods: []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: gpus}}}))
	}
	// One small job on the first node of every leaf; the research one
	// costs 2 x 20 min, the batch one 4 x 20 min, every other 8 x 20 min.
	for sp := range 4 {
		for lf := range 8 {
			node := fmt.Sprintf("node-%d-%d-0", sp, lf)
			switch {
			case sp == 1 && lf == 2:
				adopt("own", "research", fleet.ClassReservedResearch, node, 2, 17*time.Minute)
			case sp == 2 && lf == 5:
				adopt("filler", "batch", fleet.ClassPreemptibleBatch, node, 4, 17*time.Minute)
			default:
				adopt(fmt.Sprintf("big-%d-%d", sp, lf), "batch", fleet.ClassPreemptibleBatch, node, 8, 17*time.Minute)
			}
		}
	}
	now := t0.Add(time.Hour)
	plan, err := s.PlanDefrag(now, "leaf", "H100", 0, 1000)
	require.NoError(t, err)
	require.Len(t, plan.Moves, 1)
	assert.Equal(t, "own", plan.Moves[0].ID, "above every priority, the cheapest move")
	plan, err = s.PlanDefrag(now, "leaf", "H100", 0, 500)
	require.NoError(t, err)
	require.Len(t, plan.Moves, 1)
	assert.Equal(t, "filler", plan.Moves[0].ID, "at research's priority, batch moves first")
	assert.InDelta(t, 4*20*60, plan.LostGPUSeconds, 1e-6, "the plan reports the work lost, not its weight")
}

// A domain opened for part of its GPUs is bounded by its cheapest nodes,
// as many as the request fills (16 GPUs: two of a leaf's three 8-GPU
// nodes), not one more: leaf-0 costs its cheap mover and keeps an
// expensive one where it is, and is planned before leaf-1, whose
// cheapest mover costs more than the cheap one but less than both of
// leaf-0's. Counting a third node would bound leaf-0 above leaf-1's
// price and plan leaf-1 alone.
func TestDefragBoundsAPartialDomainByTheNodesItFills(t *testing.T) {
	cfg := fleet.ReferenceConfigFor(topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"},
		Fanout: []int{2, 3}, GPUsPerNode: 8, Flavor: "H100"}))
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	now := t0.Add(time.Hour)
	adopt := func(id, node string, gpus int, age time.Duration) {
		w := gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: gpus}}, Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 2 * time.Hour}}
		require.NoError(t, s.Adopt(now, fleet.Adoption{Workload: w, Started: now.Add(-age), Pods: []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: gpus}}}))
	}
	adopt("cheap", "node-0-0", 1, 10*time.Minute) // 1 x 13 min
	adopt("dear", "node-0-1", 4, time.Hour)       // 4 x 63 min
	adopt("mid-0", "node-1-0", 2, 30*time.Minute) // 2 x 33 min
	adopt("mid-1", "node-1-1", 2, 30*time.Minute) // 2 x 33 min
	plan, err := s.PlanDefrag(now, "leaf", "H100", 16, 1000)
	require.NoError(t, err)
	assert.Equal(t, "leaf-0", plan.Domain)
	require.Len(t, plan.Moves, 1)
	assert.Equal(t, "cheap", plan.Moves[0].ID)
	assert.InDelta(t, 13*60, plan.LostGPUSeconds, 1e-6)
}
