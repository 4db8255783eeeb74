package fleet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// quotaNode returns the named node of the scheduler's quota in force.
func quotaNode(t *testing.T, s *fleet.Scheduler, name string) quota.NodeSpec {
	t.Helper()
	for _, n := range s.Quota().Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no quota node %q", name)
	return quota.NodeSpec{}
}

// liveConfig is one leaf of two 8-GPU nodes, the second declared absent,
// and a cohort of two queues: "team" guaranteed 8 GPUs, "notebooks"
// nothing. Notebooks idle for 2 h are reclaimed.
func liveConfig() fleet.Config {
	topo := topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{1, 2}, GPUsPerNode: 8, Flavor: "H100"})
	topo.Nodes[1].Absent = true
	return fleet.Config{
		Topology: topo,
		Quota: quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
			{Name: "all", Kind: quota.Cohort},
			{Name: "team", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8}},
				Preemption: quota.Rules{ReclaimWithinCohort: quota.ReclaimAny}},
			{Name: "notebooks", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}}},
		}},
		Classes: []fleet.PriorityClass{{Name: "notebook", Value: 10, Grace: time.Minute}, {Name: "service", Value: 100}},
		Policy:  fleet.Policy{IdleReclaim: []fleet.IdleRule{{Class: "notebook", After: 2 * time.Hour}}},
	}
}

func job(id, queue, class string, gpus int) gang.Workload {
	return gang.Workload{ID: id, Queue: queue, PriorityClass: class, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "main", Count: 1, GPUsPerPod: gpus}}, Drain: gang.DrainContract{Preemptible: true}}
}

func TestSetQueueRefusalsLeaveStateUnchanged(t *testing.T) {
	w := -1.0
	for _, tt := range []struct {
		name string
		now  time.Time
		edit func(n *quota.NodeSpec)
		err  []error
	}{
		{"unknown node", t0, func(n *quota.NodeSpec) { n.Name = "nobody" }, []error{fleet.ErrInvalidQuota, quota.ErrUnknownNode}},
		{"new parent", t0, func(n *quota.NodeSpec) { n.Parent = "" }, []error{fleet.ErrInvalidQuota, quota.ErrShapeChange}},
		{"dropped flavor", t0, func(n *quota.NodeSpec) { n.Quotas = nil }, []error{fleet.ErrInvalidQuota, quota.ErrFlavorRemoved}},
		{"negative weight", t0, func(n *quota.NodeSpec) { n.Weight = &w }, []error{fleet.ErrInvalidQuota, quota.ErrInvalidWeight}},
		{"guarantees above the fleet", t0, func(n *quota.NodeSpec) { n.Quotas[0].Nominal = 900 }, []error{fleet.ErrOverCapacity, quota.ErrOverPromised}},
		{"time reversed", t0.Add(-time.Second), func(n *quota.NodeSpec) { n.Quotas[0].Nominal = 100 }, []error{fleet.ErrTimeReversed}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newRef(t)
			require.NoError(t, s.Submit(t0, training("r1", 4, fleet.ClassReservedResearch, "research")))
			s.Schedule(t0)
			before := s.Snapshot()
			n := quotaNode(t, s, "research")
			tt.edit(&n)
			err := s.SetQueue(tt.now, n)
			for _, e := range tt.err {
				require.ErrorIs(t, err, e)
			}
			assert.Equal(t, before, s.Snapshot())
		})
	}
}

