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

// survivingGang is the reference fleet running, on the first nodes of
// leaf-0-0, "gang": a research gang of one 8-GPU pod a node that survives
// the loss of a node (required leaf).
func survivingGang(t *testing.T, nodes int) *fleet.Scheduler {
	t.Helper()
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	g := training("gang", nodes, fleet.ClassReservedResearch, "research")
	g.Topology = gang.TopologyRequest{Required: "leaf"}
	g.Drain.SurvivesNodeLoss = true
	var pods []fleet.PodAssignment
	for i := range nodes {
		pods = append(pods, fleet.PodAssignment{PodSet: "workers", Index: i, Node: fmt.Sprintf("node-0-0-%d", i), GPUs: 8})
	}
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: g, Started: t0, Pods: pods}))
	return s
}

// swapLeaf runs, on leaf-0-0 of the reference fleet, a 7-node research
// gang that survives the loss of a node (required leaf) and, on the
// leaf's last node, the given workload: the leaf has no free node.
func swapLeaf(t *testing.T, last gang.Workload) *fleet.Scheduler {
	s := survivingGang(t, 7)
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: last, Started: t0, Pods: []fleet.PodAssignment{{PodSet: last.PodSets[0].Name, Node: "node-0-0-7", GPUs: 8}}}))
	return s
}

// With no free node in its leaf, a lost rank's replacement drains the
// lower-priority work on the leaf's last node under the drain contract
// (reason hot-swap), and takes the node once it has left: the gang keeps
// its leaf.
func TestHotSwapDrainsLowerPriorityWorkForAReplacement(t *testing.T) {
	batch := gang.Workload{ID: "filler", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}},
		Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
	s := swapLeaf(t, batch)
	now := t0.Add(time.Hour)
	_, err := s.SetNodeHealth(now, "node-0-0-3", topology.Down)
	require.NoError(t, err)
	d := s.Schedule(now)
	assert.Empty(t, d.Replace, "no free node in the leaf")
	require.Len(t, d.Drain, 1)
	assert.Equal(t, "filler", d.Drain[0].ID)
	assert.Equal(t, gang.DrainHotSwap, d.Drain[0].Reason)
	assert.Equal(t, []string{"gang"}, d.Drain[0].Beneficiaries)
	assert.Equal(t, now.Add(fleet.DefaultGrace), d.Drain[0].Deadline)
	require.NoError(t, s.CheckInvariants())

	// While it drains, nobody else is chosen; a restart keeps the drain.
	d = s.Schedule(now.Add(30 * time.Second))
	assert.Empty(t, d.Drain)
	assert.Empty(t, d.Replace)
	r, err := fleet.Restore(fleet.ReferenceConfig(), s.Snapshot())
	require.NoError(t, err)
	for _, s := range []*fleet.Scheduler{s, r} {
		now := now.Add(time.Minute)
		require.NoError(t, s.Exited(now, "filler", gang.ExitDrained))
		d = s.Schedule(now)
		require.Len(t, d.Replace, 1)
		x := d.Replace[0]
		assert.Equal(t, fleet.Replacement{ID: "gang", PodSet: "workers", Index: 3, OldNode: "node-0-0-3", NewNode: "node-0-0-7", GPUs: 8, Wait: time.Minute}, x)
		assert.Empty(t, d.Failed)
		require.NoError(t, s.CheckInvariants())
		x2, err := s.Explain("gang")
		require.NoError(t, err)
		assert.Contains(t, x2.String(), "(span leaf)", "the gang keeps its leaf")
	}
}

// Work of the same or higher priority, or that may not be preempted, is
// never drained for a replacement: the gang fails whole after
// HotSwapWait, as without a free node.
func TestHotSwapPreemptsOnlyLowerPriorityPreemptibleWork(t *testing.T) {
	for name, last := range map[string]gang.Workload{
		"inference": {ID: "server", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
			PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 8}}},
		"same priority": {ID: "peer", Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}},
			Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}},
		"no checkpoint": {ID: "fragile", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := swapLeaf(t, last)
			now := t0.Add(time.Hour)
			_, err := s.SetNodeHealth(now, "node-0-0-3", topology.Down)
			require.NoError(t, err)
			d := s.Schedule(now)
			assert.Empty(t, d.Drain)
			assert.Empty(t, d.Replace)
			d = s.Schedule(now.Add(fleet.DefaultHotSwapWait))
			assert.Equal(t, []string{"gang"}, d.Failed)
			require.NoError(t, s.CheckInvariants())
		})
	}
}

// A pod lost under a gang that survives it holds no GPUs: once its node
// is back in service and other work fills it, a snapshot still restores,
// with the pod waiting for a replacement.
func TestRestoreKeepsLostPodsOffTheirNodeBackInService(t *testing.T) {
	for _, minCount := range []int{0, 1} { // fixed, and elastic down to one pod
		restoreWithLostPods(t, minCount)
	}
}

