package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
)

// A scheduler that keeps no events decides as one that does: the same
// admissions, drains and kills, cycle by cycle, with no event kept and
// none counted as dropped.
func TestKeepEventsOffKeepsDecisions(t *testing.T) {
	with, without := newRef(t), newRef(t)
	without.KeepEvents(false)
	steps := []func(s *fleet.Scheduler, now time.Time) error{
		func(s *fleet.Scheduler, now time.Time) error {
			for i := range 8 {
				if err := s.Submit(now, training(fmt.Sprintf("t%d", i), 32, fleet.ClassReservedResearch, "research")); err != nil {
					return err
				}
			}
			return nil
		},
		func(s *fleet.Scheduler, now time.Time) error { return s.Checkpointed(now, "t0", now) },
		func(s *fleet.Scheduler, now time.Time) error {
			for i := range 120 {
				if err := s.Submit(now, replica(fmt.Sprintf("r%d", i), 8)); err != nil {
					return err
				}
			}
			return nil
		},
		func(*fleet.Scheduler, time.Time) error { return nil },
	}
	events, admitted, drained := 0, 0, 0
	for i, step := range steps {
		now := t0.Add(time.Duration(i) * time.Hour)
		require.NoError(t, step(with, now))
		require.NoError(t, step(without, now))
		dw, dn := with.Schedule(now), without.Schedule(now)
		require.Empty(t, dn.Events, "step %d", i)
		require.Zero(t, dn.EventsDropped, "step %d", i)
		events, admitted, drained = events+len(dw.Events), admitted+len(dw.Admit), drained+len(dw.Drain)
		dw.Events = nil
		require.Equal(t, dw, dn, "step %d", i)
	}
	require.Positive(t, events)
	require.Positive(t, admitted)
	require.Positive(t, drained, "the replicas preempt")
}
