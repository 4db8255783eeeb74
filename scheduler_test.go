package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func newRef(t testing.TB) *fleet.Scheduler {
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	return s
}

func replica(id string, gpus int) gang.Workload {
	return gang.Workload{ID: id, Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: gpus}}}
}

func training(id string, nodes int, class, queue string) gang.Workload {
	return gang.Workload{ID: id, Queue: queue, PriorityClass: class, Shape: gang.Training,
		PodSets:  []gang.PodSet{{Name: "workers", Count: nodes, GPUsPerPod: 8}},
		Topology: gang.TopologyRequest{Required: "spine", Preferred: "leaf"},
		Drain:    gang.DrainContract{Preemptible: true, CheckpointInterval: 20 * time.Minute}}
}

func TestSubmitRefusesBadInputWhole(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.Submit(t0, replica("a", 1)))
	before := s.Snapshot()
	bad := map[string]struct {
		w   gang.Workload
		err error
	}{
		"duplicate":     {replica("a", 1), fleet.ErrDuplicate},
		"invalid":       {gang.Workload{ID: "x"}, fleet.ErrInvalid},
		"unknown queue": {func() gang.Workload { w := replica("b", 1); w.Queue = "nope"; return w }(), fleet.ErrUnknownQueue},
		"cohort":        {func() gang.Workload { w := replica("b", 1); w.Queue = "fleet"; return w }(), fleet.ErrUnknownQueue},
		"unknown class": {func() gang.Workload { w := replica("b", 1); w.PriorityClass = "gold"; return w }(), fleet.ErrUnknownClass},
		"too large":     {training("huge", 300, fleet.ClassReservedResearch, "research"), fleet.ErrNeverFits},
		"unknown level": {func() gang.Workload { w := replica("b", 1); w.Topology.Required = "rack"; return w }(), gang.ErrUnknownLevel},
		"bad flavor":    {func() gang.Workload { w := replica("b", 1); w.Flavor = "B200"; return w }(), fleet.ErrNeverFits},
	}
	for name, tt := range bad {
		err := s.Submit(t0, tt.w)
		assert.ErrorIs(t, err, tt.err, name)
		var fe *fleet.Error
		assert.ErrorAs(t, err, &fe, name)
	}
	assert.Equal(t, before, s.Snapshot())
	assert.ErrorIs(t, s.Submit(t0.Add(-time.Second), replica("c", 1)), fleet.ErrTimeReversed)
	_, err := s.Explain("nope")
	assert.ErrorIs(t, err, fleet.ErrUnknownID)
	assert.ErrorIs(t, s.Exited(t0, "a", gang.ExitFinished), fleet.ErrBadState)
	_, err = s.SetNodeHealth(t0, "node-9", topology.Down)
	assert.ErrorIs(t, err, fleet.ErrUnknownNode)
}

func TestManyAdmissionsPerCycle(t *testing.T) {
	s := newRef(t)
	for i := range 50 {
		require.NoError(t, s.Submit(t0, replica(string(rune('a'+i%26))+string(rune('a'+i/26)), 1+i%4)))
	}
	require.NoError(t, s.Submit(t0, training("pretrain", 64, fleet.ClassReservedResearch, "research")))
	d := s.Schedule(t0.Add(time.Second))
	assert.Len(t, d.Admit, 51, "every workload that fits is admitted in one cycle")
	assert.Equal(t, "pretrain", d.Admit[50].ID, "lower priority last")
	assert.Equal(t, "spine", d.Admit[50].Span)
	snap := s.Snapshot()
	assert.Equal(t, 0, len(snap.Pending))
	var inf fleet.QueueView
	for _, q := range snap.Queues {
		if q.Name == "prod-inference" {
			inf = q
		}
	}
	assert.EqualValues(t, 123, inf.Flavors[0].InUse)
}

