package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// A workload that accepts several GPU models preempts as Kueue's flavor
// assigner tries flavors: on its first accepted model where a victim
// search finds a plan, in its order of preference, charged for that
// model; it starts there once its victims are gone.
//
// Two H100 nodes (h0, h1) and one A100 node (a0) of 8 GPUs, each full
// with one 8-GPU batch job; the queue has all their quota. An 8-GPU
// inference pod that accepts both models fits on neither.
func TestModelSetPreemptsOnItsModelsInOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		models   []string
		blocked  []string // batch jobs that do not checkpoint: never victims
		victimOn string   // the node of its victim; "" for none
		model    string   // the model it is charged for afterwards
	}{
		{name: "first model", models: []string{"H100", "A100"}, victimOn: "h0", model: "H100"},
		{name: "first model, A100 first", models: []string{"A100", "H100"}, victimOn: "a0", model: "A100"},
		{name: "no victim on the first: the next", models: []string{"H100", "A100"}, blocked: []string{"h0", "h1"}, victimOn: "a0", model: "A100"},
		{name: "no victim anywhere", models: []string{"H100", "A100"}, blocked: []string{"h0", "h1", "a0"}, model: "H100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := batchOnEveryModel(t, tc.blocked)
			now := t0.Add(time.Hour)
			w := gang.Workload{ID: "serve", Queue: "team", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
				Flavors: tc.models, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}
			require.NoError(t, s.Submit(now, w))
			d := s.Schedule(now)
			require.Empty(t, d.Admit)
			require.NoError(t, s.CheckInvariants())
			snap := s.Snapshot()
			if tc.victimOn == "" {
				assert.Empty(t, d.Drain)
				x, err := s.Explain("serve")
				require.NoError(t, err)
				assert.NotEqual(t, fleet.WaitVictims, x.Waiting)
				assert.Equal(t, tc.model, pendingFlavor(snap, "serve"))
				return
			}
			require.Len(t, d.Drain, 1)
			victim := d.Drain[0].ID
			assert.Equal(t, "batch-"+tc.victimOn, victim)
			assert.Equal(t, []string{"serve"}, d.Drain[0].Beneficiaries)
			assert.Equal(t, tc.model, pendingFlavor(snap, "serve"), "charged for the model it preempts on")

			now = now.Add(time.Minute)
			require.NoError(t, s.Exited(now, victim, gang.ExitDrained))
			d = s.Schedule(now)
			require.Len(t, d.Admit, 1)
			assert.Equal(t, "serve", d.Admit[0].ID)
			assert.Equal(t, tc.victimOn, d.Admit[0].Pods[0].Node)
			require.NoError(t, s.CheckInvariants())
		})
	}
}

// A model set of GPU shares reclaims room (without a nomination) on its
// models in order too: the first whose victims make room.
func TestSharedModelSetReclaimsOnItsModelsInOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		blocked  []string
		victimOn string
	}{
		{name: "first model", victimOn: "h0"},
		{name: "no victim on the first: the next", blocked: []string{"h0", "h1"}, victimOn: "a0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := batchOnEveryModel(t, tc.blocked)
			now := t0.Add(time.Hour)
			w := gang.Workload{ID: "serve", Queue: "team", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
				Flavors: []string{"H100", "A100"}, PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUShare: 500}}}
			require.NoError(t, s.Submit(now, w))
			d := s.Schedule(now)
			require.Empty(t, d.Admit)
			require.Len(t, d.Drain, 1)
			assert.Equal(t, "batch-"+tc.victimOn, d.Drain[0].ID)
			require.NoError(t, s.CheckInvariants())
			now = now.Add(time.Minute)
			require.NoError(t, s.Exited(now, d.Drain[0].ID, gang.ExitDrained))
			d = s.Schedule(now)
			require.Len(t, d.Admit, 1)
			assert.Equal(t, tc.victimOn, d.Admit[0].Pods[0].Node)
			require.NoError(t, s.CheckInvariants())
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pendingFlavor is the model a pending workload is charged for.
func pendingFlavor(snap fleet.Snapshot, id string) string {
	for _, p := range snap.Pending {
		if p.ID == id {
			return p.Spec.Flavor
		}
	}
	return ""
}

// batchOnEveryModel is shareConfig with m0 cordoned and an 8-GPU batch job
// of queue team on h0, h1 (H100) and a0 (A100), preemptible unless blocked.
func batchOnEveryModel(t *testing.T, blocked []string) *fleet.Scheduler {
	t.Helper()
	cfg := shareConfig()
	cfg.Quota.Nodes[0].Preemption = quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	_, err = s.SetNodeHealth(t0, "m0", topology.Cordoned)
	require.NoError(t, err)
	for _, n := range []struct{ node, model string }{{"h0", "H100"}, {"h1", "H100"}, {"a0", "A100"}} {
		w := gang.Workload{ID: "batch-" + n.node, Queue: "team", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
			Flavor: n.model, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}},
			Drain: gang.DrainContract{Preemptible: !contains(blocked, n.node)}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Node: n.node, GPUs: 8}}}))
	}
	return s
}
