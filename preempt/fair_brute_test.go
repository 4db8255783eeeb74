package preempt_test

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// fairRef is Kueue's fair-sharing preemption written the plain way, for
// one cohort of queues on a fleet where only quota binds: clone the tree,
// add the request to the preemptor's queue, repeatedly take from the
// queue of highest share (ties: the better next candidate), test the
// first strategy on other queues while the preemptor would borrow, then
// give each queue's first refused candidate one chance under the second
// strategy; finally put back, latest first, every victim not needed.
// It returns the victims' IDs sorted, and whether there is a plan.
type fairRef struct {
	tree       *quota.Tree
	preemptor  quota.NodeID
	need       int64
	strategies []preempt.FairSharingStrategy
	queues     []quota.NodeID           // the cohort's queues, in tree order
	cands      map[quota.NodeID][]fairC // per queue, in eviction order
}

type fairC struct {
	id       string
	queue    quota.NodeID
	gpus     int64
	prio     int32
	draining bool
	other    bool
	cost     float64
}

// before is the eviction order without the share criterion.
func (a fairC) before(b fairC) int {
	if a.draining != b.draining {
		if a.draining {
			return -1
		}
		return 1
	}
	if a.other != b.other {
		if a.other {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.prio, b.prio), cmp.Compare(a.cost, b.cost), cmp.Compare(a.id, b.id))
}

func (r *fairRef) fits() bool {
	if err := r.tree.RemoveUsage(r.preemptor, 0, r.need); err != nil {
		panic(err)
	}
	ok := r.tree.Fits(r.preemptor, 0, r.need).Fits()
	if err := r.tree.AddUsage(r.preemptor, 0, r.need); err != nil {
		panic(err)
	}
	return ok
}

func (r *fairRef) remove(c fairC) {
	if err := r.tree.RemoveUsage(c.queue, 0, c.gpus); err != nil {
		panic(err)
	}
}

func (r *fairRef) restore(c fairC) {
	if err := r.tree.AddUsage(c.queue, 0, c.gpus); err != nil {
		panic(err)
	}
}

// pick returns the queue to take from next among those with a head: the
// highest share, then the better head; queues other than the
// preemptor's must borrow.
func (r *fairRef) pick(head func(quota.NodeID) (fairC, bool)) (quota.NodeID, bool) {
	best, found := quota.NodeID(0), false
	var bestShare quota.Share
	var bestHead fairC
	for _, q := range r.queues {
		h, ok := head(q)
		sh := r.tree.DominantShare(q)
		if !ok || q != r.preemptor && !sh.Borrowing() {
			continue
		}
		if c := sh.Compare(bestShare); !found || c > 0 || c == 0 && h.before(bestHead) < 0 {
			best, bestShare, bestHead, found = q, sh, h, true
		}
	}
	return best, found
}

func (r *fairRef) run() ([]string, bool) {
	if r.tree.Fits(r.preemptor, 0, r.need).Fits() {
		return []string{}, true
	}
	within := r.tree.InUse(r.preemptor, 0)+r.need <= r.tree.Nominal(r.preemptor, 0)
	if err := r.tree.AddUsage(r.preemptor, 0, r.need); err != nil {
		return nil, false
	}
	var taken []fairC
	take := func(c fairC) bool {
		r.remove(c)
		taken = append(taken, c)
		return r.fits()
	}
	next := map[quota.NodeID]int{}
	retry := map[quota.NodeID]fairC{}
	head := func(q quota.NodeID) (fairC, bool) {
		if i := next[q]; i < len(r.cands[q]) {
			return r.cands[q][i], true
		}
		return fairC{}, false
	}
	done := false
	for !done {
		q, ok := r.pick(head)
		if !ok {
			break
		}
		if q == r.preemptor || within {
			c, _ := head(q)
			next[q]++
			done = take(c)
			continue
		}
		pNew, tOld := r.tree.DominantShare(r.preemptor), r.tree.DominantShare(q)
		if math.IsInf(pNew.Value(), 1) && !math.IsInf(tOld.Value(), 1) {
			if _, ok := retry[q]; !ok {
				retry[q], _ = head(q)
			}
			next[q] = len(r.cands[q])
			continue
		}
		for c, ok := head(q); ok; c, ok = head(q) {
			next[q]++
			r.remove(c)
			tNew := r.tree.DominantShare(q)
			r.restore(c)
			if passes(r.strategies[0], pNew, tOld, tNew) {
				done = take(c)
				break
			}
			if _, ok := retry[q]; !ok {
				retry[q] = c
			}
		}
	}
	if !done && len(r.strategies) == 2 {
		for {
			q, ok := r.pick(func(q quota.NodeID) (fairC, bool) { c, ok := retry[q]; return c, ok })
			if !ok {
				break
			}
			c := retry[q]
			delete(retry, q)
			pNew, tOld := r.tree.DominantShare(r.preemptor), r.tree.DominantShare(q)
			if passes(r.strategies[1], pNew, tOld, tOld) && take(c) {
				done = true
				break
			}
		}
	}
	if !done {
		return nil, false
	}
	for j := len(taken) - 1; j >= 0; j-- {
		r.restore(taken[j])
		if r.fits() {
			taken = slices.Delete(taken, j, j+1)
		} else {
			r.remove(taken[j])
		}
	}
	out := []string{}
	for _, c := range taken {
		out = append(out, c.id)
	}
	slices.Sort(out)
	return out, true
}

