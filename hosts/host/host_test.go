package host_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/hosts/host"
	"github.com/fleetsched/fleet/topology"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// small is a scheduler on one leaf of 4 nodes x 8 GPUs, the reference
// quotas scaled to it.
func small(t *testing.T) *fleet.Scheduler {
	t.Helper()
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{1, 4}, GPUsPerNode: 8, Flavor: "H100"})
	s, err := fleet.New(fleet.ReferenceConfigFor(spec))
	require.NoError(t, err)
	return s
}

func batch(id string, nodes int) gang.Workload {
	return gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "w", Count: nodes, GPUsPerPod: 8}},
		Drain:   gang.DrainContract{Preemptible: true}}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestSentence(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"quota: queue \"a\" is full; as of the cycle at 00:00:00", "quota: queue \"a\" is full"},
		{"w: as of the cycle at 00:00:00", "w"},
		{"no cycle time here", "no cycle time here"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, host.Sentence(fleet.Explanation{Message: tc.msg}), "%q", tc.msg)
	}
}

// Waiting says nothing of an unknown workload or one no cycle has
// considered, and the reason without the cycle's time once one has.
func TestWaiting(t *testing.T) {
	s := small(t)
	_, ok := host.Waiting(s, "nobody")
	assert.False(t, ok, "unknown")
	require.NoError(t, s.Submit(t0, batch("first", 3)))
	require.NoError(t, s.Submit(t0, batch("big", 3)))
	_, ok = host.Waiting(s, "big")
	assert.False(t, ok, "no cycle yet")
	s.Schedule(t0)
	msg, ok := host.Waiting(s, "big")
	require.True(t, ok)
	x, err := s.Explain("big")
	require.NoError(t, err)
	assert.NotContains(t, msg, "as of the cycle at")
	assert.Equal(t, host.Sentence(x), msg)
	assert.NotEmpty(t, msg)
}

func TestDrainRecordAdopted(t *testing.T) {
	live := func(id string) bool { return id != "gone" }
	for _, tc := range []struct {
		name         string
		rec          host.DrainRecord
		wantLive     []string
		wantDeadline time.Time
	}{
		{"beneficiaries that ended are not live",
			host.DrainRecord{Since: t0, Deadline: t0.Add(time.Minute), Reason: gang.DrainReclaim,
				Beneficiaries: []string{"a", "gone", "b"}},
			[]string{"a", "b"}, t0.Add(time.Minute)},
		{"a deadline not after the start moves one nanosecond past it",
			host.DrainRecord{Since: t0, Deadline: t0, Reason: gang.DrainInQueue, Beneficiaries: []string{"gone"}},
			nil, t0.Add(time.Nanosecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.rec.Adopted(live)
			assert.Equal(t, tc.wantLive, d.Live)
			assert.Equal(t, tc.wantDeadline, d.Deadline)
			assert.Equal(t, tc.rec.Since, d.Since)
			assert.Equal(t, tc.rec.Reason, d.Reason)
			assert.Equal(t, tc.rec.Beneficiaries, d.Beneficiaries)
			assert.Equal(t, tc.rec.KillAsked, d.KillAsked)
		})
	}
}

// A nomination the fleet cannot hold is dropped and the workload
// adopted pending without it; one it can hold is kept.
func TestAdopt(t *testing.T) {
	pod := func(i int, node string) fleet.PodAssignment {
		return fleet.PodAssignment{PodSet: "w", Index: i, Node: node, GPUs: 8}
	}
	for _, tc := range []struct {
		name        string
		nominated   []fleet.PodAssignment
		wantDropped bool
		wantNom     bool
	}{
		{"none", nil, false, false},
		{"on nodes of the fleet", []fleet.PodAssignment{pod(0, "node-0-0")}, false, true},
		{"on a node gone", []fleet.PodAssignment{pod(0, "no-such-node")}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := small(t)
			a := fleet.Adoption{Workload: batch("w", 1), Submitted: t0, Nominated: tc.nominated,
				NominatedReadyBy: t0}
			dropped, err := host.Adopt(s, t0, a)
			require.NoError(t, err)
			assert.Equal(t, tc.wantDropped, dropped != nil, "dropped: %v", dropped)
			snap := s.Snapshot()
			require.Len(t, snap.Pending, 1)
			assert.Equal(t, tc.wantNom, snap.Pending[0].Nomination != nil)
		})
	}
	// A refusal that is not the nomination's is the error.
	s := small(t)
	_, err := host.Adopt(s, t0, fleet.Adoption{Workload: gang.Workload{ID: "bad"}, Submitted: t0})
	assert.Error(t, err)
}

