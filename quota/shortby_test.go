package quota_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/quota"
)

// A refused request's ShortBy is a lower bound on the usage that must go
// for it to fit: removing g GPUs of usage, from any queues, makes at most
// g more available to the queue, so removing fewer than ShortBy never
// makes it fit (preempt sizes its runs of victims by it).
func TestShortByBoundsTheUsageToRemove(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newModel(t)
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			m.step(t, false)
		}
		qs := m.tree.Queues()
		if len(qs) == 0 {
			return
		}
		f := quota.FlavorID(rapid.IntRange(0, m.tree.NumFlavors()-1).Draw(t, "flavor"))
		q := rapid.SampledFrom(qs).Draw(t, "queue")
		gpus := int64(rapid.IntRange(0, 40).Draw(t, "gpus"))
		v := m.tree.Fits(q, f, gpus)
		if v.Fits() {
			return
		}
		sim := m.tree.Clone()
		removed := int64(0)
		for range rapid.IntRange(0, 10).Draw(t, "removals") {
			p := rapid.SampledFrom(qs).Draw(t, "from")
			g := min(sim.Usage(p, f), int64(rapid.IntRange(0, 8).Draw(t, "g")), v.Reason.ShortBy-1-removed)
			if g <= 0 {
				continue
			}
			require.NoError(t, sim.RemoveUsage(p, f, g))
			removed += g
			after := sim.Fits(q, f, gpus)
			require.False(t, after.Fits(), "%d GPUs removed of %d short: %v", removed, v.Reason.ShortBy, after)
			require.LessOrEqual(t, v.Available, after.Available)
			require.LessOrEqual(t, after.Available, v.Available+removed)
		}
	})
}
