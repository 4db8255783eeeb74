package fleet_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// reclaimFleet fills the reference fleet: inference 16 nodes below its
// guarantee, research at its nominal quota with a gang that does not
// checkpoint, and two 8-node research gangs, a and b, borrowing the 16
// nodes inference lends. Then inference asks for 16 replicas of 8 GPUs,
// which drains a and b.
func reclaimFleet(t *testing.T) (*fleet.Scheduler, fleet.Decisions, time.Time) {
	t.Helper()
	s := newRef(t)
	for i := range 134 {
		require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("inf-%d", i), 8)))
	}
	own := training("own", 106, fleet.ClassReservedResearch, "research")
	own.Drain.Preemptible = false
	own.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Submit(t0, own))
	require.NoError(t, s.Submit(t0, training("a", 8, fleet.ClassReservedResearch, "research")))
	require.NoError(t, s.Submit(t0, training("b", 8, fleet.ClassReservedResearch, "research")))
	require.Len(t, s.Schedule(t0).Admit, 137)
	require.Zero(t, s.Snapshot().Fleet.FreeGPUs)

	now := t0.Add(time.Hour)
	for i := range 16 {
		require.NoError(t, s.Submit(now, replica(fmt.Sprintf("spike-%02d", i), 8)))
	}
	d := s.Schedule(now)
	require.Len(t, d.Drain, 2, "inference takes back its 16 nodes from a and b")
	require.Empty(t, d.Admit)
	return s, d, now
}

func nodesOf(s *fleet.Scheduler, id string) []string {
	for _, r := range s.Snapshot().Running {
		if r.ID == id {
			var out []string
			for _, n := range r.Nodes {
				out = append(out, n.Node)
			}
			return out
		}
	}
	return nil
}

// Each replica starts as soon as the victim on its own node has exited,
// not when the slowest victim of the spike is gone; every Drain names all
// the replicas it makes room for.
func TestReclaimStartsEachReplicaWhenItsOwnVictimExits(t *testing.T) {
	s, d, now := reclaimFleet(t)
	served := map[string][]string{}
	for _, x := range d.Drain {
		assert.Len(t, x.Beneficiaries, 8, "%s frees 8 nodes, one per replica", x.ID)
		assert.Equal(t, gang.DrainReclaim, x.Reason)
		served[x.ID] = x.Beneficiaries
	}
	aNodes := nodesOf(s, "a")

	now = now.Add(30 * time.Second)
	require.NoError(t, s.Exited(now, "a", gang.ExitDrained))
	d = s.Schedule(now)
	require.Len(t, d.Admit, 8, "a's replicas start while b still drains")
	var started, on []string
	for _, x := range d.Admit {
		started = append(started, x.ID)
		on = append(on, x.Pods[0].Node)
	}
	assert.ElementsMatch(t, served["a"], started)
	assert.ElementsMatch(t, aNodes, on)

	x, err := s.Explain(served["b"][0])
	require.NoError(t, err)
	assert.Equal(t, fleet.WaitVictims, x.Waiting)
	assert.Equal(t, []string{"b"}, x.Victims)

	// b overstays its deadline: the host is asked to kill it every cycle,
	// with how overdue it is, and the event is recorded once.
	deadline := t0.Add(time.Hour + fleet.DefaultGrace)
	kills := 0
	for _, at := range []time.Duration{0, time.Minute, 10 * time.Minute} {
		d = s.Schedule(deadline.Add(at))
		require.Len(t, d.Kill, 1)
		assert.Equal(t, fleet.Kill{ID: "b", Deadline: deadline, Overdue: at, Reason: gang.DrainReclaim}, d.Kill[0])
		for _, ev := range d.Events {
			if ev.Kind == fleet.EventKilled {
				kills++
			}
		}
	}
	assert.Equal(t, 1, kills, "one kill event, however often the host is asked")
	x, err = s.Explain("b")
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, x.Overdue)
	assert.Contains(t, x.Message, "overdue by 10m0s")
	assert.Equal(t, served["b"], x.Beneficiaries)

	now = deadline.Add(11 * time.Minute)
	require.NoError(t, s.Exited(now, "b", gang.ExitKilled))
	d = s.Schedule(now)
	require.Len(t, d.Admit, 8)
	require.Empty(t, d.Kill)
}

