package preempt_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/internal/draw"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// instance draws a small fleet (2 leaves x 2 nodes x 4 GPUs), a tree of
// queues a (the preemptor's), b and x under one cohort (or a alone with
// single), running work and a request.
func instance(t *rapid.T, single bool) (*env, preempt.Request, map[string]bool) {
	return drawInstance(t, draw.Rapid(t), single, []int{1, 2, 2}, 4)
}

// drawInstance is instance drawn from d, on a fleet of fanout spines,
// leaves per spine and nodes per leaf, of gpus GPUs each.
func drawInstance(t require.TestingT, d draw.Drawer, single bool, fanout []int, gpus int) (*env, preempt.Request, map[string]bool) {
	rules := quota.Rules{
		WithinQueue:         quota.WithinQueue(d.IntRange(0, 2, "within")),
		ReclaimWithinCohort: quota.ReclaimWithinCohort(d.IntRange(0, 2, "reclaim")),
	}
	// borrowWithinCohort needs reclaimWithinCohort, as in Kueue.
	if draw.Bool(d, "bwc") && rules.ReclaimWithinCohort != quota.ReclaimNever {
		th := int32(d.IntRange(0, 5, "threshold"))
		rules.BorrowWithinCohort = quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}
	}
	var nodes []quota.NodeSpec
	queues := []string{"a"}
	if single {
		rules = quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}
		nodes = append(nodes, queue("a", "", int64(d.IntRange(4, 16, "nomA")), rules))
	} else {
		nodes = append(nodes, cohort("c", "", int64(d.IntRange(0, 8, "nomC"))),
			queue("a", "c", int64(d.IntRange(0, 8, "nomA")), rules),
			queue("b", "c", int64(d.IntRange(0, 8, "nomB")), lower),
			queue("x", "c", int64(d.IntRange(0, 8, "nomX")), lower))
		queues = append(queues, "b", "x")
	}
	e := newEnv(t, fanout[0], fanout[1], fanout[2], gpus, nodes...)
	nodeCount := e.f.NumNodes()
	n := d.IntRange(2, 12, "running")
	for i := range n {
		node := d.IntRange(0, nodeCount-1, "node")
		free := e.f.Free(topology.NodeID(node))
		if free == 0 {
			continue
		}
		g := d.IntRange(1, free, "gpus")
		ns, gs := []int{node}, []int{g}
		if node%2 == 0 && node+1 < nodeCount && g == gpus && e.f.Free(topology.NodeID(node+1)) == gpus && draw.Bool(d, "twoNodes") {
			ns, gs = []int{node, node + 1}, []int{gpus, gpus}
		}
		q := queues[d.IntRange(0, len(queues)-1, "queue")]
		age := time.Duration(d.IntRange(1, 60, "age")) * time.Minute
		r := e.run(fmt.Sprintf("w%d", i), q, int32(d.IntRange(0, 4, "prio")), age, ns, gs)
		r.Preemptible = d.IntRange(0, 4, "preemptible") > 0
		r.MinRuntime = time.Duration(d.IntRange(0, 3, "minRuntime")) * 10 * time.Minute
		r.Draining = d.IntRange(0, 9, "draining") == 0
	}
	req := e.req("new", "a", int32(d.IntRange(2, 6, "reqPrio")),
		d.IntRange(1, 3, "pods"), draw.Pick(d, []int{1, 2, 4, 4}, "perPod"),
		draw.Pick(d, []string{"", "leaf", "node"}, "required"))
	if !single {
		req.FairSharing = d.IntRange(0, 3, "fair") == 0
	}
	exclude := map[string]bool{}
	for i := range e.running {
		if !single && d.IntRange(0, 6, "exclude") == 0 {
			exclude[e.running[i].W.ID] = true
		}
	}
	return e, req, exclude
}

