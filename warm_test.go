package fleet_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

func served(id string, gpus int, model string) gang.Workload {
	w := replica(id, gpus)
	w.Model = model
	return w
}

func batchJob(id string) gang.Workload {
	return gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "w", Count: 1, GPUsPerPod: 8}},
		Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
}

// An inference replica naming its model starts on a node the host
// reported warm for it, ahead of a tighter cold node; other replicas and
// other models are placed by best fit as before.
func TestWarmReplicaStartsOnAWarmNode(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.SetWarm(t0, "node-2-5-3", []string{"llama-70b", "llama-70b", "mistral-7b"}))
	require.Equal(t, []string{"llama-70b", "mistral-7b"}, s.Warm("node-2-5-3"))
	require.NoError(t, s.Submit(t0, replica("cold", 4)))
	require.NoError(t, s.Submit(t0, served("warm", 4, "llama-70b")))
	require.NoError(t, s.Submit(t0, served("other", 4, "qwen-72b")))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 3)
	at := map[string]string{}
	for _, a := range d.Admit {
		at[a.ID] = a.Pods[0].Node
	}
	require.Equal(t, "node-2-5-3", at["warm"])
	require.Equal(t, "node-0-0-0", at["cold"])
	require.Equal(t, "node-0-0-0", at["other"], "best fit: beside the first 4-GPU replica")
	require.NoError(t, s.CheckInvariants())
}

// SetWarm refuses an unknown node, an empty model name and time running
// backwards, and changes nothing when it does; an empty list clears.
func TestSetWarmRefusesBadInputWhole(t *testing.T) {
	s := newRef(t)
	require.NoError(t, s.SetWarm(t0, "node-0-0-1", []string{"a"}))
	before := s.Snapshot()
	cases := []struct {
		name   string
		node   string
		models []string
		now    time.Time
		err    error
	}{
		{"unknown node", "node-9", []string{"a"}, t0, fleet.ErrUnknownNode},
		{"empty model", "node-0-0-1", []string{"b", ""}, t0, fleet.ErrInvalid},
		{"time reversed", "node-0-0-1", []string{"b"}, t0.Add(-time.Second), fleet.ErrTimeReversed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.SetWarm(c.now, c.node, c.models)
			require.ErrorIs(t, err, c.err)
			var fe *fleet.Error
			require.ErrorAs(t, err, &fe)
			require.Equal(t, before, s.Snapshot())
		})
	}
	require.NoError(t, s.SetWarm(t0, "node-0-0-1", nil))
	require.Nil(t, s.Warm("node-0-0-1"))
	require.Empty(t, s.Snapshot().Warm)
}

// Warm nodes survive Snapshot and Restore, and a journal replays them:
// the restored scheduler and the replayed one place the next replica on
// the warm node too.
func TestWarmSurvivesRestoreAndReplay(t *testing.T) {
	s := newRef(t)
	var log bytes.Buffer
	j := fleet.NewJournal(s, &log)
	require.NoError(t, j.SetWarm(t0, "node-1-2-3", []string{"llama-70b"}))
	require.NoError(t, j.SetWarm(t0, "node-3-0-0", []string{"llama-70b", "qwen-72b"}))
	require.ErrorIs(t, j.SetWarm(t0, "nowhere", []string{"x"}), fleet.ErrUnknownNode)
	snap := s.Snapshot()
	require.Equal(t, []fleet.WarmNode{{Node: "node-1-2-3", Models: []string{"llama-70b"}},
		{Node: "node-3-0-0", Models: []string{"llama-70b", "qwen-72b"}}}, snap.Warm)

	r, err := fleet.Restore(fleet.ReferenceConfig(), snap)
	require.NoError(t, err)
	p, err := fleet.Replay(fleet.ReferenceConfig(), &log, nil)
	require.NoError(t, err)
	for name, x := range map[string]*fleet.Scheduler{"original": s, "restored": r, "replayed": p} {
		require.Equal(t, snap.Warm, x.Snapshot().Warm, name)
		require.NoError(t, x.Submit(t0, served("q", 8, "qwen-72b")), name)
		d := x.Schedule(t0)
		require.Len(t, d.Admit, 1, name)
		require.Equal(t, "node-3-0-0", d.Admit[0].Pods[0].Node, name)
	}

	bad := snap
	bad.Warm = []fleet.WarmNode{{Node: "nowhere", Models: []string{"x"}}}
	_, err = fleet.Restore(fleet.ReferenceConfig(), bad)
	require.ErrorIs(t, err, fleet.ErrUnknownNode)
}