// A restart in the middle of a drain, from a snapshot, changes nothing:
// the same victims keep their deadlines, the replicas their nominations,
// and no victim is added.
func TestRestoreMidDrainKeepsTheContract(t *testing.T) {
	s, d, now := reclaimFleet(t)
	r, err := fleet.Restore(fleet.ReferenceConfig(), s.Snapshot())
	require.NoError(t, err)
	require.Equal(t, s.Snapshot(), r.Snapshot())
	deadline := d.Drain[0].Deadline

	for _, at := range []time.Time{now.Add(time.Second), deadline} {
		a, b := s.Schedule(at), r.Schedule(at)
		assert.Equal(t, a, b, "at %s", at)
		assert.Empty(t, b.Drain, "no victim drained again or added")
	}
	x, err := r.Explain(d.Drain[0].ID)
	require.NoError(t, err)
	assert.Equal(t, deadline, x.Deadline, "a restart never extends a deadline")
}

// A host that learns of a checkpoint late reports it with its own time;
// the victim search then charges only the work since.
func TestLateCheckpointLowersTheCost(t *testing.T) {
	s := newRef(t)
	for i := range 150 {
		require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("inf-%d", i), 8)))
	}
	require.NoError(t, s.Submit(t0, training("job", 8, fleet.ClassPreemptibleBatch, "research")))
	filler := training("filler", 98, fleet.ClassReservedResearch, "research")
	filler.Topology, filler.Drain.Preemptible = gang.TopologyRequest{}, false
	require.NoError(t, s.Submit(t0, filler))
	require.Len(t, s.Schedule(t0).Admit, 152)

	now := t0.Add(2 * time.Hour)
	require.NoError(t, s.Checkpointed(now, "job", now.Add(-10*time.Minute)))
	require.Error(t, s.Checkpointed(now, "job", now.Add(time.Minute)), "a checkpoint in the future")
	require.Error(t, s.Checkpointed(now, "job", t0.Add(-time.Minute)), "a checkpoint before the run")
	high := training("high", 8, fleet.ClassReservedResearch, "research")
	require.NoError(t, s.Submit(now, high))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1)
	assert.Equal(t, "job", d.Drain[0].ID)
	// 64 GPUs x (10 minutes since the checkpoint + 3 minutes restart).
	assert.InDelta(t, 64*13*60, d.Drain[0].LostGPUSeconds, 1e-6)
}

// An exit the lifecycle does not allow is refused: "drained" follows only
// a drain request.
func TestExitedDrainedWithoutDrainIsRefused(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.Submit(t0, replica("r", 8)))
	require.Len(t, s.Schedule(t0).Admit, 1)
	before := s.Snapshot()
	err := s.Exited(t0, "r", gang.ExitDrained)
	require.ErrorIs(t, err, fleet.ErrBadState)
	require.Equal(t, before, s.Snapshot())
}

func TestRestoreRefusesASnapshotThatDoesNotAddUp(t *testing.T) {
	s, _, _ := reclaimFleet(t)
	snap := s.Snapshot()
	for i := range snap.Running {
		if snap.Running[i].Drain != nil {
			snap.Running[i].Drain.Claims = slices.Clone(snap.Running[i].Drain.Claims[:1])
			break
		}
	}
	_, err := fleet.Restore(fleet.ReferenceConfig(), snap)
	require.ErrorIs(t, err, fleet.ErrInvalid)
}

