package fleet_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// Scatter adopts a small batch job that checkpoints on a node the draw
// names, if it has room: the holes and crumbs that defragmentation
// repairs.
func (m *machine) Scatter(t *rapid.T) {
	m.n++
	node := rapid.SampledFrom(m.nodes).Draw(t, "node")
	g := rapid.IntRange(1, 3).Draw(t, "gpus")
	w := gang.Workload{ID: fmt.Sprintf("w%d", m.n), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: g}},
		Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
	pods := []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: g}}
	if _, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) {
		return struct{}{}, s.Adopt(m.now, fleet.Adoption{Workload: w, Started: m.now, Pods: pods})
	}); err != nil {
		return // no room there, or the node is out of service
	}
	m.h.specs[w.ID] = w
	m.h.running[w.ID] = fleet.Admission{ID: w.ID, Queue: w.Queue, Pods: pods}
	m.h.started[w.ID] = m.now
}

// Defrag asks for a plan that opens a leaf or a spine and carries it out:
// its movers drain with their new places reserved, and Check then
// recounts the books with the reservations in them.
func (m *machine) Defrag(t *rapid.T) {
	level := rapid.SampledFrom([]string{"leaf", "spine"}).Draw(t, "level")
	gpus := rapid.SampledFrom([]int{0, 8, 16}).Draw(t, "gpus")
	plan, err := both(t, m, func(s *fleet.Scheduler) (fleet.DefragPlan, error) {
		return s.PlanDefrag(m.now, level, "H100", gpus, 1000)
	})
	if errors.Is(err, fleet.ErrNeverFits) {
		return
	}
	require.NoError(t, err)
	drains, err := both(t, m, func(s *fleet.Scheduler) ([]fleet.Drain, error) { return s.Defragment(m.now, plan) })
	require.NoError(t, err)
	require.Len(t, drains, len(plan.Moves))
	for _, x := range drains {
		require.False(t, m.h.draining[x.ID], "%s told to drain twice", x.ID)
		require.NotEmpty(t, x.MoveTo, "a move names the mover's new place")
		m.h.draining[x.ID], m.h.moving[x.ID] = true, true
	}
}
