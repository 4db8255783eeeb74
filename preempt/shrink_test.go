package preempt_test

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// makeElastic turns some running workloads of e into elastic ones of
// 1-GPU pods with a drawn minimum: the pods above it, last first, are
// what they may give up.
func makeElastic(t *rapid.T, e *env) {
	for i := range e.running {
		r := &e.running[i]
		if rapid.IntRange(0, 5).Draw(t, "elastic") == 0 {
			continue
		}
		var pods []placement.Pod
		for _, x := range r.Nodes {
			for range x.GPUs {
				pods = append(pods, placement.Pod{PodSet: 0, Index: len(pods), Node: x.Node, GPUs: 1})
			}
		}
		minPods := rapid.IntRange(1, len(pods)).Draw(t, "min")
		if minPods == len(pods) {
			continue // at its minimum: it cannot shrink
		}
		r.Shrinkable = slices.Clone(pods)
		slices.Reverse(r.Shrinkable)
		r.Keep = []int{minPods}
	}
}

// fitsFreeing reports whether req fits in quota (in the plan's mode) and
// in topology once the given GPUs are freed, per workload, on clones.
func fitsFreeing(e *env, req preempt.Request, freed map[string][]placement.NodeGPUs, allowBorrow bool) bool {
	f, tree := e.f.Clone(), e.tree.Clone()
	for _, r := range e.running {
		nodes, ok := freed[r.W.ID]
		if !ok {
			continue
		}
		for _, x := range nodes {
			if err := f.Release(x.Node, x.GPUs); err != nil {
				panic(err)
			}
		}
		if err := tree.RemoveUsage(r.Queue, r.Flavor, int64(gpusOfTest(nodes))); err != nil {
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

func podGPUs(pods []placement.Pod) []placement.NodeGPUs {
	return placement.Assignment{Pods: pods}.NodeGPUs()
}

// With elastic candidates, a plan is the plan the search makes without
// them (same victims, same order, same rules) where every victim that
// can shrink gives up only pods the request needs: the plan fits, no pod
// it gives up could be kept, no victim could go, a victim evicted whole
// could not have shrunk instead, and it never costs more.
func TestShrinkProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, exclude := instance(t, rapid.Bool().Draw(t, "single"))
		whole, errWhole := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		makeElastic(t, e)
		beforeF := e.f.String()
		var beforeT bytesOf
		beforeT.read(e.tree)
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, exclude)
		require.Equal(t, beforeF, e.f.String())
		var afterT bytesOf
		afterT.read(e.tree)
		require.Equal(t, beforeT, afterT)
		require.Equal(t, errWhole == nil, err == nil, "a plan exists with shrinks iff one exists without")
		if err != nil {
			return
		}
		require.Equal(t, ids(whole), ids(p), "the same victims, in the same order")
		require.LessOrEqual(t, p.LostGPUSeconds, whole.LostGPUSeconds+1e-6)
		byID := map[string]*preempt.Running{}
		for i := range e.running {
			byID[e.running[i].W.ID] = &e.running[i]
		}
		freed := map[string][]placement.NodeGPUs{}
		for id := range exclude {
			freed[id] = byID[id].Nodes
		}
		for j, v := range p.Victims {
			r := byID[v.ID]
			require.Equal(t, whole.Victims[j].Reason, v.Reason)
			if v.Shrink() {
				require.NotEmpty(t, r.Shrinkable, "%s shrinks", v.ID)
				for _, pod := range v.Pods {
					require.Contains(t, r.Shrinkable, pod, "%s gives up a pod it may", v.ID)
				}
				require.Equal(t, gpusOfTest(podGPUs(v.Pods)), v.GPUs)
				require.Equal(t, podGPUs(v.Pods), v.Nodes)
				freed[v.ID] = podGPUs(v.Pods)
			} else {
				require.Equal(t, gpusOfTest(r.Nodes), v.GPUs, "whole gang")
				freed[v.ID] = r.Nodes
			}
		}
		require.True(t, fitsFreeing(e, req, freed, p.Borrowing), "fits without the victims' pods")
		for _, v := range p.Victims {
			r := byID[v.ID]
			all := freed[v.ID]
			delete(freed, v.ID)
			require.False(t, fitsFreeing(e, req, freed, p.Borrowing), "1-minimal: %s is not needed", v.ID)
			if v.Shrink() {
				for i := range v.Pods {
					freed[v.ID] = podGPUs(slices.Delete(slices.Clone(v.Pods), i, i+1))
					require.False(t, fitsFreeing(e, req, freed, p.Borrowing), "pod-minimal: %s could keep %+v", v.ID, v.Pods[i])
				}
			} else if len(r.Shrinkable) > 0 && !r.Draining {
				// Keeping its last-preferred pods to give up, as many as
				// it must keep, does not fit either.
				freed[v.ID] = podGPUs(r.Shrinkable[:len(r.Shrinkable)-r.Keep[0]])
				require.False(t, fitsFreeing(e, req, freed, p.Borrowing), "%s evicted whole, could have shrunk", v.ID)
			}
			freed[v.ID] = all
		}
	})
}

