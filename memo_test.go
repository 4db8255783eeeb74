package fleet_test

import (
	"testing"
	"time"

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

// An elastic gang is searched for at its minimum: a larger gang of its
// class that found no victims does not stand for it. The one node that
// batch work holds is too little for two pods, and enough for the
// elastic gang's one (no domain is held for the gang that waits, which
// would keep the elastic one, of its priority, out).
func TestElasticGangIsSearchedAtItsMinimumAfterALargerGangFailed(t *testing.T) {
	cfg := smallConfig()
	cfg.Policy.NoReservation = true
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	t1 := t0.Add(time.Hour)
	for i, node := range []string{"node-0-0-0", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1"} {
		w := gang.Workload{ID: "r" + string(rune('0'+i)), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
			Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: 1}}}))
	}
	victim := gang.Workload{ID: "victim", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}, Drain: gang.DrainContract{Preemptible: true}}
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: victim, Started: t0,
		Pods: []fleet.PodAssignment{{PodSet: "p", Node: "node-0-0-1", GPUs: 8}}}))
	gangOf := func(id string, count, min int) gang.Workload {
		return gang.Workload{ID: id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			Topology: gang.TopologyRequest{Required: "spine"},
			PodSets:  []gang.PodSet{{Name: "p", Count: count, MinCount: min, GPUsPerPod: 8}}}
	}
	require.NoError(t, s.Submit(t1, gangOf("rigid", 2, 0)))
	require.NoError(t, s.Submit(t1, gangOf("elastic", 3, 1)))
	d := s.Schedule(t1)
	require.Len(t, d.Drain, 1)
	assert.Equal(t, "victim", d.Drain[0].ID)
	require.Len(t, d.Nominate, 1)
	assert.Equal(t, "elastic", d.Nominate[0].ID)
	x, err := s.Explain("rigid")
	require.NoError(t, err)
	assert.NotEqual(t, fleet.WaitMemo, x.Waiting, "the first of its class is searched")
}
