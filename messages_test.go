package fleet_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Each refusal says what happened and what to do, once: the text is
// pinned here, beside the sentinel errors.Is finds.
func TestMessagesSayWhatToDo(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := t0.Add(48 * time.Hour)
	spine := func(id string, gpus, blocks int) calendar.Request {
		return calendar.Request{ID: id, Queue: "research", Flavor: "H100", GPUs: gpus, Level: "spine", Blocks: blocks,
			Start: start, Duration: 24 * time.Hour}
	}
	propose := func(t *testing.T, s *fleet.Scheduler, req calendar.Request) {
		t.Helper()
		_, err := s.Propose(t0, req)
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		name string
		call func(t *testing.T, s *fleet.Scheduler) error
		is   error
		want string
	}{
		{"an admitted workload ended drained", func(t *testing.T, s *fleet.Scheduler) error {
			require.NoError(t, s.Submit(t0, training("a", 1, fleet.ClassReservedResearch, "research")))
			require.Len(t, s.Schedule(t0).Admit, 1)
			return s.Exited(t0, "a", gang.ExitDrained)
		}, fleet.ErrBadState, `fleet: call not allowed in the workload's state: exited "a": workload is admitted: it cannot end ` +
			`drained (no drain was asked of it); report how it ended: finished, failed, killed, cancelled, node-lost`},
		{"one block too small for the GPUs", func(t *testing.T, s *fleet.Scheduler) error {
			_, err := s.Propose(t0, spine("C", 1024, 1))
			return err
		}, calendar.ErrTooLarge, `calendar: request too large: propose "C": 1 spine block(s) hold at most 512 GPUs of H100 ` +
			`(512 each): ask for 2 blocks (Blocks: 2), or Blocks: 0 for as few as hold them`},
		{"approved twice", func(t *testing.T, s *fleet.Scheduler) error {
			propose(t, s, spine("C", 512, 1))
			_, err := s.Approve(t0, "C", 0, "alice")
			require.NoError(t, err)
			_, err = s.Approve(t0.Add(time.Minute), "C", 0, "bob")
			return err
		}, calendar.ErrUnknownProposal, `calendar: unknown proposal: approve "C": it was approved 2026-01-01T00:00:00Z by alice ` +
			`and is booked: nothing to approve; propose under a new ID for another booking`},
		{"approved after a cancel", func(t *testing.T, s *fleet.Scheduler) error {
			propose(t, s, spine("C", 512, 1))
			_, err := s.Approve(t0, "C", 0, "alice")
			require.NoError(t, err)
			require.NoError(t, s.CancelBooking(t0.Add(time.Minute), "C", "bob", "plans changed"))
			_, err = s.Approve(t0.Add(2*time.Minute), "C", 0, "alice")
			return err
		}, calendar.ErrUnknownProposal, `calendar: unknown proposal: approve "C": its booking was cancelled ` +
			`2026-01-01T00:01:00Z by bob: propose it again to book it anew`},
		{"approved after a reject", func(t *testing.T, s *fleet.Scheduler) error {
			propose(t, s, spine("C", 512, 1))
			require.NoError(t, s.Reject(t0, "C", "bob", "no"))
			_, err := s.Approve(t0, "C", 0, "alice")
			return err
		}, calendar.ErrUnknownProposal, `calendar: unknown proposal: approve "C": it was rejected 2026-01-01T00:00:00Z by bob: ` +
			`propose it again to decide anew`},
		{"approved, never proposed", func(t *testing.T, s *fleet.Scheduler) error {
			_, err := s.Approve(t0, "C", 0, "alice")
			return err
		}, calendar.ErrUnknownProposal, `calendar: unknown proposal: approve "C": nothing is proposed under this ID (or its start passed): propose it first`},
		{"over-commit", func(t *testing.T, s *fleet.Scheduler) error {
			propose(t, s, spine("C", 1024, 2))
			_, err := s.Approve(t0, "C", 0, "alice")
			return err
		}, calendar.ErrOverCommitted, `calendar: guarantees plus bookings exceed capacity: H100 commits 2224 of 2048 GPUs at ` +
			`2026-01-03T00:00:00Z (queue "research"), 176 over: book 176 fewer GPUs, pick a window clear of other bookings, ` +
			`or raise research's nominal quota by as much and lower another queue's (SetQueue): approve: booking "C"`},
		{"cancel of an unknown booking", func(t *testing.T, s *fleet.Scheduler) error {
			return s.CancelBooking(t0, "C", "bob", "")
		}, calendar.ErrUnknownBooking, `calendar: unknown booking: cancel "C"`},
		{"restore from a zero snapshot", func(t *testing.T, s *fleet.Scheduler) error {
			_, err := fleet.Restore(fleet.ReferenceConfig(), fleet.Snapshot{})
			return err
		}, fleet.ErrInvalid, `fleet: invalid workload: restore: empty snapshot (no fleet, no quota): pass what ` +
			`Scheduler.Snapshot returned, or call New for a fresh scheduler`},
		{"restore with a changed quota config", func(t *testing.T, s *fleet.Scheduler) error {
			cfg := fleet.ReferenceConfig()
			cfg.Quota.Nodes[2].Quotas[0].Nominal = 800
			_, err := fleet.Restore(cfg, s.Snapshot())
			return err
		}, fleet.ErrInvalidConfig, `fleet: invalid config: restore: the Config's quota differs from the one the snapshot was ` +
			`taken under (node "research" edited), and the snapshot's quota in force would override it: Restore with the ` +
			`earlier Config, then apply the change with SetQueue`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(t, newRef(t))
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// A config refused by New says what is wrong with it, once, and what
// to set.
func TestConfigMessagesSayWhatToSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(cfg *fleet.Config)
		is   error
		want string
	}{
		{"a quota node without a kind", func(cfg *fleet.Config) { cfg.Quota.Nodes[1].Kind = 0 }, quota.ErrInvalidKind,
			`fleet: invalid config: quota: invalid node kind: node "prod-inference", field kind, missing: want "cohort" ` +
				`(quota.Cohort) or "queue" (quota.Queue): new`},
		{"nodes without a flavor", func(cfg *fleet.Config) {
			for i := range cfg.Topology.Nodes {
				cfg.Topology.Nodes[i].Flavor = ""
			}
		}, quota.ErrOverPromised, `fleet: invalid config: quota: guarantees exceed fleet capacity: H100 guarantees 2048 GPUs, ` +
			`fleet has 0 (no node in service has flavor H100: set the nodes' Flavor, topology.NodeSpec.Flavor or UniformSpec.Flavor): new`},
		{"a fanout without the node level", func(cfg *fleet.Config) {
			cfg.Topology = topology.Uniform(topology.UniformSpec{Levels: []string{"spine", "leaf", "node"}, Fanout: []int{4, 8},
				GPUsPerNode: 8, Flavor: "H100"})
		}, topology.ErrEmptyFleet, `fleet: invalid config: topology: empty fleet: Spec.Nodes is empty: declare at least one ` +
			`node (Uniform builds none unless Fanout has one positive entry per level, the node level included): new`},
		{"an unknown parent", func(cfg *fleet.Config) {
			cfg.Quota.Nodes = append(cfg.Quota.Nodes, quota.NodeSpec{Name: "x", Parent: "nope", Kind: quota.Queue})
		}, quota.ErrUnknownParent, `fleet: invalid config: quota: unknown parent: node "x", field parent, parent "nope": new`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fleet.ReferenceConfig()
			tc.edit(&cfg)
			_, err := fleet.New(cfg)
			require.Error(t, err)
			assert.ErrorIs(t, err, fleet.ErrInvalidConfig)
			assert.ErrorIs(t, err, tc.is)
			assert.Equal(t, tc.want, err.Error())
			for _, part := range []string{": quota: ", ": topology: "} {
				assert.LessOrEqual(t, strings.Count(err.Error(), part), 1, "said twice: %s", err)
			}
			assert.False(t, strings.HasSuffix(err.Error(), ": quota") || strings.HasSuffix(err.Error(), ": topology"),
				"a repeated suffix: %s", err)
		})
	}
}