func TestBorrowingAndExit(t *testing.T) {
	s := newRef(t)
	// Batch has no quota: it borrows what the others lend (700 of
	// inference's, all 848 of research's while they are idle).
	w := training("sweep", 64, fleet.ClassPreemptibleBatch, "batch")
	require.NoError(t, s.Submit(t0, w))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	assert.True(t, d.Admit[0].Borrowing)
	require.NoError(t, s.Exited(t0.Add(time.Hour), "sweep", gang.ExitFinished))
	snap := s.Snapshot()
	assert.Equal(t, 2048, snap.Fleet.FreeGPUs)
	d = s.Schedule(t0.Add(time.Hour))
	require.Len(t, d.Events, 1)
	assert.Equal(t, fleet.EventExited, d.Events[0].Kind)
	assert.Equal(t, time.Hour, d.Events[0].Runtime)
}

func TestGangDeadlockCannotHappen(t *testing.T) {
	// Two 1,024-GPU gangs on 1,536 free GPUs: one runs, the other waits
	// whole, and starts when the first ends.
	cfg := fleet.ReferenceConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	block := training("blocker", 64, fleet.ClassReservedResearch, "research")
	block.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Submit(t0, block))
	require.Len(t, s.Schedule(t0).Admit, 1)
	for _, id := range []string{"g1", "g2"} {
		w := training(id, 128, fleet.ClassPreemptibleBatch, "batch")
		w.Topology = gang.TopologyRequest{}
		w.Drain.Preemptible = false
		require.NoError(t, s.Submit(t0, w))
	}
	d := s.Schedule(t0.Add(time.Second))
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "g1", d.Admit[0].ID)
	x, err := s.Explain("g2")
	require.NoError(t, err)
	assert.Equal(t, gang.Pending, x.State)
	assert.Equal(t, 512, s.Snapshot().Fleet.FreeGPUs, "g2 holds nothing")
	require.NoError(t, s.Exited(t0.Add(time.Hour), "g1", gang.ExitFinished))
	d = s.Schedule(t0.Add(time.Hour))
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "g2", d.Admit[0].ID)
}

func TestNodeFailureFailsTheWholeGang(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.Submit(t0, training("job", 16, fleet.ClassReservedResearch, "research")))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	node := d.Admit[0].Pods[5].Node
	affected, err := s.SetNodeHealth(t0.Add(time.Minute), node, topology.Down)
	require.NoError(t, err)
	assert.Equal(t, []string{"job"}, affected)
	snap := s.Snapshot()
	assert.Equal(t, 2040, snap.Fleet.FreeGPUs, "every other node of the gang is free again")
	assert.Empty(t, snap.Running)
	_, err = s.SetNodeHealth(t0.Add(time.Hour), node, topology.Healthy)
	require.NoError(t, err)
	assert.Equal(t, 2048, s.Snapshot().Fleet.FreeGPUs)
}

func TestAdoptRebuildsState(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.Submit(t0, training("job", 2, fleet.ClassReservedResearch, "research")))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)

	// A restarted host adopts what runs.
	r := newRef(t)
	w := training("job", 2, fleet.ClassReservedResearch, "research")
	require.NoError(t, r.Adopt(t0.Add(time.Minute), fleet.Adoption{Workload: w, Started: t0, Pods: d.Admit[0].Pods}))
	a, b := s.Snapshot(), r.Snapshot()
	assert.Equal(t, a.Fleet, b.Fleet)
	assert.Equal(t, a.Queues, b.Queues)
	assert.ErrorIs(t, r.Adopt(t0.Add(time.Minute), fleet.Adoption{Workload: w, Started: t0, Pods: d.Admit[0].Pods}), fleet.ErrDuplicate)
	w.ID = "other"
	err := r.Adopt(t0.Add(time.Minute), fleet.Adoption{Workload: w, Started: t0, Pods: d.Admit[0].Pods})
	assert.Error(t, err, "nodes are full")
	assert.Equal(t, b, r.Snapshot())
}

// costByName makes one workload the cheapest victim whatever its state.
type costByName string

func (c costByName) Cost(r *preempt.Running, now time.Time) float64 {
	if r.W.ID == string(c) {
		return 1
	}
	return 1e9
}

