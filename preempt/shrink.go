package preempt

import (
	"slices"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Shrinking elastic victims.
//
// A running workload that can shrink (Running.Shrinkable beyond
// Running.Keep) is two candidates to the search (see cand): its surplus,
// the pods it gives up first down to its minimum, ranked as a shrink and
// priced by those pods' lost work alone; and its rest, ranked as the
// whole eviction it completes. At one priority the eviction order takes
// surpluses before whole evictions, and a set's highest rank puts a
// shrink below an eviction, so the search's choice itself prefers
// shrinking to evicting, while lower priority still goes first.
//
// Once a search has a victim set that makes room, each victim of the set
// that can shrink, in eviction order, keeps back every pod the request
// does not need:
//
//   - a surplus taken alone (the workload shrinks) keeps back its surplus
//     pods one by one, the last it would give up first, each only if the
//     request still fits: it gives up some of its surplus, never below
//     its minimum;
//   - a workload taken whole (its rest is needed: giving up its surplus
//     alone does not make room) first keeps the pods it cannot give up
//     (those of pod sets that are not elastic): if the request no longer
//     fits, it is evicted whole. Then it keeps its elastic pods one by
//     one, the last it would give up first, each only if the request
//     still fits; if it ends with fewer pods of a pod set than
//     Running.Keep, it is evicted whole. Any of its pods may go: it keeps
//     those on nodes the request does not need. A workload on one node
//     with pods of one size has no such choice (any pods it keeps are as
//     good as its rest) and goes whole at once.
//
// So a shrink frees a subset of what the set freed, and:
//
//   - the plan still fits: every kept pod is checked with quota and a
//     placement on the scratch fleet, and the target is placed after;
//   - the victims are the same workloads, chosen under the same rules;
//   - it stays minimal: keeping any more pods of a shrunk victim, or
//     dropping any victim, makes the request not fit (fitting is monotone
//     in what is freed, and a pod that could not be kept back cannot be
//     kept once others have been);
//   - its cost is the lost work of the pods given up, by the CostModel
//     asked about those pods alone, never more than its surplus or than
//     evicting whole.
//
// The keep-back is greedy: a victim whose pods the request needs in
// another combination may be evicted whole where a different choice of
// kept pods would have met its minimum.

// shrinkWalk is what the call decided about shrinking the taken victims.
type shrinkWalk struct {
	yields    [][]placement.Pod    // per taken victim: the pods it gives up, nil for whole
	keptBack  []placement.NodeGPUs // GPUs allocated back on the scratch fleet, to undo
	keptUsage []keptUsage          // usage added back to the tree, to undo
	podBuf    []placement.NodeGPUs
	keptCount []int                // per pod set: pods still to keep to reach Running.Keep
	refused   []placement.NodeGPUs // pods of the victim that could not be kept back
	yieldBuf  []placement.Pod      // the pods given up, per victim in s.yields
}

type keptUsage struct {
	c    *cand
	gpus int64
}

// shrinkTaken turns the taken victims that can shrink into shrinks where
// the request still fits, with the taken victims' GPUs released on the
// scratch fleet and their usage removed from the tree. It reports whether
// any victim shrinks; undoShrinks puts the scratch fleet and the tree back.
func (s *Searcher) shrinkTaken(allowBorrow bool) bool {
	s.listVictims()
	s.yields = slices.Grow(s.yields[:0], len(s.victims))[:len(s.victims)]
	clear(s.yields)
	s.yieldBuf = s.yieldBuf[:0]
	s.keptBack, s.keptUsage = s.keptBack[:0], s.keptUsage[:0]
	any := false
	for j, ci := range s.victims {
		c := &s.cands[ci]
		pods := c.run.Shrinkable
		if len(pods) == 0 || c.draining {
			continue
		}
		if c.part == surplusPart && !s.cands[ci+1].taken {
			s.yields[j] = s.keepSurplus(c, allowBorrow)
			any = true
			continue
		}
		if c.part != surplusPart || s.sameAsSurplus(c) {
			// At its minimum already, or any pods it could keep are as
			// good as its rest, which the set needs: it goes whole.
			continue
		}
		mark := len(s.keptBack)
		usageMark := len(s.keptUsage)
		// The pods it cannot give up: its Nodes less its shrinkable pods.
		core := append(s.podBuf[:0], c.run.Nodes...)
		for _, p := range pods {
			core = takeFrom(core, p.Node, p.GPUs)
		}
		s.podBuf = core
		if !s.keepBack(c, core) || !s.fitsShrunk(allowBorrow) {
			s.undoShrinksFrom(mark, usageMark)
			continue
		}
		// Pods given up go to a buffer reused across calls (applyShrinks
		// copies those of the plan).
		start := len(s.yieldBuf)
		kept := append(s.keptCount[:0], c.run.Keep...)
		// The scratch fleet counts GPUs per node: once a pod of g GPUs on
		// node n cannot be kept, no pod of g or more there can.
		s.keepSurplusPods(c, pods, func() bool { return s.fitsShrunk(allowBorrow) }, kept)
		yielded := s.yieldBuf[start:len(s.yieldBuf):len(s.yieldBuf)]
		s.keptCount = kept
		if slices.ContainsFunc(kept, func(k int) bool { return k > 0 }) {
			// Fewer pods than a pod set's minimum: it goes whole.
			s.undoShrinksFrom(mark, usageMark)
			s.yieldBuf = s.yieldBuf[:start]
			continue
		}
		if len(yielded) == 0 {
			// It fits with every pod kept: a fill-back would have
			// dropped it; keep it a victim of one pod rather than
			// change the set.
			last := pods[0]
			s.releaseKept(c, []placement.NodeGPUs{{Node: last.Node, GPUs: last.GPUs}})
			s.yieldBuf = append(s.yieldBuf, last)
			yielded = s.yieldBuf[start:len(s.yieldBuf):len(s.yieldBuf)]
		}
		slices.Reverse(yielded) // the order it gives them up
		s.yields[j] = yielded
		any = true
	}
	return any
}

// sameAsSurplus reports whether every choice of the pods surplus c's
// workload may give up frees what its surplus does: all its GPUs on one
// node, all its shrinkable pods of one size. Its rest was needed, so no
// such choice fits.
func (s *Searcher) sameAsSurplus(c *cand) bool {
	if len(c.run.Nodes) != 1 {
		return false
	}
	g := c.run.Shrinkable[0].GPUs
	for _, p := range c.run.Shrinkable {
		if p.GPUs != g {
			return false
		}
	}
	return true
}

// keepSurplus keeps back the surplus pods of c, taken alone, that the
// request does not need, the last it would give up first, and returns
// the pods it gives up, in the order it gives them up (one at least: the
// set needs its surplus). On the fast path the pods are kept back by the
// simulation's counts and one placement checks the result; should it
// fail, they are kept back again pod by pod, each checked by a placement.
func (s *Searcher) keepSurplus(c *cand, allowBorrow bool) []placement.Pod {
	pods := s.index.entries[c.entry].parts.pods
	start := len(s.yieldBuf)
	m, um := len(s.keptBack), len(s.keptUsage)
	counted := s.shape.fast
	if counted {
		s.keepSurplusPods(c, pods, func() bool { return s.quotaOK(allowBorrow) && s.topologyOK() }, nil)
		if len(s.keptBack) > m && !s.fitsShrunk(allowBorrow) {
			s.undoShrinksFrom(m, um)
			s.yieldBuf = s.yieldBuf[:start]
			counted = false
		}
	}
	if !counted {
		s.keepSurplusPods(c, pods, func() bool { return s.fitsShrunk(allowBorrow) }, nil)
	}
	if len(s.yieldBuf) == start {
		// It fits with every surplus pod kept: keep it a victim of one
		// pod rather than change the set.
		first := pods[0]
		s.releaseKept(c, []placement.NodeGPUs{{Node: first.Node, GPUs: first.GPUs}})
		s.yieldBuf = append(s.yieldBuf, first)
	}
	yielded := s.yieldBuf[start:len(s.yieldBuf):len(s.yieldBuf)]
	slices.Reverse(yielded) // the order it gives them up
	return yielded
}

// keepSurplusPods keeps back each of pods, the last first, while fits
// says the request still fits, lists those it cannot keep in s.yieldBuf,
// and counts those it keeps off kept (per pod set; nil: not counted).
func (s *Searcher) keepSurplusPods(c *cand, pods []placement.Pod, fits func() bool, kept []int) {
	refused := s.refused[:0]
	for _, p := range slices.Backward(pods) {
		if slices.ContainsFunc(refused, func(x placement.NodeGPUs) bool { return x.Node == p.Node && p.GPUs >= x.GPUs }) {
			s.yieldBuf = append(s.yieldBuf, p)
			continue
		}
		one := [1]placement.NodeGPUs{{Node: p.Node, GPUs: p.GPUs}}
		m, um := len(s.keptBack), len(s.keptUsage)
		if s.keepBack(c, one[:]) && fits() {
			if p.PodSet >= 0 && p.PodSet < len(kept) {
				kept[p.PodSet]--
			}
			continue
		}
		s.undoShrinksFrom(m, um)
		s.yieldBuf = append(s.yieldBuf, p)
		refused = append(refused, one[0])
	}
	s.refused = refused
}

// fitsShrunk reports whether the request fits in quota and on the
// scratch fleet as it stands. On the fast path the simulation's counts
// (kept equal to the scratch fleet by keepBack and its undo) answer no
// first where they can: what they cannot hold no placement holds.
func (s *Searcher) fitsShrunk(allowBorrow bool) bool {
	if !s.quotaOK(allowBorrow) || s.shape.fast && !s.topologyOK() {
		return false
	}
	_, err := s.place()
	return err == nil
}

// keepBack charges c's usage and allocates on the scratch fleet the GPUs
// of nodes again, recording both for undoShrinksFrom.
func (s *Searcher) keepBack(c *cand, nodes []placement.NodeGPUs) bool {
	g := 0
	for _, x := range nodes {
		if x.GPUs == 0 {
			continue
		}
		if !s.releaseOn(x.Node, -x.GPUs) {
			return false
		}
		s.free(x.Node, -x.GPUs)
		s.keptBack = append(s.keptBack, x)
		g += x.GPUs
	}
	if g > 0 {
		if err := s.tree.AddUsage(c.run.Queue, s.flavor, int64(g)); err != nil {
			panic("preempt: keeping back the usage of a shrunk victim: " + err.Error())
		}
		s.keptUsage = append(s.keptUsage, keptUsage{c, int64(g)})
	}
	return true
}

// releaseKept releases again GPUs kept back for c (the undo of one
// keepBack), forgetting nothing: undoShrinks still sees the net.
func (s *Searcher) releaseKept(c *cand, nodes []placement.NodeGPUs) {
	g := 0
	for _, x := range nodes {
		if !s.releaseOn(x.Node, x.GPUs) {
			panic("preempt: the scratch fleet refused GPUs it gave back")
		}
		s.free(x.Node, x.GPUs)
		s.keptBack = append(s.keptBack, placement.NodeGPUs{Node: x.Node, GPUs: -x.GPUs})
		g += x.GPUs
	}
	if err := s.tree.RemoveUsage(c.run.Queue, s.flavor, int64(g)); err != nil {
		panic("preempt: releasing the usage of a shrunk victim: " + err.Error())
	}
	s.keptUsage = append(s.keptUsage, keptUsage{c, -int64(g)})
}

// undoShrinksFrom undoes the keep-backs recorded after the marks.
func (s *Searcher) undoShrinksFrom(mark, usageMark int) {
	for _, x := range slices.Backward(s.keptBack[mark:]) {
		if !s.releaseOn(x.Node, x.GPUs) {
			panic("preempt: the scratch fleet refused GPUs it gave back")
		}
		s.free(x.Node, x.GPUs)
	}
	s.keptBack = s.keptBack[:mark]
	for _, u := range slices.Backward(s.keptUsage[usageMark:]) {
		var err error
		if u.gpus > 0 {
			err = s.tree.RemoveUsage(u.c.run.Queue, s.flavor, u.gpus)
		} else {
			err = s.tree.AddUsage(u.c.run.Queue, s.flavor, -u.gpus)
		}
		if err != nil {
			panic("preempt: undoing a shrink's usage: " + err.Error())
		}
	}
	s.keptUsage = s.keptUsage[:usageMark]
}

// undoShrinks puts the scratch fleet and the tree back as the taken
// victims left them.
func (s *Searcher) undoShrinks() { s.undoShrinksFrom(0, 0) }

// applyShrinks makes the plan's shrunk victims give up their pods only,
// priced by those pods' lost work.
func (s *Searcher) applyShrinks(p *Plan) {
	// The plan's pods and GPUs per node of every shrink share two
	// allocations.
	total := 0
	for j := range p.Victims {
		if j < len(s.yields) {
			total += len(s.yields[j])
		}
	}
	allPods := make([]placement.Pod, 0, total)
	allNodes := make([]placement.NodeGPUs, total)
	for j := range p.Victims {
		if j >= len(s.yields) || s.yields[j] == nil {
			continue
		}
		v := &p.Victims[j]
		c := &s.cands[s.victims[j]]
		pods := s.yields[j]
		nodes := allNodes[:0:len(pods)]
		allNodes = allNodes[len(pods):]
		g := 0
		for _, x := range pods {
			nodes = addTo(nodes, x.Node, x.GPUs)
			g += x.GPUs
		}
		nodes = nodes[:len(nodes):len(nodes)]
		start := len(allPods)
		allPods = append(allPods, pods...)
		cost := s.partCost(c.run, nodes)
		p.LostGPUSeconds += cost - v.Cost
		v.Pods, v.Nodes, v.GPUs, v.Cost = allPods[start:len(allPods):len(allPods)], nodes, g, cost
	}
	clear(s.yields)
	s.yields = s.yields[:0]
}

// takeFrom removes g GPUs of node n from a list of GPUs per node.
func takeFrom(list []placement.NodeGPUs, n topology.NodeID, g int) []placement.NodeGPUs {
	for i := range list {
		if list[i].Node == n {
			d := min(g, list[i].GPUs)
			list[i].GPUs -= d
			g -= d
			if g == 0 {
				break
			}
		}
	}
	return list
}

// addTo adds g GPUs of node n to a list kept in node order.
func addTo(list []placement.NodeGPUs, n topology.NodeID, g int) []placement.NodeGPUs {
	i, found := slices.BinarySearchFunc(list, n, func(x placement.NodeGPUs, n topology.NodeID) int { return int(x.Node) - int(n) })
	if found {
		list[i].GPUs += g
		return list
	}
	return slices.Insert(list, i, placement.NodeGPUs{Node: n, GPUs: g})
}

// checkShrinkable returns what is wrong with r's shrinkable pods ("" for
// nothing): each must be on a node of r.Nodes within the GPUs r holds
// there, of a pod set Keep covers, and Keep must leave one pod at least.
func checkShrinkable(r Running) string {
	if len(r.Shrinkable) == 0 {
		return ""
	}
	left := slices.Clone(r.Nodes)
	total := gpusOf(r.Nodes)
	pods := make([]int, len(r.Keep))
	for _, p := range r.Shrinkable {
		i := slices.IndexFunc(left, func(x placement.NodeGPUs) bool { return x.Node == p.Node })
		if p.GPUs <= 0 || i < 0 || left[i].GPUs < p.GPUs {
			return "a shrinkable pod is not on its nodes"
		}
		if p.PodSet < 0 || p.PodSet >= len(pods) {
			return "a shrinkable pod of a pod set Keep does not cover"
		}
		pods[p.PodSet]++
		left[i].GPUs -= p.GPUs
		total -= p.GPUs
	}
	kept := total
	for i, k := range r.Keep {
		if k < 0 || k > pods[i] {
			return "Keep outside 0 and the pod set's shrinkable pods"
		}
		kept += k
	}
	if kept <= 0 {
		return "shrinkable pods hold all its GPUs"
	}
	return ""
}