// A drain the host asks for (maintenance) follows the same contract: a
// deadline, then a kill every cycle until the exit; nobody is nominated,
// so the GPUs go back to the pool.
func TestRequestDrainForMaintenance(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.Submit(t0, training("job", 8, fleet.ClassReservedResearch, "research")))
	require.Len(t, s.Schedule(t0).Admit, 1)
	before := s.Snapshot()
	for name, call := range map[string]func() error{
		"unknown":        func() error { _, err := s.RequestDrain(t0, "nope", 0); return err },
		"negative grace": func() error { _, err := s.RequestDrain(t0, "job", -time.Second); return err },
		"time reversed":  func() error { _, err := s.RequestDrain(t0.Add(-time.Hour), "job", 0); return err },
	} {
		require.Error(t, call(), name)
		require.Equal(t, before, s.Snapshot(), name)
	}
	now := t0.Add(time.Hour)
	d, err := s.RequestDrain(now, "job", 5*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, fleet.Drain{ID: "job", Deadline: now.Add(5 * time.Minute), Reason: gang.DrainHost}, d)
	again, err := s.RequestDrain(now.Add(time.Minute), "job", time.Hour)
	require.NoError(t, err)
	assert.Equal(t, d.Deadline, again.Deadline, "a second request does not extend the deadline")
	k := s.Schedule(now.Add(6 * time.Minute)).Kill
	require.Len(t, k, 1)
	assert.Equal(t, time.Minute, k[0].Overdue)
	require.NoError(t, s.Exited(now.Add(7*time.Minute), "job", gang.ExitKilled))
	assert.Equal(t, 2048, s.Snapshot().Fleet.FreeGPUs)
}

// A domain held for a blocked gang does not starve other work that fits
// elsewhere: a 1-GPU replica whose best fit lies in the held spine is
// placed around it, on the free node of the other spine.
func TestHeldDomainDoesNotStarveWorkThatFitsElsewhere(t *testing.T) {
	cfg := smallConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	adopt := func(id string, gpus int, node string) {
		w := gang.Workload{ID: id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: gpus}}}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: node, GPUs: gpus}}}))
	}
	adopt("r0", 7, "node-0-0-0")
	adopt("r1", 8, "node-0-0-1")
	adopt("r2", 8, "node-1-0-0")
	adopt("r3", 8, "node-1-0-1")
	adopt("r4", 8, "node-1-1-0")
	gangW := gang.Workload{ID: "gang", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "p", Count: 4, GPUsPerPod: 8}}, Topology: gang.TopologyRequest{Required: "spine"}}
	require.NoError(t, s.Submit(t0, gangW))
	require.Empty(t, s.Schedule(t0).Admit)
	x, err := s.Explain("gang")
	require.NoError(t, err)
	require.NotEqual(t, fleet.WaitUnscheduled, x.Waiting)

	require.NoError(t, s.Submit(t0, replica("small", 1)))
	d := s.Schedule(t0.Add(time.Second))
	require.Len(t, d.Admit, 1, "the replica must not wait behind the hold: %s", d)
	assert.Equal(t, "node-1-1-1", d.Admit[0].Pods[0].Node)
}

// A fork answers what-if questions without touching the original.
func TestForkSharesNothing(t *testing.T) {
	s, _, now := reclaimFleet(t)
	before := s.Snapshot()
	f, err := s.Fork()
	require.NoError(t, err)
	require.Equal(t, before, f.Snapshot())
	f.Schedule(now.Add(time.Hour))
	require.NoError(t, f.Exited(now.Add(time.Hour), "a", gang.ExitKilled))
	require.NotEqual(t, before, f.Snapshot())
	require.Equal(t, before, s.Snapshot(), "the fork changed the original")
}

