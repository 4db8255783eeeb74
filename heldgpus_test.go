package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// A plan that needs no victim beyond those already draining is nominated
// only when its target takes GPUs they hold; one whose target fits the
// free GPUs of its node exactly waits for their quota instead of claiming
// the node: small (research, within its quota) would fit on node-0-1-1
// once the batch filler drained for big has gone.
func TestPlanOnFreeGPUsAloneWaits(t *testing.T) {
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
		require.NoError(t, s.Adopt(t0, w, t0, pods))
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
	x, err := s.Explain("small")
	require.NoError(t, err)
	assert.Equal(t, fleet.WaitQuota, x.Waiting, "small claims no node while the quota is drained")
	assert.Len(t, d.Admit, 0)
}