// fitsWithout reports whether req fits in quota (in the plan's mode) and
// in topology once the given workloads are gone, on clones.
func fitsWithout(e *env, req preempt.Request, gone map[string]bool, allowBorrow bool) bool {
	f, tree := e.f.Clone(), e.tree.Clone()
	for _, r := range e.running {
		if !gone[r.W.ID] {
			continue
		}
		for _, x := range r.Nodes {
			if err := f.Release(x.Node, x.GPUs); err != nil {
				panic(err)
			}
		}
		if err := tree.RemoveUsage(r.Queue, r.Flavor, int64(gpusOfTest(r.Nodes))); err != nil {
			panic(err)
		}
	}
	v := tree.Fits(req.Queue, req.Flavor, int64(req.W.GPUs()))
	if !v.Fits() || !allowBorrow && v.Borrowing() {
		return false
	}
	_, err := placement.Place(f, req.W, placement.Options{})
	return err == nil
}

func gpusOfTest(ns []placement.NodeGPUs) int {
	g := 0
	for _, x := range ns {
		g += x.GPUs
	}
	return g
}

func TestVictimsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, exclude := instance(t, rapid.Bool().Draw(t, "single"))
		beforeF := e.f.String()
		var beforeT bytesOf
		beforeT.read(e.tree)
		s := preempt.NewSearcher(preempt.Options{})
		p, err := s.Victims(e.view(), req, exclude)
		require.Equal(t, beforeF, e.f.String())
		var afterT bytesOf
		afterT.read(e.tree)
		require.Equal(t, beforeT, afterT)
		p2, err2 := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		require.Equal(t, err == nil, err2 == nil)
		require.Equal(t, p, p2, "deterministic")
		if err != nil {
			require.ErrorIs(t, err, preempt.ErrNoPlan)
			return
		}
		byID := map[string]*preempt.Running{}
		for i := range e.running {
			byID[e.running[i].W.ID] = &e.running[i]
		}
		gone := map[string]bool{}
		for id := range exclude {
			gone[id] = true
		}
		for _, v := range p.Victims {
			r := byID[v.ID]
			require.NotNil(t, r)
			require.False(t, exclude[v.ID], "excluded victim %s", v.ID)
			require.False(t, gone[v.ID], "repeated victim %s", v.ID)
			require.Equal(t, gpusOfTest(r.Nodes), v.GPUs, "whole gang")
			require.True(t, r.Draining || r.Preemptible && !req.Now.Before(r.Started.Add(r.MinRuntime)), "drain contract %s", v.ID)
			rules := e.tree.Rules(req.Queue)
			if r.Queue == req.Queue {
				require.Equal(t, preempt.InQueue, v.Reason)
				require.NotEqual(t, quota.WithinQueueNever, rules.WithinQueue)
				require.LessOrEqual(t, r.W.Priority, req.W.Priority)
			} else {
				require.NotEqual(t, quota.ReclaimNever, rules.ReclaimWithinCohort)
			}
			gone[v.ID] = true
		}
		require.True(t, fitsWithout(e, req, gone, p.Borrowing), "fits without the victims")
		for _, v := range p.Victims {
			delete(gone, v.ID)
			require.False(t, fitsWithout(e, req, gone, p.Borrowing), "1-minimal: %s is not needed", v.ID)
			gone[v.ID] = true
		}
	})
}

// bytesOf is the tree's usage and borrowing, per node, for comparison.
type bytesOf []int64

func (b *bytesOf) read(t *quota.Tree) {
	for n := range quota.NodeID(t.NumNodes()) {
		*b = append(*b, t.InUse(n, 0), t.Usage(n, 0), t.Borrowed(n, 0))
	}
}

