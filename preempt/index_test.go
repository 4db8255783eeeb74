package preempt_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// TestIndexAggregatesEqualARebuild drives an Index through random starts,
// drains, checkpoints (also of a spec changed in place, and of elastic
// work offered in two parts) and exits (and refused changes) and checks after
// each step that it reads exactly as an Index built from scratch from the
// workloads running then: every per-queue order, band and per-domain
// price is kept exact by the changes. An Update leaves it as removing the
// workload and adding it back would, down to the order it lists each
// node's workloads in.
func TestIndexAggregatesEqualARebuild(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := newEnv(t, 2, 2, 2, 4, cohort("c", "", 0), queue("a", "c", 8, reclaimAny), queue("b", "c", 8, lower))
		x := preempt.NewIndex(e.f, e.tree)
		readded := preempt.NewIndex(e.f, e.tree) // updated by Remove and Add
		live := map[string]preempt.Running{}
		held := make([]int, e.f.NumNodes())
		next := 0
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			ids := slices.Sorted(maps.Keys(live))
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
			case op == 0 || len(ids) == 0:
				var nodes []placement.NodeGPUs
				for n := range topology.NodeID(e.f.NumNodes()) {
					if rapid.IntRange(0, 4).Draw(t, "on") == 0 {
						nodes = append(nodes, placement.NodeGPUs{Node: n, GPUs: rapid.IntRange(1, 4).Draw(t, "gpus")})
					}
				}
				id := fmt.Sprintf("w%d", next)
				next++
				r := preempt.Running{
					W: &gang.Workload{ID: id, Priority: int32(rapid.IntRange(0, 3).Draw(t, "prio")),
						PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}},
					Queue: e.q(rapid.SampledFrom([]string{"a", "b"}).Draw(t, "queue")), Nodes: nodes,
					Started:     t0.Add(-time.Duration(rapid.IntRange(0, 5).Draw(t, "age")) * time.Minute),
					Preemptible: rapid.Bool().Draw(t, "preemptible"), Draining: rapid.IntRange(0, 4).Draw(t, "draining") == 0,
				}
				if gpus := gpusIn(nodes); gpus > 1 && rapid.Bool().Draw(t, "elastic") {
					elastic(&r, rapid.IntRange(1, gpus-1).Draw(t, "min"))
				}
				fits := len(nodes) > 0
				for _, ng := range nodes {
					fits = fits && held[ng.Node]+ng.GPUs <= e.f.Capacity(ng.Node)
				}
				err := x.Add(r)
				if !fits {
					require.ErrorIs(t, err, preempt.ErrInvalid)
					continue
				}
				require.NoError(t, err)
				require.NoError(t, readded.Add(r))
				live[id] = r
				for _, ng := range nodes {
					held[ng.Node] += ng.GPUs
				}
			case op == 1:
				id := rapid.SampledFrom(ids).Draw(t, "drain")
				r := live[id]
				r.Draining = rapid.Bool().Draw(t, "draining")
				ckpt := t0.Add(-time.Duration(rapid.IntRange(0, 3).Draw(t, "ckpt")) * time.Minute)
				if rapid.Bool().Draw(t, "inPlace") {
					// A host that checkpoints the spec it shares with the
					// index, then calls Update.
					r.W.Drain.LastCheckpoint = ckpt
				} else {
					w := r.W.Clone()
					w.Drain.LastCheckpoint = ckpt
					r.W = &w
				}
				if r.W == live[id].W && r.Draining == live[id].Draining && rapid.Bool().Draw(t, "checkpointed") {
					require.NoError(t, x.Checkpointed(id))
				} else {
					require.NoError(t, x.Update(r))
				}
				require.NoError(t, readded.Remove(id))
				require.NoError(t, readded.Add(r))
				live[id] = r
			case op == 2:
				id := rapid.SampledFrom(ids).Draw(t, "exit")
				require.NoError(t, x.Remove(id))
				require.NoError(t, readded.Remove(id))
				for _, ng := range live[id].Nodes {
					held[ng.Node] -= ng.GPUs
				}
				delete(live, id)
			default:
				require.ErrorIs(t, x.Remove("none"), preempt.ErrUnknownWorkload)
				require.ErrorIs(t, x.Checkpointed("none"), preempt.ErrUnknownWorkload)
				require.ErrorIs(t, x.Add(live[ids[0]]), preempt.ErrDuplicate)
			}
			fresh := preempt.NewIndex(e.f, e.tree)
			for _, id := range slices.Sorted(maps.Keys(live)) {
				require.NoError(t, fresh.Add(live[id]))
			}
			require.Empty(t, preempt.IndexDiff(x, fresh))
			require.Empty(t, preempt.IndexDiff(x, readded))
			for n := range topology.NodeID(e.f.NumNodes()) {
				require.Equal(t, preempt.IndexOnNode(readded, int(n)), preempt.IndexOnNode(x, int(n)), "node %d", n)
			}
		}
	})
}

