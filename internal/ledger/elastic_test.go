package ledger_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

func elasticWork(id string, pods, minPods, gpus int) *gang.Workload {
	return &gang.Workload{ID: id, PodSets: []gang.PodSet{{Name: "p", Count: pods, MinCount: minPods, GPUsPerPod: gpus}}}
}

// splitOf builds the spec of one pod split off w, as the scheduler does.
func splitOf(w *gang.Workload, index int) *gang.Workload {
	c := w.Clone()
	c.ID = ledger.SplitID(w.ID, w.PodSets[0].Name, index)
	c.PodSets[0].Count, c.PodSets[0].MinCount = 1, 0
	return &c
}

func TestSplitAndGrowKeepTheBooks(t *testing.T) {
	l, qa, qb := books(t)
	w := elasticWork("e", 4, 2, 4)
	_, err := l.Track(w, qb, 0, ledger.Policy{Preemptible: true})
	require.NoError(t, err)
	require.Error(t, l.Admit("e", on("e", 4, 0), t0), "below its minimum")
	require.NoError(t, l.Admit("e", on("e", 4, 0, 0, 1), t0))
	r, _ := l.Get("e")
	assert.Equal(t, []int{3}, r.Size())
	assert.Equal(t, 12, r.GPUs())
	assert.EqualValues(t, 12, l.Tree().Usage(qb, 0))
	pods, keep := r.Shrinkable()
	assert.Len(t, pods, 3, "any pod may go")
	assert.Equal(t, []int{2}, keep, "two must stay")
	require.NoError(t, l.CheckInvariants())

	// Shrink by one pod for a beneficiary on node 1.
	p := pods[0]
	c, err := l.Split("e", p, splitOf(w, p.Index))
	require.NoError(t, err)
	assert.Equal(t, "e", c.SplitOf())
	assert.Equal(t, []int{2}, r.Size())
	pods, _ = r.Shrinkable()
	assert.Empty(t, pods, "at its minimum")
	_, err = l.Split("e", r.Assign.Pods[0], splitOf(w, 0))
	require.Error(t, err, "below its minimum")
	_, err = l.Track(work("x", 1, 4), qa, 0, ledger.Policy{})
	require.NoError(t, err)
	_, err = l.Nominate(t0, ledger.Plan{Victims: []ledger.Victim{{ID: c.W.ID, Deadline: t0.Add(time.Minute), Reason: gang.DrainReclaim}},
		Targets: []ledger.Target{{Beneficiary: "x", Assign: on("x", 4, p.Node)}}})
	require.NoError(t, err)
	require.NoError(t, l.CheckInvariants())
	_, _, err = l.Exit(c.W.ID, gang.ExitDrained)
	require.NoError(t, err)
	_, err = l.Start("x", t0)
	require.NoError(t, err)
	require.NoError(t, l.CheckInvariants())

	// The pod's index is free again: it grows back elsewhere.
	i, ok := l.GrowIndex(r, 0)
	require.True(t, ok)
	assert.Equal(t, p.Index, i)
	require.NoError(t, l.Grow("e", []placement.Pod{{PodSet: 0, Index: i, Node: 3, GPUs: 4}}))
	assert.Equal(t, []int{3}, r.Size())
	assert.EqualValues(t, 12, l.Tree().Usage(qb, 0))
	require.Error(t, l.Grow("e", []placement.Pod{{PodSet: 0, Index: i, Node: 3, GPUs: 4}}), "that pod runs")
	require.NoError(t, l.CheckInvariants())
}