// A spike's victim search frees a warm node for a replica naming its
// model, even when emptying a cold node would lose less work; never by
// evicting more important work.
func TestSpikeFreesAWarmNode(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			s := newRef(t)
			// Batch fills what it may borrow (193 nodes); inference
			// replicas, never victims of their own queue's spike, the rest.
			for i := range 193 {
				require.NoError(t, s.Submit(t0, batchJob(fmt.Sprintf("b%03d", i))))
			}
			for i := range 63 {
				require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("inf-%02d", i), 8)))
			}
			require.Equal(t, 256, len(s.Schedule(t0).Admit))
			now := t0.Add(time.Hour)
			const warmNode = "node-2-3-4"
			occupant := ""
			for _, r := range s.Snapshot().Running {
				if r.Nodes[0].Node == warmNode {
					require.Equal(t, "batch", r.Queue)
					occupant = r.ID
					continue // it never checkpointed: the costliest victim
				}
				require.NoError(t, s.Checkpointed(now, r.ID, now.Add(-time.Minute)))
			}
			require.NotEmpty(t, occupant)
			if warm {
				require.NoError(t, s.SetWarm(now, warmNode, []string{"llama-70b"}))
			}
			require.NoError(t, s.Submit(now, served("spike", 8, "llama-70b")))
			d := s.Schedule(now)
			require.Len(t, d.Drain, 1)
			if warm {
				require.Equal(t, occupant, d.Drain[0].ID, "the warm node's occupant is drained")
			} else {
				require.NotEqual(t, occupant, d.Drain[0].ID, "the cheapest victim is drained")
			}
			require.NoError(t, s.Exited(now.Add(time.Minute), d.Drain[0].ID, gang.ExitDrained))
			d = s.Schedule(now.Add(time.Minute))
			require.Len(t, d.Admit, 1)
			if warm {
				require.Equal(t, warmNode, d.Admit[0].Pods[0].Node)
			}
			require.NoError(t, s.CheckInvariants())
		})
	}
}

// A run of replicas of one model, searched together, frees warm nodes
// for all of them, and they start there.
func TestSpikeRunFreesWarmNodes(t *testing.T) {
	s := newRef(t)
	for i := range 193 {
		require.NoError(t, s.Submit(t0, batchJob(fmt.Sprintf("b%03d", i))))
	}
	for i := range 63 {
		require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("inf-%02d", i), 8)))
	}
	require.Equal(t, 256, len(s.Schedule(t0).Admit))
	now := t0.Add(time.Hour)
	warm := map[string]bool{"node-1-2-3": true, "node-2-6-1": true}
	occupants := map[string]bool{}
	for _, r := range s.Snapshot().Running {
		if warm[r.Nodes[0].Node] {
			occupants[r.ID] = true
			continue
		}
		require.NoError(t, s.Checkpointed(now, r.ID, now.Add(-time.Minute)))
	}
	require.Len(t, occupants, 2)
	for n := range warm {
		require.NoError(t, s.SetWarm(now, n, []string{"llama-70b"}))
	}
	require.NoError(t, s.Submit(now, served("spike-0", 8, "llama-70b")))
	require.NoError(t, s.Submit(now, served("spike-1", 8, "llama-70b")))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 2)
	for _, x := range d.Drain {
		require.True(t, occupants[x.ID], "%s drained", x.ID)
		require.NoError(t, s.Exited(now.Add(time.Minute), x.ID, gang.ExitDrained))
	}
	d = s.Schedule(now.Add(time.Minute))
	require.Len(t, d.Admit, 2)
	for _, a := range d.Admit {
		require.True(t, warm[a.Pods[0].Node], "%s on %s", a.ID, a.Pods[0].Node)
	}
	require.NoError(t, s.CheckInvariants())
}
