package fleet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

func elasticBatch(id string, pods, minPods int) gang.Workload {
	return gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "workers", Count: pods, MinCount: minPods, GPUsPerPod: 8}},
		Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
}

func runningOf(s *fleet.Scheduler, id string) (fleet.RunningView, bool) {
	for _, r := range s.Snapshot().Running {
		if r.ID == id {
			return r, true
		}
	}
	return fleet.RunningView{}, false
}

// elasticFleet: inference runs 62 replicas (496 GPUs, lending up to 700),
// research fills its 848 GPUs, and an elastic batch job of 100 x 8 GPUs
// (minimum 10) takes what inference lends: 87 pods, the largest size its
// quota allows.
func elasticFleet(t *testing.T) (*fleet.Scheduler, time.Time) {
	t.Helper()
	return elasticFleetOf(t, elasticBatch("e", 100, 10))
}

// elasticFleetOf is elasticFleet with e as its elastic batch job.
func elasticFleetOf(t *testing.T, e gang.Workload) (*fleet.Scheduler, time.Time) {
	t.Helper()
	s := newRef(t)
	for i := range 62 {
		require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("inf-%02d", i), 8)))
	}
	own := training("own", 106, fleet.ClassReservedResearch, "research")
	own.Drain.Preemptible = false
	own.Topology = gang.TopologyRequest{}
	require.NoError(t, s.Submit(t0, own))
	require.NoError(t, s.Submit(t0, e))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 64)
	for _, a := range d.Admit {
		if a.ID == "e" {
			assert.Len(t, a.Pods, 87, "admitted at the largest size its borrowing allows")
		}
	}
	x, err := s.Explain("e")
	require.NoError(t, err)
	assert.Equal(t, []int{87}, x.Size)
	assert.Contains(t, x.Message, "workers 87 of 100 (min 10)")
	require.NoError(t, s.CheckInvariants())
	return s, t0.Add(time.Hour)
}

// A spike of inference replicas takes back GPUs from the elastic job pod
// by pod: each pod given up drains under the contract, the job runs on
// smaller, and the replicas start when the pods on their nodes are gone.
func TestElasticShrinksPodByPodBeforeEviction(t *testing.T) {
	s, now := elasticFleet(t)
	for i := range 4 {
		require.NoError(t, s.Submit(now, replica(fmt.Sprintf("spike-%d", i), 8)))
	}
	d := s.Schedule(now)
	require.Len(t, d.Admit, 1, "one replica fits on the free node")
	require.Len(t, d.Drain, 3, "three pods of e, not e whole")
	for _, dr := range d.Drain {
		assert.Equal(t, "e", dr.Of)
		assert.Equal(t, "workers", dr.Pod.PodSet)
		assert.Equal(t, 8, dr.Pod.GPUs)
		assert.Equal(t, gang.DrainReclaim, dr.Reason)
		assert.Equal(t, now.Add(120*time.Second), dr.Deadline)
		assert.Positive(t, dr.LostGPUSeconds)
	}
	e, ok := runningOf(s, "e")
	require.True(t, ok)
	assert.False(t, e.Draining)
	assert.Equal(t, 84*8, e.GPUs, "e is charged for the pods it keeps")
	require.NoError(t, s.CheckInvariants())

	// One pod lingers past its deadline: the kill names it.
	require.NoError(t, s.Exited(now.Add(30*time.Second), d.Drain[0].ID, gang.ExitDrained))
	require.NoError(t, s.Exited(now.Add(30*time.Second), d.Drain[1].ID, gang.ExitDrained))
	d2 := s.Schedule(now.Add(30 * time.Second))
	assert.Len(t, d2.Admit, 2, "the replicas on the exited pods' nodes start")
	d3 := s.Schedule(now.Add(3 * time.Minute))
	require.Len(t, d3.Kill, 1)
	assert.Equal(t, "e", d3.Kill[0].Of)
	assert.Equal(t, d.Drain[2].Pod, d3.Kill[0].Pod)
	require.NoError(t, s.Exited(now.Add(3*time.Minute), d.Drain[2].ID, gang.ExitKilled))
	d4 := s.Schedule(now.Add(3 * time.Minute))
	assert.Len(t, d4.Admit, 1)
	require.NoError(t, s.CheckInvariants())

	// The spike ends: e grows back to what its quota allows.
	later := now.Add(2 * time.Hour)
	for i := range 4 {
		require.NoError(t, s.Exited(later, fmt.Sprintf("spike-%d", i), gang.ExitFinished))
	}
	d5 := s.Schedule(later)
	require.Len(t, d5.Grow, 1)
	assert.Equal(t, "e", d5.Grow[0].ID)
	assert.Len(t, d5.Grow[0].Pods, 3)
	e, _ = runningOf(s, "e")
	assert.Equal(t, 87*8, e.GPUs)
	require.NoError(t, s.CheckInvariants())
	assert.Empty(t, s.Schedule(later.Add(time.Minute)).Grow, "nothing more to grow into")
}