func TestHostCostModelChoosesVictims(t *testing.T) {
	for _, cheap := range []string{"sweep-a", "sweep-c"} {
		cfg := fleet.ReferenceConfig()
		cfg.Policy.Cost = costByName(cheap)
		s, err := fleet.New(cfg)
		require.NoError(t, err)
		for i := range 64 {
			require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("inf-%d", i), 8)))
		}
		for _, id := range []string{"sweep-a", "sweep-b", "sweep-c"} {
			require.NoError(t, s.Submit(t0, training(id, 64, fleet.ClassPreemptibleBatch, "batch")))
		}
		require.Len(t, s.Schedule(t0).Admit, 67)
		require.NoError(t, s.Submit(t0.Add(time.Hour), replica("spike", 8)))
		d := s.Schedule(t0.Add(time.Hour))
		require.Len(t, d.Drain, 1)
		assert.Equal(t, cheap, d.Drain[0].ID)
		assert.Equal(t, []string{"spike"}, d.Drain[0].Beneficiaries)
		assert.Equal(t, t0.Add(time.Hour+fleet.DefaultGrace), d.Drain[0].Deadline)
	}
}

func TestExplainIsData(t *testing.T) {
	s := newRef(t)
	for sp := range 4 {
		_, err := s.SetNodeHealth(t0, fmt.Sprintf("node-%d-3-3", sp), topology.Down)
		require.NoError(t, err)
	}
	require.NoError(t, s.Submit(t0, training("big", 64, fleet.ClassReservedResearch, "research")))
	assert.Empty(t, s.Schedule(t0).Admit)
	x, err := s.Explain("big")
	require.NoError(t, err)
	assert.Equal(t, gang.Pending, x.State)
	require.NotNil(t, x.Quota)
	assert.True(t, x.Quota.Fits())
	require.NotNil(t, x.Placement)
	assert.Equal(t, placement.CauseFragmented, x.Placement.Cause)
	assert.Equal(t, 2016, x.Placement.FreeGPUs)
	assert.Contains(t, x.String(), "largest spine block 63 pods")

	// A gang larger than any spine can never run: refused at submission.
	err = s.Submit(t0, training("huge", 65, fleet.ClassReservedResearch, "research"))
	assert.ErrorIs(t, err, fleet.ErrNeverFits)
}

func TestStrictFIFOBlocksBehindItsHead(t *testing.T) {
	for _, strategy := range []quota.Strategy{quota.StrictFIFO, quota.BestEffortFIFO} {
		cfg := fleet.ReferenceConfig()
		cfg.Quota.Nodes[2].QueueingStrategy = strategy
		cfg.Policy.NoReservation = true // the queueing strategy alone decides here
		s, err := fleet.New(cfg)
		require.NoError(t, err)
		// Fill all but 8 nodes, then a 16-node head and a 1-node job behind it.
		require.NoError(t, s.Submit(t0, training("fill", 64, fleet.ClassReservedResearch, "batch")))
		for i := range 184 {
			require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("r%d", i), 8)))
		}
		s.Schedule(t0)
		require.NoError(t, s.Submit(t0, training("head", 16, fleet.ClassReservedResearch, "research")))
		small := training("small", 1, fleet.ClassReservedResearch, "research")
		require.NoError(t, s.Submit(t0.Add(time.Second), small))
		d := s.Schedule(t0.Add(time.Second))
		if strategy == quota.StrictFIFO {
			assert.Empty(t, d.Admit, "strict FIFO: small waits behind its head")
		} else {
			require.Len(t, d.Admit, 1, "best effort: small passes")
			assert.Equal(t, "small", d.Admit[0].ID)
		}
	}
}

