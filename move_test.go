package fleet_test

import (
	"bytes"
	"fmt"
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

// A mover whose reserved new place leaves service before it has left is
// not forgotten: its reservation is given back, and once it has exited
// drained it is pending again (Explain knows it), and the next cycle
// places it elsewhere, so the host need not resubmit it.
func TestMoverWhoseNewNodeFailsIsRequeued(t *testing.T) {
	s := scattered(t, 0)
	now := t0.Add(time.Hour)
	plan, err := s.PlanDefrag(now, "leaf", "H100", 0, 1000)
	require.NoError(t, err)
	drains, err := s.Defragment(now, plan)
	require.NoError(t, err)
	mover, to := drains[0].ID, drains[0].MoveTo[0]
	_, err = s.SetNodeHealth(now.Add(30*time.Second), to.Node, topology.Down)
	require.NoError(t, err)
	require.NoError(t, s.CheckInvariants())
	require.NoError(t, s.Exited(now.Add(time.Minute), mover, gang.ExitDrained))
	x, err := s.Explain(mover)
	require.NoError(t, err, "the mover is pending again")
	assert.Equal(t, gang.Pending, x.State)
	d := s.Schedule(now.Add(time.Minute))
	var placed []string
	for _, a := range d.Admit {
		placed = append(placed, a.ID)
		for _, p := range a.Pods {
			assert.NotEqual(t, to.Node, p.Node, "not on the node that went down")
		}
	}
	assert.Contains(t, placed, mover, "placed elsewhere")
	require.NoError(t, s.CheckInvariants())
}

// A carried-out plan is journaled with its moves: a replay drains the
// same movers, reserves the same places and restarts them there, byte
// for byte.
func TestJournalReplaysADefragmentation(t *testing.T) {
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	var journal bytes.Buffer
	j := fleet.NewJournal(s, &journal)
	for sp := range 4 {
		for lf := range 8 {
			w := gang.Workload{ID: fmt.Sprintf("small-%d-%d", sp, lf), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
				Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 2}},
				Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
			pods := []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: fmt.Sprintf("node-%d-%d-0", sp, lf), GPUs: 2}}
			require.NoError(t, j.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods}))
		}
	}
	now := t0.Add(time.Hour)
	plan, err := s.PlanDefrag(now, "spine", "H100", 0, 1000)
	require.NoError(t, err)
	drains, err := j.Defragment(now, plan)
	require.NoError(t, err)
	require.Len(t, drains, 8)
	now = now.Add(time.Minute)
	for _, d := range drains {
		require.NoError(t, j.Exited(now, d.ID, gang.ExitDrained))
	}
	want := j.Schedule(now)
	require.Len(t, want.Admit, len(drains), "every mover restarts at its new place")

	var got []fleet.Decisions
	r, err := fleet.Replay(fleet.ReferenceConfig(), bytes.NewReader(journal.Bytes()), func(d fleet.Decisions) { got = append(got, d) })
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, want, got[0])
	assert.Equal(t, s.Snapshot(), r.Snapshot())
}

// What the host reported of a mover's use was about the run that
// stopped: once it restarts at its new place it is not idle until the
// host reports it so again, and an idle rule counts from that report.
func TestAMoverRestartsWithoutItsIdleReport(t *testing.T) {
	s := scattered(t, 0)
	now := t0.Add(time.Hour)
	plan, err := s.PlanDefrag(now, "spine", "H100", 0, 1000)
	require.NoError(t, err)
	mover := plan.Moves[0].ID
	require.NoError(t, s.ReportUsage(now, mover, false))
	since, idle := s.IdleSince(mover)
	require.True(t, idle)
	require.Equal(t, now, since)
	drains, err := s.Defragment(now, plan)
	require.NoError(t, err)
	require.Equal(t, mover, drains[0].ID)
	later := now.Add(time.Minute)
	require.NoError(t, s.Exited(later, mover, gang.ExitDrained))
	d := s.Schedule(later)
	require.NotEmpty(t, d.Admit)
	require.Equal(t, mover, d.Admit[0].ID, "the mover restarts at its new place")
	_, idle = s.IdleSince(mover)
	assert.False(t, idle, "the new run has no report yet")
	r, err := fleet.Restore(fleet.ReferenceConfig(), s.Snapshot())
	require.NoError(t, err)
	_, idle = r.IdleSince(mover)
	assert.False(t, idle, "nor after a restore")
}