// A restart in the middle of a shrink keeps the drains of the pods given
// up and the running size.
func TestElasticShrinkSurvivesRestore(t *testing.T) {
	s, now := elasticFleet(t)
	for i := range 4 {
		require.NoError(t, s.Submit(now, replica(fmt.Sprintf("spike-%d", i), 8)))
	}
	d := s.Schedule(now)
	require.Len(t, d.Drain, 3)
	r, err := fleet.Restore(fleet.ReferenceConfig(), s.Snapshot())
	require.NoError(t, err)
	require.NoError(t, r.CheckInvariants())
	x, err := r.Explain(d.Drain[0].ID)
	require.NoError(t, err)
	assert.Equal(t, "e", x.Split)
	assert.Equal(t, gang.Draining, x.State)
	later := now.Add(3 * time.Minute)
	a, b := s.Schedule(later), r.Schedule(later)
	assert.Equal(t, a.Kill, b.Kill)
	assert.Len(t, b.Kill, 3)
	ex, err := r.Explain("e")
	require.NoError(t, err)
	assert.Equal(t, []int{84}, ex.Size)
}

// A job that must keep every pod is evicted whole; an elastic one at its
// minimum likewise.
func TestElasticAtMinimumIsEvictedWhole(t *testing.T) {
	s, now := elasticFleet(t)
	for i := range 78 {
		require.NoError(t, s.Submit(now, replica(fmt.Sprintf("spike-%02d", i), 8)))
	}
	d := s.Schedule(now)
	shrunk, whole := 0, 0
	for _, dr := range d.Drain {
		if dr.Of == "e" {
			shrunk++
		} else if dr.ID == "e" {
			whole++
		}
	}
	assert.Equal(t, 77, shrunk, "e gives up pods down to its minimum of 10")
	assert.Zero(t, whole)
	require.NoError(t, s.CheckInvariants())
	for i := range 20 {
		require.NoError(t, s.Submit(now, replica(fmt.Sprintf("more-%02d", i), 8)))
	}
	d = s.Schedule(now.Add(time.Second))
	found := false
	for _, dr := range d.Drain {
		if dr.ID == "e" {
			found = true
			assert.Empty(t, dr.Of)
		}
	}
	assert.True(t, found, "at its minimum, e is evicted whole")
	require.NoError(t, s.CheckInvariants())
}