// TestVictimsAgainstBruteForce compares, on one queue where every rule is
// static, with every subset of the allowed candidates: a plan exists iff
// some subset fits, and ours is no worse than Kueue's greedy-then-fill-back
// baseline (lowest highest victim priority, work already draining below
// every priority, then cost).
func TestVictimsAgainstBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, _ := instance(t, true)
		// Fair sharing on a queue without a cohort takes its own work in
		// the same order.
		req.FairSharing = rapid.Bool().Draw(t, "fair")
		var allowed []*preempt.Running
		for i := range e.running {
			r := &e.running[i]
			if (r.Draining || r.Preemptible && !req.Now.Before(r.Started.Add(r.MinRuntime))) && r.W.Priority < req.W.Priority {
				allowed = append(allowed, r)
			}
		}
		exists := false
		for mask := 0; mask < 1<<len(allowed) && !exists; mask++ {
			gone := map[string]bool{}
			for i, r := range allowed {
				if mask&(1<<i) != 0 {
					gone[r.W.ID] = true
				}
			}
			exists = fitsWithout(e, req, gone, true)
		}
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
		require.Equal(t, exists, err == nil, "brute force %v, ours %v", exists, err)
		if err != nil {
			return
		}
		// Kueue's baseline: the same order, remove until it fits, then
		// fill back.
		cost := preempt.DefaultCost{RestartOverhead: 3 * time.Minute}
		slices.SortFunc(allowed, func(a, b *preempt.Running) int {
			if a.Draining != b.Draining {
				if a.Draining {
					return -1
				}
				return 1
			}
			if c := cmp.Compare(a.W.Priority, b.W.Priority); c != 0 {
				return c
			}
			if c := cmp.Compare(cost.Cost(a, req.Now), cost.Cost(b, req.Now)); c != 0 {
				return c
			}
			return cmp.Compare(a.W.ID, b.W.ID)
		})
		gone := map[string]bool{}
		var picked []*preempt.Running
		for _, r := range allowed {
			if fitsWithout(e, req, gone, true) {
				break
			}
			gone[r.W.ID] = true
			picked = append(picked, r)
		}
		for i := len(picked) - 1; i >= 0; i-- {
			delete(gone, picked[i].W.ID)
			if !fitsWithout(e, req, gone, true) {
				gone[picked[i].W.ID] = true
			}
		}
		// A victim ranks by its priority; work already draining stops
		// nothing new and ranks below every priority.
		byID := map[string]*preempt.Running{}
		for _, r := range allowed {
			byID[r.W.ID] = r
		}
		gMax, oMax := int64(math.MinInt64), int64(math.MinInt64)
		gCost := 0.0
		for _, r := range allowed {
			if gone[r.W.ID] {
				gMax = max(gMax, victimRank(r, true))
				gCost += cost.Cost(r, req.Now)
			}
		}
		for _, v := range p.Victims {
			r := byID[v.ID]
			require.NotNil(t, r, "victim %s is allowed", v.ID)
			oMax = max(oMax, victimRank(r, true))
		}
		require.True(t, oMax < gMax || oMax == gMax && p.LostGPUSeconds <= gCost+1e-6,
			"ours (%d, %.0f) worse than greedy (%d, %.0f)", oMax, p.LostGPUSeconds, gMax, gCost)
	})
}

// TestStaticOrderAgreesWithComparator checks the Index's packed key
// against the one comparator: within one queue (same side, same share),
// candidates of different bands are in the comparator's order, and
// within a band the comparator falls to cost, then ID, which is how the
// search sorts each band it fetches.
func TestStaticOrderAgreesWithComparator(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prios := rapid.SampledFrom([]int32{math.MinInt32, math.MinInt32 + 1, -1, 0, 1, 2, 99, math.MaxInt32 - 1, math.MaxInt32})
		item := func(label string) preempt.OrderItem {
			return preempt.OrderItem{
				Draining: rapid.Bool().Draw(t, label+"draining"),
				Prio:     prios.Draw(t, label+"prio"),
				Cost:     rapid.SampledFrom([]float64{0, 1, 2.5, 1e9}).Draw(t, label+"cost"),
				ID:       rapid.SampledFrom([]string{"a", "b", "c", "aa"}).Draw(t, label+"id"),
			}
		}
		a, b := item("a"), item("b")
		other := rapid.Bool().Draw(t, "other")
		a.Other, b.Other = other, other
		c := preempt.CompareOrder(a, b)
		if !preempt.SameBand(a, b) {
			require.Equal(t, c < 0, preempt.StaticLess(a, b), "%+v %+v", a, b)
			require.Equal(t, c > 0, preempt.StaticLess(b, a), "%+v %+v", a, b)
			return
		}
		require.Equal(t, cmp.Or(cmp.Compare(a.Cost, b.Cost), cmp.Compare(a.ID, b.ID)), c)
	})
}