// A large gang's line names its lowest and highest node, in name order
// with numbers by value, whatever order the pods were placed in.
func TestAdmitLineNamesNodesInOrder(t *testing.T) {
	var pods []fleet.PodAssignment
	for _, n := range []string{"node-1-0-0", "node-0-0-10", "node-0-0-9", "node-0-0-2", "node-0-1-0", "node-0-0-3",
		"node-0-0-4", "node-0-0-5", "node-0-0-6"} {
		pods = append(pods, fleet.PodAssignment{PodSet: "w", Index: len(pods), Node: n, GPUs: 8})
	}
	d := fleet.Decisions{Admit: []fleet.Admission{{ID: "big", Queue: "research", Span: "spine", Pods: pods}}}
	assert.Contains(t, d.String(), fmt.Sprintf("%d GPUs on 9 nodes node-0-0-2..node-1-0-0", 8*9))

	// Where one name has a digit and the other a letter, they compare as
	// characters: digits before letters.
	pods = pods[:0]
	for _, n := range []string{"rack-10", "rack-a", "rack-b", "rack-c", "rack-d", "rack-e", "rack-f", "rack-g", "rack-h"} {
		pods = append(pods, fleet.PodAssignment{PodSet: "w", Index: len(pods), Node: n, GPUs: 8})
	}
	d = fleet.Decisions{Admit: []fleet.Admission{{ID: "big", Queue: "research", Span: "spine", Pods: pods}}}
	assert.Contains(t, d.String(), fmt.Sprintf("%d GPUs on 9 nodes rack-10..rack-h", 8*9))
}