func TestSetQueueEvictsNothingAndReclaimFollowsTheDrainContract(t *testing.T) {
	s := newRef(t)
	for i := range 100 {
		require.NoError(t, s.Submit(t0, training(fmt.Sprintf("r%d", i), 1, fleet.ClassReservedResearch, "research")))
	}
	require.Len(t, s.Schedule(t0).Admit, 100) // 800 GPUs, within research's 848

	// Research's guarantee moves to inference: nothing is drained by the
	// edit, research now borrows 400 GPUs.
	now := t0.Add(10 * time.Minute)
	r := quotaNode(t, s, "research")
	r.Quotas[0].Nominal = 400
	require.NoError(t, s.SetQueue(now, r))
	inf := quotaNode(t, s, "prod-inference")
	inf.Quotas[0].Nominal = 1648
	w := 4.0
	inf.Weight = &w
	require.NoError(t, s.SetQueue(now, inf))
	d := s.Schedule(now)
	assert.Empty(t, d.Drain)
	assert.Empty(t, d.Kill)
	kinds := []fleet.EventKind{}
	for _, e := range d.Events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []fleet.EventKind{fleet.EventQueueChanged, fleet.EventQueueChanged}, kinds)
	snap := s.Snapshot()
	assert.Equal(t, snap.Quota, s.Quota())
	for _, q := range snap.Queues {
		switch q.Name {
		case "research":
			assert.Equal(t, int64(400), q.Flavors[0].Borrowed)
		case "prod-inference":
			assert.Equal(t, 4.0, q.Weight)
			assert.Equal(t, int64(1648), q.Flavors[0].Nominal)
		}
	}

	// Inference asks for more than is free: the next cycle reclaims
	// research's borrowed GPUs with a deadline, as for any reclaim.
	for i := range 160 {
		require.NoError(t, s.Submit(now, replica(fmt.Sprintf("i%d", i), 8)))
	}
	d = s.Schedule(now)
	assert.Len(t, d.Admit, 156) // the 1,248 free GPUs
	require.NotEmpty(t, d.Drain)
	for _, x := range d.Drain {
		assert.Equal(t, gang.DrainReclaim, x.Reason)
		assert.Equal(t, now.Add(fleet.DefaultGrace), x.Deadline)
	}
	assert.Empty(t, d.Kill)
}

func TestRemoveAndAddNodeRefusalsLeaveStateUnchanged(t *testing.T) {
	for _, tt := range []struct {
		name string
		call func(s *fleet.Scheduler) error
		err  error
	}{
		{"remove unknown node", func(s *fleet.Scheduler) error { return s.RemoveNode(t0, "node-9") }, fleet.ErrUnknownNode},
		{"remove a busy node", func(s *fleet.Scheduler) error { return s.RemoveNode(t0, "node-0-0") }, fleet.ErrNodeBusy},
		{"remove an absent node", func(s *fleet.Scheduler) error { return s.RemoveNode(t0, "node-0-1") }, fleet.ErrBadState},
		{"add unknown node", func(s *fleet.Scheduler) error { return s.AddNode(t0, "node-9") }, fleet.ErrUnknownNode},
		{"add a present node", func(s *fleet.Scheduler) error { return s.AddNode(t0, "node-0-0") }, fleet.ErrBadState},
		{"add before now", func(s *fleet.Scheduler) error { return s.AddNode(t0.Add(-time.Second), "node-0-1") }, fleet.ErrTimeReversed},
		{"health of an absent node", func(s *fleet.Scheduler) error {
			_, err := s.SetNodeHealth(t0, "node-0-1", topology.Healthy)
			return err
		}, fleet.ErrBadState},
		{"health absent", func(s *fleet.Scheduler) error {
			_, err := s.SetNodeHealth(t0, "node-0-0", topology.Absent)
			return err
		}, fleet.ErrBadState},
		{"quota above the nodes in service", func(s *fleet.Scheduler) error {
			n := quotaNode(t, s, "team")
			n.Quotas[0].Nominal = 16
			return s.SetQueue(t0, n)
		}, fleet.ErrOverCapacity},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := fleet.New(liveConfig())
			require.NoError(t, err)
			require.NoError(t, s.Submit(t0, job("a", "team", "service", 2)))
			require.Len(t, s.Schedule(t0).Admit, 1)
			before := s.Snapshot()
			require.ErrorIs(t, tt.call(s), tt.err)
			assert.Equal(t, before, s.Snapshot())
		})
	}
}

