package preempt_test

import (
	"testing"

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
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.f, e.tree, req, e.running, exclude)
		ref := preempt.NewSearcher(preempt.Options{})
		preempt.SetNoBounds(ref, true)
		p2, err2 := ref.Victims(e.f, e.tree, req, e.running, exclude)
		require.Equal(t, err2, err)
		require.Equal(t, p2, p)
	})
}

func TestBoundsKeepThePlanOnShapes(t *testing.T) {
	for _, build := range []func(int, bool, uint64) *shapes.Victim{shapes.Clear, shapes.Spike, shapes.Reclaim} {
		for _, mixed := range []bool{false, true} {
			for seed := uint64(1); seed <= 3; seed++ {
				v := build(2048, mixed, seed)
				p, err := preempt.NewSearcher(preempt.Options{}).Victims(v.Fleet, v.Tree, v.Request, v.Running, nil)
				require.NoError(t, err)
				ref := preempt.NewSearcher(preempt.Options{})
				preempt.SetNoBounds(ref, true)
				p2, err := ref.Victims(v.Fleet, v.Tree, v.Request, v.Running, nil)
				require.NoError(t, err)
				require.Equal(t, p2, p)
			}
		}
	}
}

// TestRefusedCallLeavesSearcherClean reuses one Searcher after a call
// refused for a bad node entry: the next answer is the same as a fresh
// Searcher's.
func TestRefusedCallLeavesSearcherClean(t *testing.T) {
	v := shapes.Clear(2048, true, 1)
	want, err := preempt.NewSearcher(preempt.Options{}).Victims(v.Fleet, v.Tree, v.Request, v.Running, nil)
	require.NoError(t, err)
	s := preempt.NewSearcher(preempt.Options{})
	bad := append([]preempt.Running(nil), v.Running...)
	bad[len(bad)-1].Nodes = []placement.NodeGPUs{{Node: 0, GPUs: 0}}
	_, err = s.Victims(v.Fleet, v.Tree, v.Request, bad, nil)
	require.ErrorIs(t, err, preempt.ErrNoPlan)
	got, err := s.Victims(v.Fleet, v.Tree, v.Request, v.Running, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