func passes(st preempt.FairSharingStrategy, pNew, tOld, tNew quota.Share) bool {
	if st == preempt.LessThanInitialShare {
		return pNew.Compare(tOld) < 0
	}
	return pNew.Compare(tNew) <= 0
}

// TestFairSharingAgainstReference draws a cohort of three queues with
// nominal quotas, weights (0 included) and work of several sizes and
// priorities on one-GPU nodes, and a request of queue a under each list
// of strategies Kueue accepts: the victims are exactly the plain walk's,
// and a plan exists exactly when the walk finds one.
func TestFairSharingAgainstReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rules := quota.Rules{
			WithinQueue:         rapid.SampledFrom([]quota.WithinQueue{quota.WithinQueueNever, quota.WithinQueueLowerPriority}).Draw(t, "within"),
			ReclaimWithinCohort: rapid.SampledFrom([]quota.ReclaimWithinCohort{quota.ReclaimLowerPriority, quota.ReclaimAny}).Draw(t, "reclaim"),
		}
		weight := rapid.SampledFrom([]float64{-1, 0, 1, 2})
		spec := func(n quota.NodeSpec, label string) quota.NodeSpec {
			if w := weight.Draw(t, label); w >= 0 {
				n = weighted(n, w)
			}
			return n
		}
		names := []string{"a", "b", "x"}
		nodes := []quota.NodeSpec{cohort("c", "", int64(rapid.IntRange(0, 2).Draw(t, "nomC")))}
		for _, q := range names {
			nodes = append(nodes, spec(queue(q, "c", rapid.SampledFrom([]int64{0, 2, 4}).Draw(t, "nom"+q), rules), "weight"+q))
		}
		u := &unitEnv{env: newEnv(t, 1, 1, 64, 1, nodes...)}
		// Work as admission would leave it: each fits its queue's quota
		// (borrowing included) when it starts, so the cohort fills up.
		for i := range rapid.IntRange(1, 14).Draw(t, "running") {
			q := rapid.SampledFrom([]string{"a", "b", "b", "x", "x"}).Draw(t, "queue")
			age := time.Duration(rapid.IntRange(1, 60).Draw(t, "age")) * time.Minute
			gpus := rapid.IntRange(1, 3).Draw(t, "gpus")
			if !u.tree.Fits(u.q(q), 0, int64(gpus)).Fits() {
				continue
			}
			nodes, ones := make([]int, gpus), make([]int, gpus)
			for j := range nodes {
				nodes[j], ones[j] = u.next, 1
				u.next++
			}
			r := u.run(fmt.Sprintf("w%d", i), q, int32(rapid.IntRange(0, 3).Draw(t, "prio")), age, nodes, ones)
			r.Preemptible = rapid.IntRange(0, 4).Draw(t, "preemptible") > 0
			r.MinRuntime = time.Duration(rapid.IntRange(0, 3).Draw(t, "minRuntime")) * 10 * time.Minute
			r.Draining = rapid.IntRange(0, 6).Draw(t, "draining") == 0
		}
		prio := int32(rapid.IntRange(1, 3).Draw(t, "reqPrio"))
		need := rapid.IntRange(1, 6).Draw(t, "need")
		strategies := rapid.SampledFrom([][]preempt.FairSharingStrategy{nil,
			{preempt.LessThanOrEqualToFinalShare}, {preempt.LessThanInitialShare},
			{preempt.LessThanOrEqualToFinalShare, preempt.LessThanInitialShare}}).Draw(t, "strategies")

		req := u.req("new", "a", prio, need, 1, "")
		req.FairSharing = true
		ref := &fairRef{tree: u.tree.Clone(), preemptor: u.q("a"), need: int64(need), strategies: strategies,
			cands: map[quota.NodeID][]fairC{}}
		if ref.strategies == nil {
			ref.strategies = []preempt.FairSharingStrategy{preempt.LessThanOrEqualToFinalShare, preempt.LessThanInitialShare}
		}
		cost := preempt.DefaultCost{RestartOverhead: 3 * time.Minute}
		for _, q := range names {
			ref.queues = append(ref.queues, u.q(q))
		}
		for i := range u.running {
			r := &u.running[i]
			other := r.Queue != ref.preemptor
			switch {
			case !r.Draining && (!r.Preemptible || req.Now.Before(r.Started.Add(r.MinRuntime))):
				continue
			case !other && (rules.WithinQueue == quota.WithinQueueNever || r.W.Priority >= prio):
				continue
			case other && (rules.ReclaimWithinCohort == quota.ReclaimLowerPriority && r.W.Priority >= prio ||
				u.tree.Borrowed(r.Queue, 0) <= 0):
				continue
			}
			ref.cands[r.Queue] = append(ref.cands[r.Queue], fairC{id: r.W.ID, queue: r.Queue, gpus: int64(gpusOfTest(r.Nodes)),
				prio: r.W.Priority, draining: r.Draining, other: other, cost: cost.Cost(r, req.Now)})
		}
		for _, cs := range ref.cands {
			slices.SortFunc(cs, fairC.before)
		}
		want, wantOK := ref.run()

		p, err := preempt.NewSearcher(preempt.Options{FairSharingStrategies: strategies}).Victims(u.view(), req, nil)
		if !wantOK {
			require.ErrorIs(t, err, preempt.ErrNoPlan, "the plain walk finds no plan; ours: %v", ids(p))
			return
		}
		require.NoError(t, err, "the plain walk finds %v", want)
		got := ids(p)
		slices.Sort(got)
		require.Equal(t, want, got)
	})
}
