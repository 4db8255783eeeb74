package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// A queue's figures: what it uses, what it borrows, and what of its
// nominal quota it does not use (Lendable), never below zero; the same in
// Figures and in Snapshot.
func TestQueueFiguresCountWhatEachQueueCouldLend(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	for _, a := range []struct {
		id, queue, class, node string
	}{
		{"r", "research", fleet.ClassReservedResearch, "node-0-0-0"},
		{"b", "batch", fleet.ClassPreemptibleBatch, "node-0-0-1"},
	} {
		w := gang.Workload{ID: a.id, Queue: a.queue, PriorityClass: a.class, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: a.node, GPUs: 8}}}))
	}
	want := map[string]fleet.FlavorView{
		"prod-inference": {Flavor: "H100", Nominal: 32, Lendable: 32},
		"research":       {Flavor: "H100", Nominal: 32, InUse: 8, Lendable: 24},
		"batch":          {Flavor: "H100", InUse: 8, Borrowed: 8},
	}
	for _, qs := range [][]fleet.QueueView{s.Figures().Queues, s.Snapshot().Queues} {
		for _, q := range qs {
			if w, ok := want[q.Name]; ok {
				require.Len(t, q.Flavors, 1, q.Name)
				assert.Equal(t, w, q.Flavors[0], q.Name)
			}
		}
	}
}