// TestShrinkAgainstBruteForce extends the brute-force comparison to
// shrinkable candidates, on one queue where every rule is static: each
// allowed candidate may stay, give up its first k shrinkable pods, or go
// whole. A plan exists iff some such choice fits, and ours is no worse
// than Kueue's greedy-then-fill-back baseline of whole evictions (lowest
// highest victim priority, then cost).
func TestShrinkAgainstBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, _ := instance(t, true)
		makeElastic(t, e)
		var allowed []*preempt.Running
		for i := range e.running {
			r := &e.running[i]
			if (r.Draining || r.Preemptible && !req.Now.Before(r.Started.Add(r.MinRuntime))) && r.W.Priority < req.W.Priority {
				allowed = append(allowed, r)
			}
		}
		// Each allowed candidate: 0 stays, k in 1..len(Shrinkable)-Keep
		// gives up its first k pods, beyond that it goes whole.
		choices := make([]int, len(allowed))
		exists := false
		var walk func(i int)
		walk = func(i int) {
			if exists {
				return
			}
			if i == len(allowed) {
				freed := map[string][]placement.NodeGPUs{}
				for j, r := range allowed {
					switch k := choices[j]; {
					case k == 0:
					case len(r.Keep) > 0 && k <= len(r.Shrinkable)-r.Keep[0] && !r.Draining:
						freed[r.W.ID] = podGPUs(r.Shrinkable[:k])
					default:
						freed[r.W.ID] = r.Nodes
					}
				}
				exists = fitsFreeing(e, req, freed, true)
				return
			}
			shrinks := 0
			if r := allowed[i]; len(r.Shrinkable) > 0 {
				shrinks = len(r.Shrinkable) - r.Keep[0]
			}
			for k := 0; k <= shrinks+1; k++ {
				choices[i] = k
				walk(i + 1)
			}
		}
		if len(allowed) <= 6 {
			walk(0)
		} else {
			exists = fitsFreeing(e, req, allWhole(allowed), true)
		}
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
		require.Equal(t, exists, err == nil, "brute force %v, ours %v", exists, err)
		if err != nil {
			return
		}
		gMax, gCost := greedyBaseline(e, req, allowed)
		var oMax int32 = -1
		for _, v := range p.Victims {
			oMax = max(oMax, v.Priority)
		}
		require.True(t, oMax < gMax || oMax == gMax && p.LostGPUSeconds <= gCost+1e-6,
			"ours (%d, %.0f) worse than greedy (%d, %.0f)", oMax, p.LostGPUSeconds, gMax, gCost)
	})
}

