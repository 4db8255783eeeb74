package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// Work that fits quota once the victims already draining for a nomination
// are gone, on GPUs free now, starts at once: the beneficiary is charged
// already, so the victims' quota is the cohort's. small (research, within
// its quota) runs on node-0-1-1 while the batch filler drains for big; it
// neither nominates nor drains anything more.
func TestWorkFittingOnceDrainsEndStartsOnFreeGPUs(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	adopt := func(id, queue, class string, preemptible bool, nodes ...string) {
		w := gang.Workload{ID: id, Queue: queue, PriorityClass: class, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: len(nodes), GPUsPerPod: 8}},
			Drain:   gang.DrainContract{Preemptible: preemptible}}
		var pods []fleet.PodAssignment
		for i, n := range nodes {
			pods = append(pods, fleet.PodAssignment{PodSet: "p", Index: i, Node: n, GPUs: 8})
		}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods}))
	}
	adopt("own", "research", fleet.ClassReservedResearch, false, "node-0-0-0", "node-0-0-1", "node-0-1-0")
	adopt("filler", "batch", fleet.ClassPreemptibleBatch, true, "node-1-0-0", "node-1-0-1")
	later := t0.Add(10 * time.Minute)
	big := gang.Workload{ID: "big", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "p", Count: 4, GPUsPerPod: 8}}}
	require.NoError(t, s.Submit(later, big))
	small := gang.Workload{ID: "small", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}
	require.NoError(t, s.Submit(later, small))
	d := s.Schedule(later)
	require.Len(t, d.Drain, 1, "%s", d)
	assert.Equal(t, "filler", d.Drain[0].ID)
	assert.Equal(t, []string{"big"}, d.Drain[0].Beneficiaries)
	require.Len(t, d.Admit, 1, "%s", d)
	assert.Equal(t, "small", d.Admit[0].ID)
	assert.Equal(t, "node-0-1-1", d.Admit[0].Pods[0].Node)
	require.NoError(t, s.CheckInvariants())
	// Once the filler exits, big starts, and the books balance.
	require.NoError(t, s.Exited(later.Add(time.Minute), "filler", gang.ExitDrained))
	d = s.Schedule(later.Add(time.Minute))
	require.Len(t, d.Admit, 1, "%s", d)
	assert.Equal(t, "big", d.Admit[0].ID)
	assert.Equal(t, 0, s.Snapshot().Fleet.FreeGPUs)
}
