package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
)

// TestBoundsKeepThePlan checks that pruning domains by lower bounds never
// changes the plan: the same answer as trying every domain.
func TestBoundsKeepThePlan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, exclude := instance(t, rapid.Bool().Draw(t, "single"))
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		ref := preempt.NewSearcher(preempt.Options{})
		preempt.SetNoBounds(ref, true)
		p2, err2 := ref.Victims(e.view(), req, exclude)
		require.Equal(t, err2, err)
		require.Equal(t, p2, p)
	})
}

func TestBoundsKeepThePlanOnShapes(t *testing.T) {
	for _, build := range []func(int, shapes.Fill, uint64) *shapes.Victim{shapes.Clear, shapes.Spike, shapes.Reclaim} {
		for _, fill := range shapes.Fills() {
			for seed := uint64(1); seed <= 3; seed++ {
				v := build(2048, fill, seed)
				p, err := preempt.NewSearcher(preempt.Options{}).Victims(v.View(), v.Request, nil)
				require.NoError(t, err)
				ref := preempt.NewSearcher(preempt.Options{})
				preempt.SetNoBounds(ref, true)
				p2, err := ref.Victims(v.View(), v.Request, nil)
				require.NoError(t, err)
				require.Equal(t, p2, p)
			}
		}
	}
}

// TestRefusedAddLeavesIndexClean offers the index a bad node entry: the
// Add is refused whole, and the next search answers as on an index that
// never saw it.
func TestRefusedAddLeavesIndexClean(t *testing.T) {
	v := shapes.Clear(2048, shapes.FillMixed, 1)
	want, err := preempt.NewSearcher(preempt.Options{}).Victims(v.View(), v.Request, nil)
	require.NoError(t, err)
	view := v.View()
	bad := v.Running[len(v.Running)-1]
	w := bad.W.Clone()
	bad.W = &w
	bad.W.ID = "bad"
	bad.Nodes = []placement.NodeGPUs{{Node: 1, GPUs: 1}, {Node: 0, GPUs: 0}}
	err = view.Index.Add(bad)
	var ie *preempt.IndexError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, preempt.ErrInvalid)
	require.Equal(t, len(v.Running), view.Index.Len())
	bad.Nodes = []placement.NodeGPUs{{Node: 1, GPUs: 1}} // node 1 is full
	require.ErrorIs(t, view.Index.Add(bad), preempt.ErrInvalid)
	require.ErrorIs(t, view.Index.Add(v.Running[0]), preempt.ErrDuplicate)
	require.ErrorIs(t, view.Index.Remove("bad"), preempt.ErrUnknownWorkload)
	got, err := preempt.NewSearcher(preempt.Options{}).Victims(view, v.Request, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// countingCost is DefaultCost that counts the candidates it prices.
type countingCost struct{ n *int }

func (c countingCost) Cost(r *preempt.Running, now time.Time) float64 {
	*c.n++
	return preempt.DefaultCost{RestartOverhead: 3 * time.Minute}.Cost(r, now)
}

// TestBoundsPruneWhatTheSearchPrices: a search for whole leaves on a
// 16,384-GPU fleet tries the leaves lowest bound first, cheapest cost
// bound first within a bound, and stops once no bound can beat the best
// set: it prices at most half the candidates that trying every leaf
// prices, for the same plan.
func TestBoundsPruneWhatTheSearchPrices(t *testing.T) {
	for _, fill := range shapes.Fills() {
		v := shapes.Clear(16384, fill, 1)
		pruned, every := 0, 0
		p, err := preempt.NewSearcher(preempt.Options{Cost: countingCost{&pruned}}).Victims(v.View(), v.Request, nil)
		require.NoError(t, err)
		ref := preempt.NewSearcher(preempt.Options{Cost: countingCost{&every}})
		preempt.SetNoBounds(ref, true)
		p2, err := ref.Victims(v.View(), v.Request, nil)
		require.NoError(t, err)
		require.Equal(t, p2, p)
		require.LessOrEqual(t, 2*pruned, every, "%v: %d priced, %d trying every leaf", fill, pruned, every)
	}
}