func TestRemoveNodeRefusesToOverPromise(t *testing.T) {
	s := newRef(t) // guarantees are exactly the 2,048 GPUs
	before := s.Snapshot()
	err := s.RemoveNode(t0, "node-3-7-7")
	require.ErrorIs(t, err, fleet.ErrOverCapacity)
	var ce *quota.CapacityError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []quota.OverPromise{{Flavor: "H100", Guaranteed: 2048, Capacity: 2040}}, ce.Over)
	assert.Equal(t, before, s.Snapshot())

	r := quotaNode(t, s, "research")
	r.Quotas[0].Nominal = 840
	require.NoError(t, s.SetQueue(t0, r))
	require.NoError(t, s.RemoveNode(t0, "node-3-7-7"))
	snap := s.Snapshot()
	assert.Equal(t, 2040, snap.Fleet.HealthyGPUs)
	assert.Contains(t, snap.Fleet.Unhealthy, fleet.NodeHealth{Node: "node-3-7-7", Health: topology.Absent})
	r.Quotas[0].Nominal = 848
	require.ErrorIs(t, s.SetQueue(t0, r), fleet.ErrOverCapacity)
}

// A restore checks the snapshot's guarantees against the nodes in service
// as the snapshot has them: with node-3-7-7 removed, 848 GPUs for
// research over-promise the 2,040 left, though they fit the 2,048 of the
// configuration.
func TestRestoreRefusesGuaranteesAboveTheNodesInService(t *testing.T) {
	s := newRef(t)
	r := quotaNode(t, s, "research")
	r.Quotas[0].Nominal = 840
	require.NoError(t, s.SetQueue(t0, r))
	require.NoError(t, s.RemoveNode(t0, "node-3-7-7"))
	snap := s.Snapshot()
	_, err := fleet.Restore(fleet.ReferenceConfig(), snap)
	require.NoError(t, err)

	for i, n := range snap.Quota.Nodes {
		if n.Name == "research" {
			n.Quotas = slices.Clone(n.Quotas)
			n.Quotas[0].Nominal = 848
			snap.Quota.Nodes = slices.Clone(snap.Quota.Nodes)
			snap.Quota.Nodes[i] = n
		}
	}
	_, err = fleet.Restore(fleet.ReferenceConfig(), snap)
	require.ErrorIs(t, err, fleet.ErrOverCapacity)
}

func TestAbsentNodeTakesWorkOnceAdded(t *testing.T) {
	s, err := fleet.New(liveConfig())
	require.NoError(t, err)
	require.NoError(t, s.Submit(t0, job("a", "team", "service", 8)))
	require.NoError(t, s.Submit(t0, job("b", "notebooks", "notebook", 8)))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "node-0-0", d.Admit[0].Pods[0].Node)

	// Its GPUs count against guarantees once added: team may be
	// promised 16, and lends notebooks what it does not use.
	now := t0.Add(time.Minute)
	n := quotaNode(t, s, "team")
	n.Quotas[0].Nominal = 16
	require.ErrorIs(t, s.SetQueue(now, n), fleet.ErrOverCapacity)
	require.NoError(t, s.AddNode(now, "node-0-1"))
	require.NoError(t, s.SetQueue(now, n))
	d = s.Schedule(now)
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "b", d.Admit[0].ID)
	assert.Equal(t, "node-0-1", d.Admit[0].Pods[0].Node)
	assert.Equal(t, fleet.EventNodeAdded, d.Events[0].Kind)

	// Taking it out again waits for it to be empty, and for guarantees to fit.
	require.ErrorIs(t, s.RemoveNode(now, "node-0-1"), fleet.ErrNodeBusy)
	require.NoError(t, s.Exited(now, "b", gang.ExitFinished))
	require.ErrorIs(t, s.RemoveNode(now, "node-0-1"), fleet.ErrOverCapacity)
	n.Quotas[0].Nominal = 8
	require.NoError(t, s.SetQueue(now, n))
	require.NoError(t, s.RemoveNode(now, "node-0-1"))
	require.NoError(t, s.Submit(now, job("c", "notebooks", "notebook", 8)))
	assert.Empty(t, s.Schedule(now).Admit)
}

