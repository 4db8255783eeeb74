package fleet_test

import (
	"bytes"
	"errors"
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

// Bad defragmentation requests are refused with a typed error, and the
// scheduler is left as it was.
func TestDefragRefusesBadRequestsWhole(t *testing.T) {
	s := scattered(t, 0)
	now := t0.Add(time.Hour)
	s.Schedule(now)
	plan, err := s.PlanDefrag(now, "leaf", "H100", 0, 1000)
	require.NoError(t, err)
	require.NotEmpty(t, plan.Moves)
	elsewhere := plan
	elsewhere.Moves = append([]fleet.Move(nil), plan.Moves...)
	elsewhere.Moves[0].To = []fleet.NodeGPUs{{Node: "node-3-7-7", GPUs: 2}}
	for _, tt := range []struct {
		name string
		call func() error
		want []error
	}{
		{"unknown level", func() error { _, err := s.PlanDefrag(now, "rack", "H100", 0, 1000); return err }, []error{fleet.ErrInvalid, topology.ErrUnknownLevel}},
		{"the fleet level", func() error { _, err := s.PlanDefrag(now, "fleet", "H100", 0, 1000); return err }, []error{fleet.ErrInvalid}},
		{"the node level", func() error { _, err := s.PlanDefrag(now, "node", "H100", 8, 1000); return err }, []error{fleet.ErrInvalid}},
		{"unknown flavor", func() error { _, err := s.PlanDefrag(now, "spine", "B200", 0, 1000); return err }, []error{fleet.ErrInvalid}},
		{"GPUs below zero", func() error { _, err := s.PlanDefrag(now, "spine", "H100", -1, 1000); return err }, []error{fleet.ErrInvalid}},
		{"more GPUs than a domain", func() error { _, err := s.PlanDefrag(now, "leaf", "H100", 65, 1000); return err }, []error{fleet.ErrNeverFits}},
		{"only higher-priority work", func() error { _, err := s.PlanDefrag(now, "leaf", "H100", 0, 0); return err }, []error{fleet.ErrNeverFits}},
		{"time reversed", func() error { _, err := s.PlanDefrag(t0, "leaf", "H100", 0, 1000); return err }, []error{fleet.ErrTimeReversed}},
		{"a move PlanDefrag did not make", func() error { _, err := s.Defragment(now, elsewhere); return err }, []error{fleet.ErrInvalid}},
		{"a move listed twice", func() error {
			p := plan
			p.Moves = append(append([]fleet.Move(nil), plan.Moves...), plan.Moves[0])
			_, err := s.Defragment(now, p)
			return err
		}, []error{fleet.ErrInvalid}},
		{"a move of unknown work", func() error {
			p := plan
			p.Moves = []fleet.Move{{ID: "nobody"}}
			_, err := s.Defragment(now, p)
			return err
		}, []error{fleet.ErrBadState}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Snapshot()
			err := tt.call()
			require.Error(t, err)
			var fe *fleet.Error
			assert.True(t, errors.As(err, &fe), "a *fleet.Error: %v", err)
			for _, w := range tt.want {
				assert.ErrorIs(t, err, w)
			}
			assert.Equal(t, before, s.Snapshot(), "state unchanged")
		})
	}
}

// A plan that moves a workload twice is refused whole, before any mover
// drains: the journal writes no line for it, and a replay of the journal
// gives the state the scheduler has.
func TestDefragmentWithAMoveListedTwiceIsRefusedWhole(t *testing.T) {
	s := scattered(t, 0)
	now := t0.Add(time.Hour)
	plan, err := s.PlanDefrag(now, "spine", "H100", 0, 1000)
	require.NoError(t, err)
	require.NotEmpty(t, plan.Moves)
	plan.Moves = append(plan.Moves, plan.Moves[0])
	var log bytes.Buffer
	j := fleet.NewJournal(s, &log)
	before := s.Snapshot()
	_, err = j.Defragment(now, plan)
	assert.ErrorIs(t, err, fleet.ErrInvalid)
	assert.ErrorContains(t, err, plan.Moves[0].ID)
	assert.Equal(t, before, s.Snapshot(), "no mover drains")
	assert.Empty(t, log.String(), "no journal line")
}

// A negative defragmentation budget or hot-swap wait is a bad config.
func TestNewRefusesNegativeDefragAndHotSwapPolicy(t *testing.T) {
	for name, set := range map[string]func(*fleet.Config){
		"defrag budget below zero": func(c *fleet.Config) { c.Policy.DefragBudget = -1 },
		"hot-swap wait below zero": func(c *fleet.Config) { c.Policy.HotSwapWait = -time.Second },
	} {
		cfg := fleet.ReferenceConfig()
		set(&cfg)
		_, err := fleet.New(cfg)
		assert.ErrorIs(t, err, fleet.ErrInvalidConfig, name)
	}
}

// Rank groups larger than their pod set, or not dividing it, are refused
// at submission and adoption, with the state unchanged.
func TestSubmitRefusesBadRankGroupsWhole(t *testing.T) {
	s := newRef(t)
	before := s.Snapshot()
	for _, tt := range []struct {
		name   string
		groups []gang.RankGroup
	}{
		{"larger than the pod set", []gang.RankGroup{{Size: 16, Level: "leaf"}}},
		{"not dividing the pod set", []gang.RankGroup{{Size: 3, Level: "leaf"}}},
		{"not dividing the next", []gang.RankGroup{{Size: 2, Level: "leaf"}, {Size: 3, Level: "spine"}}},
		{"unknown level", []gang.RankGroup{{Size: 4, Level: "rack"}}},
	} {
		w := training("ranked", 8, fleet.ClassReservedResearch, "research")
		w.PodSets[0].RankGroups = tt.groups
		err := s.Submit(t0, w)
		assert.ErrorIs(t, err, fleet.ErrInvalid, tt.name)
		if tt.name != "unknown level" {
			assert.ErrorIs(t, err, gang.ErrBadRankGroup, tt.name)
		}
		var pods []fleet.PodAssignment
		for i := range 8 {
			pods = append(pods, fleet.PodAssignment{PodSet: "workers", Index: i, Node: fmt.Sprintf("node-0-0-%d", i), GPUs: 8})
		}
		assert.Error(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods}), tt.name)
		assert.Equal(t, before, s.Snapshot(), tt.name)
	}
}

// A snapshot that shows pods lost under a workload that did not declare
// it survives the loss of a node (a hot-swap it never asked for) is
// refused whole.
func TestRestoreRefusesAHotSwapTheWorkloadDidNotDeclare(t *testing.T) {
	batch := gang.Workload{ID: "filler", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}
	s := swapLeaf(t, batch)
	_, err := s.SetNodeHealth(t0.Add(time.Hour), "node-0-0-3", topology.Down)
	require.NoError(t, err)
	snap := s.Snapshot()
	_, err = fleet.Restore(fleet.ReferenceConfig(), snap)
	require.NoError(t, err, "the gang declared it")
	i := slices.IndexFunc(snap.Running, func(r fleet.RunningView) bool { return r.ID == "gang" })
	require.NotEmpty(t, snap.Running[i].Lost)
	snap.Running[i].Spec.Drain.SurvivesNodeLoss = false
	_, err = fleet.Restore(fleet.ReferenceConfig(), snap)
	assert.ErrorIs(t, err, fleet.ErrInvalid)
	assert.ErrorContains(t, err, "did not declare it survives the loss of a node")
}