// While a nomination's victim drains, the tree charges both the victim
// and its beneficiary. A replica of a queue under its guarantee that fits
// once the victim is gone, on a GPU free now, is admitted at once rather
// than left with a quota verdict and no victim to drain for it.
func TestReplicaFitsQuotaOnceNominatedVictimsAreGone(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	adopt := func(w gang.Workload, node string, gpus int) {
		t.Helper()
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: w.PodSets[0].Name, Node: node, GPUs: gpus}}}))
	}
	adopt(replica("inf-a", 8), "node-0-0-0", 8)
	adopt(replica("inf-b", 8), "node-0-0-1", 8)
	adopt(replica("inf-c", 3), "node-0-1-0", 3)
	batch := func(id string, gpus int) gang.Workload {
		w := training(id, 1, fleet.ClassPreemptibleBatch, "batch")
		w.Topology, w.PodSets[0].GPUsPerPod = gang.TopologyRequest{}, gpus
		return w
	}
	adopt(batch("batch-c", 4), "node-0-1-0", 4)
	for _, node := range []string{"node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0"} {
		adopt(batch("batch-"+node, 8), node, 8)
	}
	// Research, within its guarantee, takes the free node and one of
	// batch's: 16 GPUs charged now, the victim's 8 until it exits.
	now := t0.Add(time.Hour)
	r := training("research", 2, fleet.ClassReservedResearch, "research")
	r.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Submit(now, r))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1)
	require.Empty(t, d.Admit)

	require.NoError(t, s.Submit(now, replica("inf-d", 1)))
	d = s.Schedule(now.Add(time.Second))
	require.Len(t, d.Admit, 1, "explained: %v", explain(t, s, "inf-d"))
	assert.Equal(t, "inf-d", d.Admit[0].ID)
	assert.Equal(t, "node-0-1-0", d.Admit[0].Pods[0].Node)
	assert.Empty(t, d.Drain, "no other victim")
}

func explain(t *testing.T, s *fleet.Scheduler, id string) string {
	x, err := s.Explain(id)
	require.NoError(t, err)
	return x.Message
}

// A nomination dissolved while its victims drain leaves them draining for
// its beneficiary without one: the beneficiary counts them before it
// drains more, and a scheduler restored from a snapshot there (which reads
// that from the books) decides the same as the one that never stopped.
func TestDissolvedNominationWaitsForItsVictimsLikeARestoredOne(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	adoptBatch(t, s, "node-0-0-1", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1")
	now := t0.Add(time.Hour)
	big := gang.Workload{ID: "big", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 8}}}
	require.NoError(t, s.Submit(now, replica("small", 8)))
	require.NoError(t, s.Submit(now, big))
	d := s.Schedule(now)
	require.Len(t, d.Admit, 1, "%s", d)
	require.NotEmpty(t, d.Drain, "%s", d)
	snap := s.Snapshot()
	var target string
	for _, p := range snap.Pending {
		if p.ID == "big" && p.Nomination != nil {
			target = p.Nomination.Pods[0].Node
		}
	}
	require.NotEmpty(t, target, "big is nominated: %+v", snap.Pending)
	cordonAndRestore(t, s, now, target)
}

// Two replicas nominated on one victim's node: when the node is cordoned
// both nominations dissolve, one after the other, and the victim, which
// neither counts on any more, drains on for both without a nomination.
// The first one dissolved must wait for it as the second does, as a
// scheduler restored from the books reads it (it found the victim still
// promised to the second when its own nomination went).
func TestVictimOfTwoDissolvedNominationsDrainsForBothLikeARestoredOne(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	adoptBatch(t, s, "node-0-0-0", "node-0-0-1", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1")
	now := t0.Add(time.Hour)
	require.NoError(t, s.Submit(now, replica("a", 4)))
	require.NoError(t, s.Submit(now, replica("b", 4)))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1, "one victim makes room for both: %s", d)
	require.Len(t, d.Nominate, 2, "%s", d)
	target := d.Nominate[0].Pods[0].Node
	require.Equal(t, target, d.Nominate[1].Pods[0].Node, "both on the victim's node")
	r := cordonAndRestore(t, s, now, target)
	for _, id := range []string{"a", "b"} {
		assert.Equal(t, explain(t, r, id), explain(t, s, id))
	}
}