// greedyBaseline is Kueue's walk with whole evictions: the eviction
// order, remove until it fits, fill back; it returns the set's highest
// priority and cost.
func greedyBaseline(e *env, req preempt.Request, allowed []*preempt.Running) (int32, float64) {
	cost := preempt.DefaultCost{RestartOverhead: 3 * time.Minute}
	order := slices.Clone(allowed)
	slices.SortFunc(order, func(a, b *preempt.Running) int {
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
	gone := map[string][]placement.NodeGPUs{}
	var picked []*preempt.Running
	for _, r := range order {
		if fitsFreeing(e, req, gone, true) {
			break
		}
		gone[r.W.ID] = r.Nodes
		picked = append(picked, r)
	}
	for i := len(picked) - 1; i >= 0; i-- {
		delete(gone, picked[i].W.ID)
		if !fitsFreeing(e, req, gone, true) {
			gone[picked[i].W.ID] = picked[i].Nodes
		}
	}
	var gMax int32 = -1
	gCost := 0.0
	for _, r := range order {
		if _, ok := gone[r.W.ID]; ok {
			gMax = max(gMax, r.W.Priority)
			gCost += cost.Cost(r, req.Now)
		}
	}
	return gMax, gCost
}

func allWhole(rs []*preempt.Running) map[string][]placement.NodeGPUs {
	out := map[string][]placement.NodeGPUs{}
	for _, r := range rs {
		out[r.W.ID] = r.Nodes
	}
	return out
}

// An elastic victim of 4 one-GPU pods (minimum 1) on a full node gives
// up the one pod a 1-GPU request needs, priced by that pod alone.
func TestShrinkGivesUpOnlyWhatIsNeeded(t *testing.T) {
	e := newEnv(t, 1, 1, 1, 4, queue("a", "", 4, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}))
	r := e.run("batch", "a", 0, time.Hour, []int{0}, []int{4})
	for i := range 4 {
		r.Shrinkable = append(r.Shrinkable, placement.Pod{PodSet: 0, Index: 3 - i, Node: 0, GPUs: 1})
	}
	r.Keep = []int{1}
	whole := *r
	whole.Shrinkable, whole.Keep = nil, nil
	req := e.req("new", "a", 5, 1, 1, "")
	p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.Len(t, p.Victims, 1)
	v := p.Victims[0]
	require.True(t, v.Shrink())
	require.Equal(t, []placement.Pod{{PodSet: 0, Index: 3, Node: 0, GPUs: 1}}, v.Pods)
	require.Equal(t, 1, v.GPUs)
	full := preempt.DefaultCost{RestartOverhead: 3 * time.Minute}.Cost(&whole, t0)
	require.InDelta(t, full/4, v.Cost, 1e-6, "the lost work of one pod of four")
	require.InDelta(t, v.Cost, p.LostGPUSeconds, 1e-6)

	req = e.req("new", "a", 5, 1, 4, "")
	p, err = preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.Len(t, p.Victims, 1)
	require.False(t, p.Victims[0].Shrink(), "4 GPUs need it whole: its minimum pod sits on them")
}

func TestIndexRefusesShrinkablePodsOffItsNodes(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 4, queue("a", "", 8, quota.Rules{}))
	r := e.run("w", "a", 0, time.Hour, []int{0}, []int{4})
	x := preempt.NewIndex(e.f, e.tree)
	for name, pods := range map[string][]placement.Pod{
		"off its nodes": {{Node: 1, GPUs: 1}},
		"every GPU":     {{Node: 0, GPUs: 2}, {Node: 0, GPUs: 2}},
		"other pod set": {{PodSet: 1, Node: 0, GPUs: 1}},
		"more GPUs":     {{Node: 0, GPUs: 5}},
	} {
		bad := *r
		bad.Shrinkable, bad.Keep = pods, []int{0}
		require.ErrorIs(t, x.Add(bad), preempt.ErrInvalid, name)
	}
	bad := *r
	bad.Shrinkable, bad.Keep = []placement.Pod{{Node: 0, GPUs: 4}}, []int{0}
	require.ErrorIs(t, x.Add(bad), preempt.ErrInvalid, "keeps nothing")
	ok := *r
	ok.Shrinkable, ok.Keep = []placement.Pod{{Node: 0, GPUs: 2}, {Node: 0, GPUs: 2}}, []int{1}
	require.NoError(t, x.Add(ok))
}