// TestElasticBooksStayBalanced drives the ledger with random admissions
// at any size, exits, shrinks (a pod split off and drained for a
// beneficiary, or folded back), grows and cancellations, and recounts
// the GPUs per node and the usage per queue from the holders' pods and
// the nominations after every step.
func TestElasticBooksStayBalanced(t *testing.T) {
	var stats [2]int // shrinks and grows over every run
	defer func() {
		assert.Positive(t, stats[0], "no shrink was ever accepted")
		assert.Positive(t, stats[1], "no grow was ever accepted")
	}()
	rapid.Check(t, func(t *rapid.T) {
		l, qa, qb := books(t)
		now := t0
		n := 0
		pending := map[string]bool{}
		holders := func() []string {
			var out []string
			l.Holders(func(r *ledger.Record) bool { out = append(out, r.W.ID); return true })
			return out
		}
		nodes := func(t *rapid.T, k int) []topology.NodeID {
			out := make([]topology.NodeID, k)
			for i := range out {
				out[i] = topology.NodeID(rapid.IntRange(0, 3).Draw(t, "node"))
			}
			return out
		}
		t.Repeat(map[string]func(*rapid.T){
			"track": func(t *rapid.T) {
				n++
				id := fmt.Sprintf("w%d", n)
				q := rapid.SampledFrom([]quota.NodeID{qa, qb}).Draw(t, "queue")
				pods := rapid.IntRange(1, 6).Draw(t, "pods")
				w := elasticWork(id, pods, rapid.IntRange(1, pods).Draw(t, "min"), rapid.SampledFrom([]int{1, 2, 4}).Draw(t, "gpus"))
				_, err := l.Track(w, q, 0, ledger.Policy{Preemptible: true})
				require.NoError(t, err)
				pending[id] = true
			},
			"admit": func(t *rapid.T) {
				if len(pending) == 0 {
					t.Skip("nothing pending")
				}
				id := rapid.SampledFrom(slices.Sorted(maps.Keys(pending))).Draw(t, "id")
				r, _ := l.Get(id)
				ps := r.W.PodSets[0]
				k := rapid.IntRange(1, ps.Count).Draw(t, "size")
				before := snapshot(l)
				if err := l.Admit(id, on(id, ps.GPUsPerPod, nodes(t, k)...), now); err != nil {
					require.Equal(t, before, snapshot(l), "a refused admission changed the books")
					return
				}
				delete(pending, id)
			},
			"shrink": func(t *rapid.T) {
				var elastic []string
				for _, id := range holders() {
					if r, _ := l.Get(id); r.Shrunk() || len(r.Assign.Pods) > r.W.PodSets[0].Min() && ledger.Elastic(r.W) && r.State == gang.Admitted && len(r.Lost) == 0 {
						elastic = append(elastic, id)
					}
				}
				if len(elastic) == 0 || len(pending) == 0 {
					t.Skip("nothing to shrink, or nobody to shrink for")
				}
				id := rapid.SampledFrom(elastic).Draw(t, "victim")
				r, _ := l.Get(id)
				pods, _ := r.Shrinkable()
				if len(pods) == 0 {
					t.Skip("at its minimum")
				}
				p := rapid.SampledFrom(pods).Draw(t, "pod")
				c, err := l.Split(id, p, splitOf(r.W, p.Index))
				require.NoError(t, err)
				if rapid.IntRange(0, 3).Draw(t, "fold") == 0 {
					require.NoError(t, l.Unsplit(c.W.ID, p))
					return
				}
				b := rapid.SampledFrom(slices.Sorted(maps.Keys(pending))).Draw(t, "beneficiary")
				br, _ := l.Get(b)
				ps := br.W.PodSets[0]
				before := snapshot(l)
				_, err = l.Nominate(now, ledger.Plan{Victims: []ledger.Victim{{ID: c.W.ID, Deadline: now.Add(time.Minute), Reason: gang.DrainReclaim}},
					Targets: []ledger.Target{{Beneficiary: b, Assign: on(b, ps.GPUsPerPod, nodes(t, ps.Min())...)}}})
				if err != nil {
					require.Equal(t, before, snapshot(l), "a refused plan changed the books")
					require.NoError(t, l.Unsplit(c.W.ID, p))
					return
				}
				delete(pending, b)
				stats[0]++
			},
			"grow": func(t *rapid.T) {
				rs := l.Shrunken()
				if len(rs) == 0 {
					t.Skip("nothing shrunk")
				}
				r := rapid.SampledFrom(rs).Draw(t, "grower")
				i, ok := l.GrowIndex(r, 0)
				if !ok {
					return // its missing pods still drain
				}
				before := snapshot(l)
				p := placement.Pod{PodSet: 0, Index: i, Node: nodes(t, 1)[0], GPUs: r.W.PodSets[0].GPUsPerPod}
				if err := l.Grow(r.W.ID, []placement.Pod{p}); err != nil {
					require.Equal(t, before, snapshot(l), "a refused grow changed the books")
					return
				}
				stats[1]++
			},
			"exit": func(t *rapid.T) {
				hs := holders()
				if len(hs) == 0 {
					t.Skip("nothing runs")
				}
				id := rapid.SampledFrom(hs).Draw(t, "id")
				r, _ := l.Get(id)
				how := gang.ExitFinished
				if r.State == gang.Draining {
					how = gang.ExitDrained
				}
				_, _, err := l.Exit(id, how)
				require.NoError(t, err)
			},
			"start ready": func(t *rapid.T) {
				now = now.Add(time.Minute)
				for _, b := range l.Ready() {
					_, err := l.Start(b, now)
					require.NoError(t, err)
				}
			},
			"": func(t *rapid.T) {
				require.NoError(t, l.CheckInvariants())
				recountSizes(t, l, qa, qb)
			},
		})
	})
}

// recount adds up, from the holders' pods and the nominations alone, the
// GPUs allocated per node and the usage per queue, and compares.
func recountSizes(t *rapid.T, l *ledger.Ledger, queues ...quota.NodeID) {
	f := l.Fleet()
	alloc := make([]int, f.NumNodes())
	usage := map[quota.NodeID]int64{}
	l.Holders(func(r *ledger.Record) bool {
		size := make([]int, len(r.W.PodSets))
		for _, p := range r.Assign.Pods {
			alloc[p.Node] += p.GPUs
			usage[r.Queue] += int64(p.GPUs)
			size[p.PodSet]++
		}
		require.Equal(t, r.Size(), size, "%s: size and pods", r.W.ID)
		for i, ps := range r.W.PodSets {
			require.GreaterOrEqual(t, size[i], ps.Min(), "%s below its minimum", r.W.ID)
			require.LessOrEqual(t, size[i], ps.Count, "%s above its count", r.W.ID)
		}
		return true
	})
	for _, nm := range l.Nominations() {
		for _, x := range nm.Reserved() {
			alloc[x.Node] += x.GPUs
		}
		r, _ := l.Get(nm.Beneficiary)
		usage[r.Queue] += int64(nm.Target.GPUs())
	}
	for node := range topology.NodeID(f.NumNodes()) {
		require.Equal(t, alloc[node], f.Allocated(node), "node %d", node)
	}
	for _, q := range queues {
		require.Equal(t, usage[q], l.Tree().Usage(q, 0), "queue %d", q)
	}
}
