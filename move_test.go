package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// A carried-out plan reserves every mover's new place: a mover that has
// drained restarts there in the next cycle, one that finished gives it
// back, and a restart in between keeps the reservation.
func TestDefragmentReservesEachMoversNewPlace(t *testing.T) {
	s := scattered(t, 0)
	now := t0.Add(time.Hour)
	plan, err := s.PlanDefrag(now, "spine", "H100", 0, 1000)
	require.NoError(t, err)
	drains, err := s.Defragment(now, plan)
	require.NoError(t, err)
	require.Len(t, drains, 8)
	for i, d := range drains {
		assert.Equal(t, plan.Moves[i].To, d.MoveTo, d.ID)
	}
	require.NoError(t, s.CheckInvariants())
	free := s.Snapshot().Fleet.FreeGPUs

	// A restart while they drain keeps the reservations.
	r, err := fleet.Restore(fleet.ReferenceConfig(), s.Snapshot())
	require.NoError(t, err)
	require.NoError(t, r.CheckInvariants())
	assert.Equal(t, free, r.Snapshot().Fleet.FreeGPUs)
	for _, s := range []*fleet.Scheduler{s, r} {
		now := now.Add(time.Minute)
		require.NoError(t, s.Exited(now, drains[0].ID, gang.ExitDrained))
		require.NoError(t, s.Exited(now, drains[1].ID, gang.ExitKilled))
		require.NoError(t, s.Exited(now, drains[2].ID, gang.ExitFinished))
		require.NoError(t, s.CheckInvariants())
		d := s.Schedule(now)
		require.Len(t, d.Admit, 2, "the drained and the killed movers restart")
		for i, a := range d.Admit {
			assert.Equal(t, drains[i].ID, a.ID)
			assert.Equal(t, drains[i].MoveTo[0].Node, a.Pods[0].Node)
		}
		require.NoError(t, s.CheckInvariants())
		// Three movers of 2 GPUs left their old places and the finished
		// one's new place went back to the pool.
		assert.Equal(t, free+3*2+2, s.Snapshot().Fleet.FreeGPUs)
	}
}

// A mover's new place that leaves service before it has drained is given
// back; the mover then ends as any drained workload.
func TestAMoveToANodeGoneDownIsDropped(t *testing.T) {
	s := scattered(t, 0)
	now := t0.Add(time.Hour)
	plan, err := s.PlanDefrag(now, "spine", "H100", 0, 1000)
	require.NoError(t, err)
	drains, err := s.Defragment(now, plan)
	require.NoError(t, err)
	to := drains[0].MoveTo[0]
	_, err = s.SetNodeHealth(now, to.Node, topology.Down)
	require.NoError(t, err)
	require.NoError(t, s.CheckInvariants())
	require.NoError(t, s.Exited(now, drains[0].ID, gang.ExitDrained))
	d := s.Schedule(now)
	assert.Empty(t, d.Admit)
	_, err = s.Explain(drains[0].ID)
	assert.ErrorIs(t, err, fleet.ErrUnknownID, "it ended; the host resubmits it")
	require.NoError(t, s.CheckInvariants())
}
