package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// Within a cycle, a gang of one pod set whose class (queue, priority,
// model, pools, required level, pod size) already found no victims with
// no more pods is not searched again; a gang of several pod sets is
// always searched.
func TestFailedVictimSearchIsRememberedForItsClass(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	for i, node := range []string{"node-0-0-0", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1"} {
		w := gang.Workload{ID: "r" + string(rune('0'+i)), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
			Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: node, GPUs: 1}}}))
	}
	gangOf := func(id string, sets ...int) gang.Workload {
		w := gang.Workload{ID: id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			Topology: gang.TopologyRequest{Required: "spine"}}
		for i, n := range sets {
			w.PodSets = append(w.PodSets, gang.PodSet{Name: "p" + string(rune('0'+i)), Count: n, GPUsPerPod: 8})
		}
		return w
	}
	for _, w := range []gang.Workload{gangOf("first", 2), gangOf("larger", 3), gangOf("same", 2), gangOf("two-sets", 2, 1)} {
		require.NoError(t, s.Submit(t0, w))
	}
	require.Empty(t, s.Schedule(t0).Admit)
	for id, memo := range map[string]bool{"first": false, "larger": true, "same": true, "two-sets": false} {
		x, err := s.Explain(id)
		require.NoError(t, err)
		assert.Equal(t, memo, x.Waiting == fleet.WaitMemo, "%s waits: %v", id, x.Waiting)
	}
}