func TestRestoreKeepsLiveChanges(t *testing.T) {
	cfg := liveConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.AddNode(t0, "node-0-1"))
	n := quotaNode(t, s, "team")
	n.Quotas[0].Nominal = 16
	w := 3.0
	n.Weight = &w
	require.NoError(t, s.SetQueue(t0, n))
	require.NoError(t, s.Submit(t0, job("a", "team", "service", 8)))
	require.NoError(t, s.Submit(t0, job("nb", "notebooks", "notebook", 8)))
	require.Len(t, s.Schedule(t0).Admit, 2)
	require.NoError(t, s.ReportUsage(t0.Add(time.Minute), "nb", false))

	snap := s.Snapshot()
	r, err := fleet.Restore(cfg, snap)
	require.NoError(t, err)
	assert.Equal(t, snap, r.Snapshot())
	at := t0.Add(2*time.Hour + time.Minute)
	d := s.Schedule(at)
	assert.Equal(t, d, r.Schedule(at))
	require.Len(t, d.Drain, 1) // the idle notebook, in both
	assert.Equal(t, gang.DrainIdle, d.Drain[0].Reason)
}

// TestJournalReplaysLiveOperations records quota edits, node removals and
// additions and usage reports among submits and cycles (refused calls
// included): the replay gives the same decisions and the same state.
func TestJournalReplaysLiveOperations(t *testing.T) {
	cfg := liveConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	var journal, recorded bytes.Buffer
	j := fleet.NewJournal(s, &journal)
	enc := json.NewEncoder(&recorded)
	schedule := func(now time.Time) {
		require.NoError(t, enc.Encode(j.Schedule(now)))
	}
	team := quotaNode(t, s, "team")
	require.NoError(t, j.AddNode(t0, "node-0-1"))
	team.Quotas[0].Nominal = 16
	require.NoError(t, j.SetQueue(t0, team))
	require.NoError(t, j.Submit(t0, job("a", "team", "service", 8)))
	require.NoError(t, j.Submit(t0, job("nb", "notebooks", "notebook", 8)))
	schedule(t0)
	require.NoError(t, j.ReportUsage(t0.Add(time.Minute), "nb", false))
	require.NoError(t, j.ReportUsage(t0.Add(time.Minute), "a", true))
	require.Error(t, j.ReportUsage(t0.Add(time.Minute), "zz", false))
	team.Quotas[0].Nominal = 4
	require.NoError(t, j.SetQueue(t0.Add(2*time.Minute), team))
	team.Quotas[0].Nominal = 64
	require.Error(t, j.SetQueue(t0.Add(2*time.Minute), team))
	require.Error(t, j.RemoveNode(t0.Add(3*time.Minute), "node-0-1"))
	schedule(t0.Add(2*time.Hour + 2*time.Minute)) // nb drained: idle
	schedule(t0.Add(2*time.Hour + 4*time.Minute)) // nb killed
	require.NoError(t, j.Exited(t0.Add(2*time.Hour+5*time.Minute), "nb", gang.ExitKilled))
	require.NoError(t, j.RemoveNode(t0.Add(2*time.Hour+5*time.Minute), "node-0-1"))
	schedule(t0.Add(2*time.Hour + 6*time.Minute))

	var replayed bytes.Buffer
	enc2 := json.NewEncoder(&replayed)
	r, err := fleet.Replay(cfg, bytes.NewReader(journal.Bytes()), func(d fleet.Decisions) { require.NoError(t, enc2.Encode(d)) })
	require.NoError(t, err)
	assert.Equal(t, recorded.String(), replayed.String())
	assert.Equal(t, s.Snapshot(), r.Snapshot())
	assert.Contains(t, recorded.String(), `"Reason":"idle"`)
	assert.Contains(t, journal.String(), `"op":"set-queue"`)
	assert.Contains(t, journal.String(), `"op":"usage"`)
}
