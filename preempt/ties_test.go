package preempt_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// TestEqualCostCellsPreferFewerVictimsThenTheLowestCell: between cells
// whose sets have the same highest rank and cost, the set of fewer
// victims wins, and between sets of as many, the lowest cell.
func TestEqualCostCellsPreferFewerVictimsThenTheLowestCell(t *testing.T) {
	tests := []struct {
		name string
		// leaf0 and leaf1 are the costs of the 4-GPU workloads filling
		// each leaf's two nodes; 0 means one 8-GPU workload of cost 10.
		leaf0, leaf1 []float64
		want         []string
	}{
		{"one victim in leaf 1 beats two in leaf 0", []float64{5, 5}, []float64{0}, []string{"l1"}},
		{"one victim in leaf 0 beats two in leaf 1", []float64{0}, []float64{5, 5}, []string{"l0"}},
		{"as many victims: the lowest cell", []float64{0}, []float64{0}, []string{"l0"}},
		{"two and two: the lowest cell", []float64{5, 5}, []float64{5, 5}, []string{"l0a", "l0b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Quota holds the request: only the room decides.
			e := newEnv(t, 1, 2, 2, 4, queue("a", "", 24, lower))
			costs := costTable{}
			fill := func(leaf string, node int, cs []float64) {
				if len(cs) == 1 {
					e.run(leaf, "a", 0, 0, []int{node, node + 1}, []int{4, 4})
					costs[leaf] = 10
					return
				}
				for i, c := range cs {
					id := leaf + string(rune('a'+i))
					e.run(id, "a", 0, 0, []int{node + i}, []int{4})
					costs[id] = c
				}
			}
			fill("l0", 0, tt.leaf0)
			fill("l1", 2, tt.leaf1)
			for _, bounds := range []bool{true, false} {
				s := preempt.NewSearcher(preempt.Options{Cost: costs})
				preempt.SetNoBounds(s, !bounds)
				p, err := s.Victims(e.view(), e.req("new", "a", 5, 2, 4, "leaf"), nil)
				require.NoError(t, err)
				require.Equal(t, tt.want, ids(p), "bounds %t", bounds)
			}
		})
	}
}

// TestIndexHoldingMoreThanAllocatedIsInvalid: a victim the index says
// holds GPUs the fleet does not count as allocated makes the view
// invalid, on whichever node it is, node 0 included.
func TestIndexHoldingMoreThanAllocatedIsInvalid(t *testing.T) {
	for _, node := range []int{0, 1} {
		e := newEnv(t, 1, 1, 2, 4, queue("a", "", 8, lower))
		e.run("v", "a", 0, 0, []int{node}, []int{4})
		e.run("keep", "a", 9, 0, []int{1 - node}, []int{4})
		view := e.view()
		// The fleet lost 2 of v's GPUs; the index still holds 4.
		require.NoError(t, e.f.Release(topology.NodeID(node), 2))
		view.Scratch = e.f.Clone()
		_, err := preempt.NewSearcher(preempt.Options{}).Victims(view, e.req("new", "a", 5, 1, 4, ""), nil)
		require.ErrorIs(t, err, preempt.ErrInvalid, "node %d", node)
		require.Equal(t, 2, view.Scratch.Allocated(topology.NodeID(node)), "scratch given back")
	}
}

// TestShrinkGivesUpPodsAsLastUpdated: the pods of an elastic workload
// moved in place (another share, MIG slice or GPU of their node) are
// given up as the last Update described them, not as first indexed.
func TestShrinkGivesUpPodsAsLastUpdated(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *placement.Pod)
	}{
		{"share", func(p *placement.Pod) { p.Share = 750 }},
		{"MIG slice", func(p *placement.Pod) { p.Slice = 4 }},
		{"MIG profile", func(p *placement.Pod) { p.MIG = "1g.10gb" }},
		{"GPU", func(p *placement.Pod) { p.GPU, p.GPUMask = 3-p.GPU, 1<<(3-p.GPU) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 4, queue("a", "", 8, lower))
			e.run("keep", "a", 9, 0, []int{1}, []int{4})
			w := e.run("e", "a", 0, 0, []int{0}, []int{4})
			for g := range 4 {
				w.Shrinkable = append(w.Shrinkable, placement.Pod{Index: g, Node: 0, GPUs: 1, GPU: g, GPUMask: 1 << g,
					Share: 500, MIG: "3g.40gb", Slice: 0})
			}
			w.Keep = []int{2}
			view := e.view()
			pods := slices.Clone(w.Shrinkable)
			for i := range pods {
				tt.change(&pods[i])
			}
			w.Shrinkable = pods
			require.NoError(t, view.Index.Update(*w))
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(view, e.req("new", "a", 5, 1, 2, ""), nil)
			require.NoError(t, err)
			require.Len(t, p.Victims, 1)
			require.Equal(t, pods[:2], p.Victims[0].Pods)
		})
	}
}