func restoreWithLostPods(t *testing.T, minCount int) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	w := training("gang", 2, fleet.ClassReservedResearch, "research")
	w.Topology, w.Drain.SurvivesNodeLoss = gang.TopologyRequest{}, true
	w.PodSets[0].MinCount = minCount
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{
		{PodSet: "workers", Index: 0, Node: "node-0-0-0", GPUs: 8}, {PodSet: "workers", Index: 1, Node: "node-0-0-1", GPUs: 8}}}))
	now := t0.Add(time.Minute)
	affected, err := s.SetNodeHealth(now, "node-0-0-1", topology.Down)
	require.NoError(t, err)
	require.Empty(t, affected, "the gang runs on")
	_, err = s.SetNodeHealth(now, "node-0-0-1", topology.Healthy)
	require.NoError(t, err)
	filler := training("filler", 1, fleet.ClassPreemptibleBatch, "batch")
	filler.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Adopt(now, fleet.Adoption{Workload: filler, Started: now, Pods: []fleet.PodAssignment{{PodSet: "workers", Node: "node-0-0-1", GPUs: 8}}}))

	snap := s.Snapshot()
	r, err := fleet.Restore(smallConfig(), snap)
	require.NoError(t, err)
	assert.Equal(t, snap, r.Snapshot())
	require.NoError(t, r.CheckInvariants())
	for _, v := range r.Snapshot().Running {
		if v.ID == "gang" {
			require.Len(t, v.Lost, 1)
			assert.Equal(t, "node-0-0-1", v.Lost[0].Pod.Node)
		}
	}
}

// While a victim drains for a lost rank, no more are chosen for it: the
// next cycle drains nobody, though the leaf holds more lower-priority
// work, until the lost pods need more GPUs than the draining ones hold.
func TestHotSwapChoosesNoMoreVictimsWhileItsVictimsDrain(t *testing.T) {
	s := survivingGang(t, 6)
	for i := 6; i < 8; i++ {
		w := gang.Workload{ID: fmt.Sprintf("filler-%d", i), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
			Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}},
			Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0,
			Pods: []fleet.PodAssignment{{PodSet: "p", Node: fmt.Sprintf("node-0-0-%d", i), GPUs: 8}}}))
	}
	now := t0.Add(time.Hour)
	_, err := s.SetNodeHealth(now, "node-0-0-3", topology.Down)
	require.NoError(t, err)
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1, "one 8-GPU victim for one lost 8-GPU rank")
	for _, at := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute} {
		d = s.Schedule(now.Add(at))
		assert.Empty(t, d.Drain, "at %s: its victim still drains", at)
	}
	require.NoError(t, s.CheckInvariants())

	_, err = s.SetNodeHealth(now.Add(3*time.Minute), "node-0-0-4", topology.Down)
	require.NoError(t, err)
	d = s.Schedule(now.Add(3 * time.Minute))
	require.Len(t, d.Drain, 1, "a second lost rank needs more than the one draining")
	assert.Equal(t, gang.DrainHotSwap, d.Drain[0].Reason)
}

// A gang with two pods lost past HotSwapWait, of which only one finds a
// node in that cycle, fails whole: the cycle lists it in Failed and asks
// for no replacement of it (a host would start a rank of a gang it must
// stop), and no Replaced event is emitted.
func TestGangFailingPastTheWaitGetsNoReplacementInThatCycle(t *testing.T) {
	s := survivingGang(t, 6)
	for _, node := range []string{"node-0-0-6", "node-0-0-7"} {
		w := training("block-"+node, 1, fleet.ClassReservedResearch, "research")
		w.Topology, w.Drain.Preemptible = gang.TopologyRequest{}, false
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "workers", Node: node, GPUs: 8}}}))
	}
	now := t0.Add(time.Hour)
	for _, node := range []string{"node-0-0-1", "node-0-0-2"} {
		_, err := s.SetNodeHealth(now, node, topology.Down)
		require.NoError(t, err)
	}
	d := s.Schedule(now)
	require.Empty(t, d.Replace, "no free node in the leaf")
	require.Empty(t, d.Failed)

	late := now.Add(fleet.DefaultHotSwapWait)
	require.NoError(t, s.Exited(late, "block-node-0-0-6", gang.ExitFinished))
	d = s.Schedule(late)
	assert.Equal(t, []string{"gang"}, d.Failed)
	assert.Empty(t, d.Replace, "one node for two lost pods: the gang fails, nothing is replaced")
	for _, e := range d.Events {
		assert.NotEqual(t, fleet.EventReplaced, e.Kind, "%+v", e)
	}
	require.NoError(t, s.CheckInvariants())
	snap := s.Snapshot()
	for _, r := range snap.Running {
		assert.NotEqual(t, "gang", r.ID, "the failed gang holds nothing, the node found for it included")
	}
	assert.Equal(t, 2048-16-8, snap.Fleet.FreeGPUs, "every healthy GPU free but the last blocker's")
}