// A journal of an elastic run (admitted smaller, shrunk for a spike, pods
// drained and killed, waiting elastic work started smaller) replays byte
// for byte.
func TestElasticJournalReplays(t *testing.T) {
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	var journal, recorded, replayed bytes.Buffer
	j := fleet.NewJournal(s, &journal)
	enc := json.NewEncoder(&recorded)
	schedule := func(now time.Time) fleet.Decisions {
		d := j.Schedule(now)
		require.NoError(t, j.Err())
		require.NoError(t, enc.Encode(d))
		return d
	}
	for i := range 62 {
		require.NoError(t, j.Submit(t0, replica(fmt.Sprintf("inf-%02d", i), 8)))
	}
	own := training("own", 106, fleet.ClassReservedResearch, "research")
	own.Drain.Preemptible = false
	own.Topology = gang.TopologyRequest{}
	require.NoError(t, j.Submit(t0, own))
	require.NoError(t, j.Submit(t0, elasticBatch("e", 100, 10)))
	require.NoError(t, j.Submit(t0, elasticBatch("f", 40, 4)))
	schedule(t0)
	now := t0.Add(time.Hour)
	for i := range 30 {
		require.NoError(t, j.Submit(now, replica(fmt.Sprintf("spike-%02d", i), 8)))
	}
	d := schedule(now)
	require.NotEmpty(t, d.Drain)
	for k, x := range d.Drain {
		how := gang.ExitDrained
		if k%3 == 0 {
			continue // killed at the deadline below
		}
		require.NoError(t, j.Exited(now.Add(time.Minute), x.ID, how))
	}
	schedule(now.Add(time.Minute))
	for _, k := range schedule(now.Add(3 * time.Minute)).Kill {
		require.NoError(t, j.Exited(now.Add(3*time.Minute), k.ID, gang.ExitKilled))
	}
	schedule(now.Add(3 * time.Minute))
	for i := range 30 {
		_ = j.Exited(now.Add(2*time.Hour), fmt.Sprintf("spike-%02d", i), gang.ExitFinished)
	}
	// The room the spike gives back goes to f, which waited, at the size
	// the borrowed quota left (29 pods), before e may grow.
	end := schedule(now.Add(2 * time.Hour))
	require.Len(t, end.Admit, 1)
	assert.Equal(t, "f", end.Admit[0].ID)
	assert.Len(t, end.Admit[0].Pods, 29)
	assert.Empty(t, end.Grow)
	require.NoError(t, s.CheckInvariants())

	enc2 := json.NewEncoder(&replayed)
	_, err = fleet.Replay(fleet.ReferenceConfig(), bytes.NewReader(journal.Bytes()), func(d fleet.Decisions) {
		require.NoError(t, enc2.Encode(d))
	})
	require.NoError(t, err)
	assert.Equal(t, recorded.String(), replayed.String())
}

// An elastic job that gives up pods and then loses a node under a pod it
// keeps is rebuilt by adoption as it was: its lost pod keeps its quota,
// its pods given up drain on, and the next cycles decide as the scheduler
// that never stopped does.
func TestAdoptAnElasticJobThatLostANodeWhileShrinking(t *testing.T) {
	e := elasticBatch("e", 100, 10)
	e.Drain.SurvivesNodeLoss = true
	s, now := elasticFleetOf(t, e)
	for i := range 4 {
		require.NoError(t, s.Submit(now, replica(fmt.Sprintf("spike-%d", i), 8)))
	}
	require.Len(t, s.Schedule(now).Drain, 3, "three pods of e given up")
	kept, ok := runningOf(s, "e")
	require.True(t, ok)
	lost := kept.Pods[0].Node
	_, err := s.SetNodeHealth(now.Add(10*time.Second), lost, topology.Down)
	require.NoError(t, err)
	snap := s.Snapshot()
	view, _ := runningOf(s, "e")
	require.Len(t, view.Lost, 1, "e waits for a replacement of its pod on %s", lost)

	r, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	at := now.Add(10 * time.Second)
	for _, a := range snapshotAdoptions(snap) {
		require.NoError(t, r.Adopt(at, a), "adopting %s", a.Workload.ID)
	}
	_, err = r.SetNodeHealth(at, lost, topology.Down)
	require.NoError(t, err)
	require.NoError(t, r.CheckInvariants())
	adopted, _ := runningOf(r, "e")
	assert.Equal(t, view.GPUs, adopted.GPUs, "e is charged as before")
	assert.Equal(t, view.Lost, adopted.Lost)
	assert.Equal(t, s.Snapshot().Queues, r.Snapshot().Queues, "every queue's usage as before")
	for _, later := range []time.Duration{20 * time.Second, 3 * time.Minute, 10 * time.Minute} {
		a, b := s.Schedule(now.Add(later)), r.Schedule(now.Add(later))
		assert.Equal(t, a.Admit, b.Admit, "at +%s", later)
		assert.Equal(t, a.Drain, b.Drain, "at +%s", later)
		assert.Equal(t, a.Kill, b.Kill, "at +%s", later)
		require.NoError(t, r.CheckInvariants())
	}
}