func TestFairSharingOrdersByDominantShare(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	cfg.Policy.FairSharing = true
	// Two borrowing teams of equal priority under one cohort.
	cfg.Quota.Nodes = append(cfg.Quota.Nodes,
		quota.NodeSpec{Name: "team-a", Parent: "fleet", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}}},
		quota.NodeSpec{Name: "team-b", Parent: "fleet", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}}})
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	// team-a already borrows 512 GPUs; team-b borrows nothing.
	require.NoError(t, s.Submit(t0, training("a0", 64, fleet.ClassPreemptibleBatch, "team-a")))
	require.Len(t, s.Schedule(t0).Admit, 1)
	// Both submit; team-a first. Only one 64-node gang still fits in quota.
	require.NoError(t, s.Submit(t0.Add(time.Second), training("a1", 64, fleet.ClassPreemptibleBatch, "team-a")))
	require.NoError(t, s.Submit(t0.Add(2*time.Second), training("b1", 64, fleet.ClassPreemptibleBatch, "team-b")))
	require.NoError(t, s.Submit(t0.Add(3*time.Second), training("x", 64, fleet.ClassPreemptibleBatch, "batch")))
	d := s.Schedule(t0.Add(3 * time.Second))
	require.NotEmpty(t, d.Admit)
	assert.Equal(t, "b1", d.Admit[0].ID, "the team with the lower dominant share goes first")
}

// smallestFirst is a host's own queue order: fewest GPUs first.
type smallestFirst struct{}

func (smallestFirst) Compare(a, b *fleet.Pending) int { return a.W.GPUs() - b.W.GPUs() }

func TestHostQueueOrder(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	cfg.Policy.Order = smallestFirst{}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Submit(t0, training("big", 64, fleet.ClassReservedResearch, "research")))
	require.NoError(t, s.Submit(t0, replica("small", 1)))
	require.NoError(t, s.Submit(t0, training("mid", 2, fleet.ClassPreemptibleBatch, "batch")))
	d := s.Schedule(t0)
	var ids []string
	for _, a := range d.Admit {
		ids = append(ids, a.ID)
	}
	assert.Equal(t, []string{"small", "mid", "big"}, ids)
}

// New refuses guarantees the fleet cannot hold and a quota flavor the
// topology spells otherwise, naming both spellings.
func TestNewRefusesFlavorsTheFleetCannotServe(t *testing.T) {
	over := fleet.ReferenceConfig()
	over.Quota.Nodes[1].Quotas[0].Nominal = 2000
	_, err := fleet.New(over)
	require.ErrorIs(t, err, fleet.ErrInvalidConfig)
	require.ErrorIs(t, err, quota.ErrOverPromised)

	spelled := fleet.ReferenceConfig()
	spelled.Quota.Flavors = []string{"h100"}
	for i := range spelled.Quota.Nodes {
		for j := range spelled.Quota.Nodes[i].Quotas {
			spelled.Quota.Nodes[i].Quotas[j].Flavor = "h100"
		}
	}
	_, err = fleet.New(spelled)
	require.ErrorIs(t, err, fleet.ErrInvalidConfig)
	assert.ErrorContains(t, err, `"h100"`)
	assert.ErrorContains(t, err, `"H100"`)
}

// A host that lowered a quota and then restarted adopts what still runs
// beyond the queue's new reach (it runs; reclaim may take it back), while
// the same work submitted anew is refused as never fitting.
func TestAdoptTakesRunningWorkBeyondItsQueuesReach(t *testing.T) {
	s, err := fleet.New(smallConfig())
	require.NoError(t, err)
	w := training("sweep", 6, fleet.ClassPreemptibleBatch, "batch")
	w.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Submit(t0, w))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	research := s.Quota().Nodes[2]
	require.Equal(t, "research", research.Name)
	research.Quotas[0].Nominal = 16
	require.NoError(t, s.SetQueue(t0, research))

	cfg := smallConfig()
	cfg.Quota = s.Quota()
	r, err := fleet.New(cfg)
	require.NoError(t, err)
	fresh := w
	fresh.ID = "sweep-2"
	require.ErrorIs(t, r.Submit(t0, fresh), fleet.ErrNeverFits)
	require.NoError(t, r.Adopt(t0.Add(time.Minute), fleet.Adoption{Workload: w, Started: t0, Pods: d.Admit[0].Pods}))
	assert.Equal(t, 48, r.Snapshot().Fleet.AllocatedGPUs)
}
