package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Research's borrowWithinCohort lets a research gang that must borrow
// evict batch filler of priority 100 or less: the rule compares the
// workloads' class priorities (reserved-research 500, preemptible-batch
// 100).
func TestBorrowWithinCohortComparesClassPriorities(t *testing.T) {
	s := newRef(t)
	full := training("full", 106, fleet.ClassReservedResearch, "research")
	full.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Submit(t0, full))
	borrow := training("borrow", 87, fleet.ClassPreemptibleBatch, "batch")
	borrow.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Submit(t0, borrow))
	require.Len(t, s.Schedule(t0).Admit, 2)

	more := training("more", 8, fleet.ClassReservedResearch, "research")
	more.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Submit(t0.Add(time.Hour), more))
	d := s.Schedule(t0.Add(time.Hour))
	require.Len(t, d.Drain, 1, "research evicts borrowed batch filler while it borrows")
	assert.Equal(t, "borrow", d.Drain[0].ID)
	assert.Equal(t, gang.DrainReclaimWhileBorrowing, d.Drain[0].Reason)
}

// Within a queue, WithinQueueLowerPriority compares the workloads' class
// priorities: a reserved-research gang preempts a preemptible-batch gang
// charged to the same queue.
func TestInQueuePreemptionComparesClassPriorities(t *testing.T) {
	s := newRef(t)
	low := training("low", 106, fleet.ClassPreemptibleBatch, "research")
	low.Topology.Required, low.Topology.Preferred = "", ""
	require.NoError(t, s.Submit(t0, low))
	for i := range 150 {
		require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("inf-%d", i), 8)))
	}
	require.Len(t, s.Schedule(t0).Admit, 151)
	require.Zero(t, s.Snapshot().Fleet.FreeGPUs, "inference at its nominal quota lends nothing")

	high := training("high", 8, fleet.ClassReservedResearch, "research")
	high.Topology.Required, high.Topology.Preferred = "", ""
	require.NoError(t, s.Submit(t0.Add(time.Hour), high))
	d := s.Schedule(t0.Add(time.Hour))
	require.Len(t, d.Drain, 1, "a higher class preempts a lower one in its own queue")
	assert.Equal(t, "low", d.Drain[0].ID)
	assert.Equal(t, gang.DrainInQueue, d.Drain[0].Reason)
}

// Adopt refuses an assignment that names one pod twice (and so leaves
// another pod unplaced), or a pod index the spec does not have.
func TestAdoptRefusesPodsThatDoNotMatchTheSpec(t *testing.T) {
	w := training("job", 2, fleet.ClassReservedResearch, "research")
	for name, pods := range map[string][]fleet.PodAssignment{
		"same pod twice": {{PodSet: "workers", Index: 0, Node: "node-0-0-0", GPUs: 8}, {PodSet: "workers", Index: 0, Node: "node-0-0-1", GPUs: 8}},
		"index too high": {{PodSet: "workers", Index: 0, Node: "node-0-0-0", GPUs: 8}, {PodSet: "workers", Index: 2, Node: "node-0-0-1", GPUs: 8}},
		"negative index": {{PodSet: "workers", Index: -1, Node: "node-0-0-0", GPUs: 8}, {PodSet: "workers", Index: 1, Node: "node-0-0-1", GPUs: 8}},
	} {
		s := newRef(t)
		before := s.Snapshot()
		err := s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods})
		assert.ErrorIs(t, err, fleet.ErrInvalid, name)
		assert.Equal(t, before, s.Snapshot(), name)
	}
}

// Adopt refuses pods on nodes of another GPU flavor than the one the
// workload is charged for: quota would count H100s while B200s are held.
func TestAdoptRefusesNodesOfAnotherFlavor(t *testing.T) {
	cfg := smallConfig()
	for i := range cfg.Topology.Nodes {
		if cfg.Topology.Nodes[i].Path[0] == "spine-1" {
			cfg.Topology.Nodes[i].Flavor = "B200"
		}
	}
	cfg.Quota.Flavors = append(cfg.Quota.Flavors, "B200")
	cfg.Quota.Nodes[1].Quotas[0] = quota.FlavorQuota{Flavor: "H100", Nominal: 16} // the H100s left: 32
	cfg.Quota.Nodes[2].Quotas[0].Nominal = 16
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	before := s.Snapshot()
	w := training("job", 1, fleet.ClassReservedResearch, "research")
	w.Topology = gang.TopologyRequest{}
	node := ""
	for _, n := range cfg.Topology.Nodes {
		if n.Flavor == "B200" {
			node = n.Name
			break
		}
	}
	err = s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "workers", Index: 0, Node: node, GPUs: 8}}})
	assert.ErrorIs(t, err, fleet.ErrInvalid)
	assert.Equal(t, before, s.Snapshot())
}

