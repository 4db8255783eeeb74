package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// twoLeafConfig is 2 leaves x 4 nodes x 8 GPUs and one queue that owns
// half of them.
func twoLeafConfig() fleet.Config {
	return fleet.Config{
		Topology: topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{2, 4}, GPUsPerNode: 8, Flavor: "H100"}),
		Quota: quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
			{Name: "team", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}}}}},
		Classes: []fleet.PriorityClass{{Name: "c", Value: 1}},
	}
}

// Booking A holds leaf 0 for [1 h, 3 h), B leaf 1 for [2 h, 4 h). At
// 3 h 30 a node of leaf 1 goes down and B moves to leaf 0, which A held
// in the past: the scheduler's own snapshot still restores (through JSON
// too), since bookings may share blocks at instants that are over.
func TestSnapshotAfterRelocateBookingRestores(t *testing.T) {
	cfg := twoLeafConfig()
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	book := func(id string, start time.Duration) calendar.Booking {
		_, err := s.Propose(t0, calendar.Request{ID: id, Queue: "team", Flavor: "H100", GPUs: 32, Level: "leaf",
			Start: t0.Add(start), Duration: 2 * time.Hour})
		require.NoError(t, err)
		b, err := s.Approve(t0, id, 0, "council")
		require.NoError(t, err)
		return b
	}
	a, b := book("A", time.Hour), book("B", 2*time.Hour)
	require.NotEqual(t, a.Domains, b.Domains)
	at := t0.Add(3*time.Hour + 30*time.Minute)
	s.Schedule(at)
	failed := node(1, 0)
	if a.Domains[0] == "leaf-1" || b.Domains[0] == "leaf-0" {
		failed = node(0, 0)
	}
	_, err = s.SetNodeHealth(at, failed, topology.Down)
	require.NoError(t, err)
	d := s.Schedule(at)
	require.Len(t, d.Broken, 1)
	require.Equal(t, calendar.Move, d.Broken[0].Remedy)
	moved, err := s.RelocateBooking(at, "B", "council")
	require.NoError(t, err)
	assert.Equal(t, a.Domains, moved.Domains, "B moves to the leaf A held")

	r, err := fleet.Restore(cfg, s.Snapshot())
	require.NoError(t, err)
	require.NoError(t, r.CheckInvariants())
	r, err = fleet.Restore(cfg, throughJSON(t, s.Snapshot()))
	require.NoError(t, err)
	assert.Equal(t, s.Snapshot().Calendar, r.Snapshot().Calendar)
	later := at.Add(time.Minute)
	assert.Equal(t, s.Schedule(later), r.Schedule(later))

	// An overlap still to come is refused.
	snap := s.Snapshot()
	snap.Calendar.Bookings[0].End = t0.Add(5 * time.Hour)
	_, err = fleet.Restore(cfg, snap)
	var ce *calendar.ConflictError
	assert.ErrorAs(t, err, &ce)
}