// SyncHealth reports changes in node order, records what it reported,
// leaves nodes it does not know alone, and lists the workloads ended.
func TestSyncHealth(t *testing.T) {
	s := small(t)
	require.NoError(t, s.Submit(t0, batch("on-0", 1)))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	node := d.Admit[0].Pods[0].Node
	known := map[string]topology.Health{}
	for i := range 4 {
		known["node-0-"+string(rune('0'+i))] = topology.Healthy
	}
	require.Contains(t, known, node)
	other := "node-0-3"
	if node == other {
		other = "node-0-2"
	}
	health := map[string]topology.Health{node: topology.Down, other: topology.Cordoned, "new-node": topology.Down}
	for n, h := range known {
		if _, ok := health[n]; !ok {
			health[n] = h
		}
	}
	changes := host.SyncHealth(s, t0, known, health, quiet())
	require.Len(t, changes, 2)
	want := []host.HealthChange{{Node: node, Health: topology.Down, Ended: []string{"on-0"}},
		{Node: other, Health: topology.Cordoned}}
	if other < node {
		want[0], want[1] = want[1], want[0]
	}
	assert.Equal(t, want, changes)
	assert.Equal(t, topology.Down, known[node])
	assert.Equal(t, topology.Cordoned, known[other])
	assert.NotContains(t, known, "new-node", "a node the host does not know is left to a rebuild")
	assert.Empty(t, host.SyncHealth(s, t0, known, health, quiet()), "nothing changed since")
}

func TestNodes(t *testing.T) {
	pods := []fleet.PodAssignment{{Index: 2, Node: "c"}, {Index: 0, Node: "a"}, {Index: 5, Node: "beyond"}}
	assert.Equal(t, []string{"a", "", "c"}, host.Nodes(pods, 3))
	assert.Equal(t, []string{}, host.Nodes(nil, 0))
}

func TestForEach(t *testing.T) {
	for _, tc := range []struct{ workers, n int }{{0, 5}, {1, 5}, {3, 10}, {8, 2}, {4, 0}} {
		var calls [10]atomic.Int32
		var running, most atomic.Int32
		var mu sync.Mutex
		host.ForEach(tc.workers, tc.n, func(i int) {
			r := running.Add(1)
			mu.Lock()
			if r > most.Load() {
				most.Store(r)
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
			calls[i].Add(1)
			running.Add(-1)
		})
		for i := range tc.n {
			assert.Equal(t, int32(1), calls[i].Load(), "workers=%d n=%d: f(%d) once", tc.workers, tc.n, i)
		}
		assert.LessOrEqual(t, int(most.Load()), max(tc.workers, 1), "workers=%d n=%d", tc.workers, tc.n)
	}
}

// Every calls at once, then every period, and returns when ctx ends.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan error)
	go func() {
		done <- host.Every(ctx, 10*time.Millisecond, func() {
			if n.Add(1) == 3 {
				cancel()
			}
		})
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	assert.Equal(t, int32(3), n.Load())
}

func TestShiftedClock(t *testing.T) {
	var c host.ShiftedClock
	before := time.Now()
	c.Advance(time.Hour)
	got := c.Now()
	assert.False(t, got.Before(before.Add(time.Hour)))
	assert.True(t, got.Before(time.Now().Add(time.Hour+time.Minute)))
	var _ host.Clock = &c
	var _ host.Clock = host.WallClock{}
}
