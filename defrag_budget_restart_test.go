package fleet_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// spentBudget is a scattered fleet whose hour's defragmentation budget was
// spent by one automatic move, carried out: its mover drained and restarted
// at its new place, the gang it opened a leaf for runs.
func spentBudget(t *testing.T) (*fleet.Scheduler, time.Time) {
	s := scattered(t, 3) // one move (2.1 GPU-hours) an hour
	now := t0.Add(time.Hour)
	require.NoError(t, s.Submit(now, leafGang("g")))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1)
	now = now.Add(time.Minute)
	require.NoError(t, s.Exited(now, d.Drain[0].ID, gang.ExitDrained))
	require.Len(t, s.Schedule(now).Admit, 2)
	return s, now
}

// A restart does not give the defragmentation budget a fresh hour: after
// a JSON snapshot, or a rebuild by adoption with AdoptDefragSpent, a second
// blocked gang waits as it does on the scheduler that never stopped, and
// gets its move once the hour has passed.
func TestARestartKeepsTheHoursDefragBudget(t *testing.T) {
	restarts := map[string]func(t *testing.T, s *fleet.Scheduler, now time.Time) *fleet.Scheduler{
		"none": func(_ *testing.T, s *fleet.Scheduler, _ time.Time) *fleet.Scheduler { return s },
		"json": func(t *testing.T, s *fleet.Scheduler, _ time.Time) *fleet.Scheduler {
			b, err := json.Marshal(s.Snapshot())
			require.NoError(t, err)
			var snap fleet.Snapshot
			require.NoError(t, json.Unmarshal(b, &snap))
			require.Len(t, snap.DefragSpent, 1)
			assert.InDelta(t, 2*63*60, snap.DefragSpent[0].LostGPUSeconds, 1e-6)
			cfg := fleet.ReferenceConfig()
			cfg.Policy.DefragBudget = 3
			r, err := fleet.Restore(cfg, snap)
			require.NoError(t, err)
			return r
		},
		"adopt": func(t *testing.T, s *fleet.Scheduler, now time.Time) *fleet.Scheduler {
			cfg := fleet.ReferenceConfig()
			cfg.Policy.DefragBudget = 3
			r, err := fleet.New(cfg)
			require.NoError(t, err)
			for _, a := range snapshotAdoptions(s.Snapshot()) {
				require.NoError(t, r.Adopt(now, a))
			}
			require.NoError(t, r.AdoptDefragSpent(now, s.Snapshot().DefragSpent))
			return r
		},
	}
	for name, restart := range restarts {
		t.Run(name, func(t *testing.T) {
			s, now := spentBudget(t)
			s = restart(t, s, now)
			require.NoError(t, s.Submit(now, leafGang("g2")))
			d := s.Schedule(now)
			assert.Empty(t, d.Drain, "a second move within the hour would exceed the budget")
			// The small jobs checkpoint, so that a move costs again what
			// the first one did.
			later := t0.Add(2*time.Hour + time.Second)
			for _, r := range s.Snapshot().Running {
				if strings.HasPrefix(r.ID, "small-") {
					require.NoError(t, s.Checkpointed(later, r.ID, later.Add(-5*time.Minute)))
				}
			}
			d = s.Schedule(later)
			require.Len(t, d.Drain, 1, "an hour after the first move, the budget allows the next")
			assert.Equal(t, gang.DrainDefrag, d.Drain[0].Reason)
			require.Len(t, s.Snapshot().DefragSpent, 1, "the first move is no longer counted")
		})
	}
}

// A budget record that cannot be true is refused, by Restore with the
// field named and by AdoptDefragSpent, and changes nothing.
func TestARestartRefusesABadDefragRecord(t *testing.T) {
	s, now := spentBudget(t)
	good := s.Snapshot().DefragSpent[0]
	cases := map[string]struct {
		spent []fleet.DefragSpend
		field string
	}{
		"after the snapshot": {[]fleet.DefragSpend{{At: now.Add(time.Second), LostGPUSeconds: 1}}, "DefragSpent[0].At"},
		"an hour before":     {[]fleet.DefragSpend{{At: now.Add(-time.Hour), LostGPUSeconds: 1}}, "DefragSpent[0].At"},
		"out of order":       {[]fleet.DefragSpend{good, {At: good.At.Add(-time.Second), LostGPUSeconds: 1}}, "DefragSpent[1].At"},
		"a negative cost":    {[]fleet.DefragSpend{{At: good.At, LostGPUSeconds: -1}}, "DefragSpent[0].LostGPUSeconds"},
		"a cost that is NaN": {[]fleet.DefragSpend{{At: good.At, LostGPUSeconds: math.NaN()}}, "DefragSpent[0].LostGPUSeconds"},
		"an infinite cost":   {[]fleet.DefragSpend{{At: good.At, LostGPUSeconds: math.Inf(1)}}, "DefragSpent[0].LostGPUSeconds"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			snap := s.Snapshot()
			snap.DefragSpent = c.spent
			r, err := fleet.Restore(fleet.ReferenceConfig(), snap)
			assert.Nil(t, r)
			var se *fleet.SnapshotError
			require.True(t, errors.As(err, &se), "a *SnapshotError: %v", err)
			assert.Equal(t, c.field, se.Field)

			before := s.Snapshot().DefragSpent
			err = s.AdoptDefragSpent(now, c.spent)
			assert.ErrorIs(t, err, fleet.ErrInvalid)
			assert.Equal(t, before, s.Snapshot().DefragSpent, "a refused record changes nothing")
		})
	}
}