// A restored scheduler explains running work as the one that never
// stopped: by the smallest domain holding its pods, which the pods alone
// tell (the level its placement searched is not in the snapshot).
func TestRestoredSchedulerExplainsRunningWorkAsTheOneThatNeverStopped(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	gangs := []gang.Workload{training("spine-gang", 2, fleet.ClassReservedResearch, "research"), replica("one", 4)}
	for _, w := range gangs {
		require.NoError(t, s.Submit(t0, w))
	}
	require.Len(t, s.Schedule(t0).Admit, len(gangs))
	r, err := fleet.Restore(smallConfig(), s.Snapshot())
	require.NoError(t, err)
	for _, w := range gangs {
		assert.Equal(t, explain(t, s, w.ID), explain(t, r, w.ID))
	}
	assert.Regexp(t, `on leaf-\d-\d \(span leaf\)`, explain(t, s, "spine-gang"))
}

// adoptBatch adopts on each node a one-pod batch job holding its 8 GPUs,
// started at t0, named after the node.
func adoptBatch(t *testing.T, s *fleet.Scheduler, nodes ...string) {
	t.Helper()
	for _, node := range nodes {
		w := training("batch-"+node, 1, fleet.ClassPreemptibleBatch, "batch")
		w.Topology = gang.TopologyRequest{}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "workers", Node: node, GPUs: 8}}}))
	}
}

// cordonAndRestore cordons node a second after now, restores a scheduler
// from s's snapshot, and requires both to decide alike a minute after now
// and to keep the same books; it returns the restored one.
func cordonAndRestore(t *testing.T, s *fleet.Scheduler, now time.Time, node string) *fleet.Scheduler {
	t.Helper()
	_, err := s.SetNodeHealth(now.Add(time.Second), node, topology.Cordoned)
	require.NoError(t, err)
	r, err := fleet.Restore(smallConfig(), s.Snapshot())
	require.NoError(t, err)
	later := now.Add(time.Minute)
	a, b := s.Schedule(later), r.Schedule(later)
	assert.Equal(t, b, a, "a restored scheduler decides as the one that never stopped")
	assert.Equal(t, r.Snapshot(), s.Snapshot(), "and keeps the same books")
	return r
}

// Nominations a cordon dissolves are dissolved in their beneficiaries'
// queue order, not in the order they were accepted, which a scheduler
// rebuilt by adoption does not know: the events come out alike after a
// restart. Here research is nominated first, then a prod-inference
// replica on the same victim's node; the replica comes first in queue
// order.
func TestCordonDissolvesNominationsInQueueOrder(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	adoptBatch(t, s, "node-0-0-0", "node-0-0-1", "node-0-1-0", "node-0-1-1", "node-1-0-0", "node-1-0-1", "node-1-1-0", "node-1-1-1")
	now := t0.Add(time.Hour)
	r := training("research", 1, fleet.ClassReservedResearch, "research")
	r.Topology, r.PodSets[0].GPUsPerPod = gang.TopologyRequest{}, 4
	require.NoError(t, s.Submit(now, r))
	d := s.Schedule(now)
	require.Len(t, d.Nominate, 1, "%s", d)
	target := d.Nominate[0].Pods[0].Node
	require.NoError(t, s.Submit(now.Add(time.Second), replica("inf", 4)))
	d = s.Schedule(now.Add(time.Second))
	require.Len(t, d.Nominate, 1, "%s", d)
	require.Equal(t, target, d.Nominate[0].Pods[0].Node, "the replica takes the victim's other half")

	_, err = s.SetNodeHealth(now.Add(2*time.Second), target, topology.Cordoned)
	require.NoError(t, err)
	d = s.Schedule(now.Add(2 * time.Second))
	var dissolved []string
	for _, e := range d.Events {
		if e.Kind == fleet.EventNominationDissolved {
			dissolved = append(dissolved, e.Workload)
		}
	}
	assert.Equal(t, []string{"inf", "research"}, dissolved)
}