// NoPlan says which rule excluded how many running workloads, so that a
// scheduler's Explain can show what would have to change.
func TestNoPlanCountsExclusions(t *testing.T) {
	e := newEnv(t, 1, 1, 4, 8, cohort("c", "", 0), queue("a", "c", 8, reclaimLP),
		queue("b", "c", 0, lower), queue("x", "c", 16, lower), queue("z", "", 8, lower))
	e.run("a-hi", "a", 50, time.Hour, []int{0}, []int{2})
	e.run("a-young", "a", 1, time.Minute, []int{0}, []int{2}).MinRuntime = time.Hour
	e.run("a-nock", "a", 1, time.Hour, []int{0}, []int{2}).Preemptible = false
	e.run("b-hi", "b", 60, time.Hour, []int{1}, []int{4})
	e.run("b-claimed", "b", 1, time.Hour, []int{1}, []int{2})
	e.run("x-1", "x", 1, time.Hour, []int{2}, []int{8})
	e.run("z-1", "z", 1, time.Hour, []int{3}, []int{8})
	_, err := victims(t, e, e.req("new", "a", 10, 1, 8, ""), map[string]bool{"b-claimed": true})
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	require.Equal(t, preempt.WhyNoCandidates, np.Why)
	require.Equal(t, 0, np.Candidates)
	require.Equal(t, preempt.Exclusions{NotPreemptible: 1, MinRuntime: 1, Priority: 2, NotBorrowing: 1,
		OtherFlavorOrTree: 1, Claimed: 1}, np.Excluded)
	require.Contains(t, err.Error(), "1 not preemptible, 1 min runtime, 2 priority, 1 queue not borrowing, 1 other flavor or tree, 1 draining or claimed")
}

// gpusIn is the GPUs nodes hold.
func gpusIn(nodes []placement.NodeGPUs) int {
	n := 0
	for _, x := range nodes {
		n += x.GPUs
	}
	return n
}

// TestUpdateOfPreemptibleMovesTheWorkloadInOrOutOfTheCandidates: an
// Update that changes only Running.Preemptible changes whether the
// workload may be a victim, so the Index files it again rather than
// keeping its old class: the request plans as on an Index built afresh.
func TestUpdateOfPreemptibleMovesTheWorkloadInOrOutOfTheCandidates(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after bool
		victims       []string // nil: no plan, the workload not preemptible
	}{
		{"becomes preemptible", false, true, []string{"w"}},
		{"stops being preemptible", true, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 1, 8, queue("a", "", 16, lower))
			w := e.run("w", "a", 1, time.Hour, []int{0}, []int{8})
			w.Preemptible = tc.before
			view := e.view()
			w.Preemptible = tc.after
			require.NoError(t, view.Index.Update(*w))
			req := e.req("new", "a", 5, 1, 8, "")
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(view, req, nil)
			fresh, freshErr := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.Equal(t, freshErr, err)
			require.Equal(t, fresh, p)
			if tc.victims == nil {
				var np *preempt.NoPlan
				require.ErrorAs(t, err, &np)
				require.Equal(t, preempt.Exclusions{NotPreemptible: 1}, np.Excluded)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.victims, ids(p))
		})
	}
}
