package preempt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/preempt"
)

// TestSteadyStateSearchAllocatesOnlyThePlan: a Searcher keeps its
// scratch state between calls, so that once it has served a search of
// a shape, the same search again allocates only the plan it returns
// (its victims and its target), and the fair-sharing walk two buffers
// of its own more.
func TestSteadyStateSearchAllocatesOnlyThePlan(t *testing.T) {
	for _, build := range []func(int, shapes.Fill, uint64) *shapes.Victim{shapes.Clear, shapes.Spike, shapes.Reclaim} {
		v := build(2048, shapes.FillMixed, 1)
		view := v.View()
		for _, fair := range []bool{false, true} {
			r := v.Request
			r.FairSharing = fair
			s := preempt.NewSearcher(preempt.Options{})
			_, err := s.Victims(view, r, nil)
			require.NoError(t, err)
			want := 2.0
			if fair {
				want = 4
			}
			require.LessOrEqual(t, testing.AllocsPerRun(5, func() { _, _ = s.Victims(view, r, nil) }), want, "fair %v", fair)
		}
	}
}