// GPUs a draining victim holds beyond what its beneficiary claims are
// nominated for the next workload that needs them (a plan that needs no
// new victim), and such a plan does not stop a larger workload of the same
// class from finding victims of its own in the same cycle.
func TestUnclaimedGPUsOfDrainingVictimsAreNominated(t *testing.T) {
	s := fullOfBatch(t)

	t1 := t0.Add(time.Hour)
	require.NoError(t, s.Submit(t1, replica("a", 4)))
	d := s.Schedule(t1)
	require.Len(t, d.Drain, 1, "a drains one batch node and claims half of it")

	t2 := t1.Add(time.Second)
	require.NoError(t, s.Submit(t2, replica("b", 4)))
	c := replica("c", 4)
	c.PodSets[0].Count = 2
	require.NoError(t, s.Submit(t2, c))
	d = s.Schedule(t2)
	require.Len(t, d.Drain, 1, "c finds a victim of its own")
	assert.Equal(t, []string{"c"}, d.Drain[0].Beneficiaries)
	nominated := map[string]bool{}
	for _, p := range s.Snapshot().Pending {
		nominated[p.ID] = p.Nominated
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true, "c": true}, nominated,
		"b waits on the half of a's victim nobody claimed")
	x, err := s.Explain("b")
	require.NoError(t, err)
	assert.Equal(t, 1, x.VictimsLeft)
	assert.Equal(t, t1.Add(fleet.DefaultGrace), x.ReadyBy, "b's capacity is back by the deadline of a's victim")
}

// The IDs SetNodeHealth returns belong to the host: changing them does
// not rewrite the node-down event the next cycle reports.
func TestSetNodeHealthResultIsTheHosts(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.Submit(t0, training("job", 16, fleet.ClassReservedResearch, "research")))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	affected, err := s.SetNodeHealth(t0, d.Admit[0].Pods[0].Node, topology.Down)
	require.NoError(t, err)
	require.Equal(t, []string{"job"}, affected)
	affected[0] = "changed by the host"
	var down []fleet.Event
	for _, e := range s.Schedule(t0).Events {
		if e.Kind == fleet.EventNodeDown {
			down = append(down, e)
		}
	}
	require.Len(t, down, 1)
	assert.Equal(t, []string{"job"}, down[0].Affected)
}

// A victim chosen again after its first beneficiary left keeps its
// deadline, and the new beneficiary's wait ends by that deadline.
func TestRechosenVictimKeepsItsDeadline(t *testing.T) {
	s := fullOfBatch(t)

	t1 := t0.Add(time.Hour)
	require.NoError(t, s.Submit(t1, replica("a", 8)))
	d := s.Schedule(t1)
	require.Len(t, d.Drain, 1)
	victim, deadline := d.Drain[0].ID, d.Drain[0].Deadline
	require.NoError(t, s.Cancel(t1.Add(time.Second), "a"))

	t2 := t1.Add(time.Minute)
	require.NoError(t, s.Submit(t2, replica("b", 8)))
	d = s.Schedule(t2)
	assert.Empty(t, d.Drain, "the draining victim serves b; nobody new is drained")
	x, err := s.Explain("b")
	require.NoError(t, err)
	assert.Equal(t, 1, x.VictimsLeft)
	assert.Equal(t, deadline, x.ReadyBy, "b waits for %s until its deadline", victim)
	d = s.Schedule(deadline)
	require.Len(t, d.Kill, 1)
	assert.Equal(t, victim, d.Kill[0].ID)
}

// fullOfBatch is the small fleet with one inference replica on one node
// and a 1-node preemptible batch job on each of the other seven.
func fullOfBatch(t *testing.T) *fleet.Scheduler {
	t.Helper()
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	for i := range 7 {
		w := training(fmt.Sprintf("batch-%d", i), 1, fleet.ClassPreemptibleBatch, "batch")
		w.Topology = gang.TopologyRequest{}
		require.NoError(t, s.Submit(t0, w))
	}
	require.NoError(t, s.Submit(t0, replica("base", 8)))
	require.Len(t, s.Schedule(t0).Admit, 8)
	return s
}

// A host that never calls Schedule cannot make the scheduler hold events
// without bound: beyond MaxEvents they are counted, not kept.
func TestEventsBetweenCyclesAreBounded(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.Submit(t0, replica("r", 1)))
	require.Len(t, s.Schedule(t0).Admit, 1)
	for range fleet.MaxEvents + 10 {
		require.NoError(t, s.Checkpointed(t0, "r", t0))
	}
	d := s.Schedule(t0)
	assert.Len(t, d.Events, fleet.MaxEvents)
	assert.Equal(t, 10, d.EventsDropped)
	d = s.Schedule(t0)
	assert.Zero(t, d.EventsDropped)
	assert.Empty(t, d.Events)
}
