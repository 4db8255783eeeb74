package preempt_test

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// CheapestNodesBound and CheapestNodes (appended to a dst that may hold
// entries already), read from the index's class trees
// after adds, updates and removals, equal the cheapest nodes found by
// pricing every node of a domain: a node any workload that is not a
// candidate holds is left out, draining work costs nothing, and running
// work costs its GPUs there times its unsaved time plus the overhead.
func TestCheapestNodesEqualPricingEveryNode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := newEnv(t, 2, 2, 4, 8, queue("a", "", 1000, quota.Rules{}))
		for i := range rapid.IntRange(0, 30).Draw(t, "running") {
			n := rapid.IntRange(0, 15).Draw(t, "node")
			free := e.f.Free(topology.NodeID(n))
			if free == 0 {
				continue
			}
			g := rapid.IntRange(1, free).Draw(t, "gpus")
			ns, gs := []int{n}, []int{g}
			if n < 15 && e.f.Free(topology.NodeID(n+1)) >= g && rapid.Bool().Draw(t, "twoNodes") {
				ns, gs = []int{n, n + 1}, []int{g, g}
			}
			age := time.Duration(rapid.IntRange(0, 7200).Draw(t, "age")) * time.Second
			r := e.run(fmt.Sprintf("w%d", i), "a", 0, age, ns, gs)
			r.Preemptible = rapid.IntRange(0, 5).Draw(t, "preemptible") > 0
			r.Draining = rapid.IntRange(0, 5).Draw(t, "draining") == 0
		}
		x := e.view().Index
		// Change some: a checkpoint, a drain, an end.
		for i := range e.running {
			r := e.running[i]
			switch rapid.IntRange(0, 5).Draw(t, "change") {
			case 0:
				require.NoError(t, x.Remove(r.W.ID))
				e.running[i].W = nil
			case 1:
				w := r.W.Clone()
				w.Drain.LastCheckpoint = t0.Add(-time.Duration(rapid.IntRange(0, 600).Draw(t, "ckpt")) * time.Second)
				r.W = &w
				require.NoError(t, x.Update(r))
				e.running[i] = r
			case 2:
				r.Draining = !r.Draining
				require.NoError(t, x.Update(r))
				e.running[i] = r
			}
		}
		now := t0.Add(time.Duration(rapid.IntRange(0, 3600).Draw(t, "now")) * time.Second)
		over := time.Duration(rapid.IntRange(0, 600).Draw(t, "overhead")) * time.Second
		// Every node's price, by hand.
		price := make([]float64, e.f.NumNodes())
		out := make([]bool, e.f.NumNodes())
		for _, r := range e.running {
			if r.W == nil {
				continue
			}
			from := r.Started
			if r.W.Drain.LastCheckpoint.After(from) {
				from = r.W.Drain.LastCheckpoint
			}
			for _, ng := range r.Nodes {
				switch {
				case !r.Preemptible && !r.Draining:
					out[ng.Node] = true
				case !r.Draining:
					price[ng.Node] += float64(ng.GPUs) * (now.Sub(from) + over).Seconds()
				}
			}
		}
		for l := range topology.Level(e.f.Depth()) {
			lo, hi := e.f.DomainsAt(l)
			for d := lo; d < hi; d++ {
				var want []preempt.NodeBound
				nlo, nhi := e.f.Nodes(d)
				for n := nlo; n < nhi; n++ {
					if !out[n] {
						want = append(want, preempt.NodeBound{Node: n, GPUSeconds: max(0, price[n])})
					}
				}
				slices.SortFunc(want, func(a, b preempt.NodeBound) int {
					return cmp.Or(cmp.Compare(a.GPUSeconds, b.GPUSeconds), cmp.Compare(a.Node, b.Node))
				})
				m := rapid.IntRange(0, int(nhi-nlo)+1).Draw(t, "m")
				b, ok := x.CheapestNodesBound(d, m, now, over)
				require.Equal(t, m <= len(want), ok, "domain %d, %d nodes", d, m)
				if ok {
					sum := 0.0
					for _, w := range want[:m] {
						sum += w.GPUSeconds
					}
					require.InDelta(t, sum, b, 1e-3+sum*1e-8)
					require.LessOrEqual(t, b, sum)
				}
				// CheapestNodes appends: what dst held stays in front.
				prefix := make([]preempt.NodeBound, rapid.IntRange(0, 2).Draw(t, "prefix"))
				for i := range prefix {
					prefix[i] = preempt.NodeBound{Node: topology.NodeID(i), GPUSeconds: -1}
				}
				got, more := x.CheapestNodes(d, m, now, over, slices.Clone(prefix))
				require.Equal(t, prefix, got[:len(prefix)])
				got = got[len(prefix):]
				require.Equal(t, len(want) > min(m, len(want)), more)
				require.Len(t, got, min(m, len(want)))
				for i := range got {
					require.Equal(t, want[i].Node, got[i].Node, "domain %d, node %d of %d", d, i, m)
					require.InDelta(t, want[i].GPUSeconds, got[i].GPUSeconds, 1e-3+want[i].GPUSeconds*1e-8)
					require.LessOrEqual(t, got[i].GPUSeconds, want[i].GPUSeconds, "a lower bound")
				}
			}
		}
	})
}