// TestStreamsYieldTheEvictionOrder checks the lazy streams against a
// sort of every candidate by the eviction order: with DefaultCost (bands
// merged from one cursor per GPU count, priced a few at a time) and with
// a cost model the search knows nothing of (bands priced whole), on
// bands large enough to take several fetches, with work whose unsaved
// time starts after now (equal costs), checkpoints and draining work.
func TestStreamsYieldTheEvictionOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := newEnv(t, 1, 4, 4, 8, cohort("c", "", 0), queue("a", "c", 64, reclaimAny), queue("b", "c", 0, lower))
		n := rapid.IntRange(1, 60).Draw(t, "n")
		for i := range n {
			node := rapid.IntRange(0, 15).Draw(t, "node")
			free := e.f.Free(topology.NodeID(node))
			if free == 0 {
				continue
			}
			g := rapid.IntRange(1, min(free, 3)).Draw(t, "gpus")
			q := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "queue")
			age := time.Duration(rapid.IntRange(-2, 6).Draw(t, "age")) * time.Minute
			r := e.run(fmt.Sprintf("w%02d", i), q, int32(rapid.IntRange(0, 2).Draw(t, "prio")), age, []int{node}, []int{g})
			if rapid.Bool().Draw(t, "checkpointed") {
				w := r.W.Clone()
				w.Drain.LastCheckpoint = t0.Add(-time.Duration(rapid.IntRange(-1, 3).Draw(t, "ckpt")) * time.Minute)
				r.W = &w
			}
			r.Draining = rapid.IntRange(0, 5).Draw(t, "draining") == 0
		}
		req := e.req("new", "a", 10, 1, 1, "")
		for i, opt := range []preempt.Options{{}, {}, {Cost: perGPU{}}} {
			s := preempt.NewSearcher(opt)
			if i == 0 {
				preempt.SetWholeBand(s, 0)
			}
			cost := opt.Cost
			if cost == nil {
				cost = preempt.DefaultCost{RestartOverhead: 3 * time.Minute}
			}
			var want []preempt.OrderItem
			for i := range e.running {
				r := &e.running[i]
				if !r.Draining && req.Now.Before(r.Started.Add(r.MinRuntime)) {
					continue // not a candidate: not started MinRuntime ago
				}
				want = append(want, preempt.OrderItem{Draining: r.Draining, Other: r.Queue != req.Queue,
					Prio: r.W.Priority, Cost: cost.Cost(r, req.Now), ID: r.W.ID})
			}
			slices.SortFunc(want, preempt.CompareOrder)
			ids := []string{}
			for _, w := range want {
				ids = append(ids, w.ID)
			}
			got := preempt.StreamOrder(s, e.view(), req)
			if got == nil {
				got = []string{}
			}
			require.Equal(t, ids, got)
		}
	})
}

// TestNoPlanCountsEqualAWalkOfEveryWorkload: a NoPlan's candidate count
// and exclusions, found from per-queue numbers and a walk cut at each
// queue's highest candidate priority, equal the counts of every indexed
// workload by the rule that excludes it, elastic work included.
func TestNoPlanCountsEqualAWalkOfEveryWorkload(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, exclude := instance(t, rapid.Bool().Draw(t, "single"))
		if rapid.Bool().Draw(t, "elastic") {
			makeElastic(t, e)
		}
		_, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		walker := preempt.NewSearcher(preempt.Options{})
		preempt.SetExplainByWalk(walker)
		_, errWalk := walker.Victims(e.view(), req, exclude)
		var np, walked *preempt.NoPlan
		if !errors.As(err, &np) {
			require.NoError(t, errWalk)
			return
		}
		require.ErrorAs(t, errWalk, &walked)
		require.Equal(t, walked, np)
	})
}
