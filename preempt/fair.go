package preempt

import (
	"fmt"
	"math"
	"slices"

	"github.com/fleetsched/fleet/quota"
)

// FairSharingStrategy is one of Kueue's fair-sharing preemption
// strategies (KEP-1714): the test a candidate of another queue must pass
// for the preemptor to take it. Shares are those of the two sides of the
// tree below the queues' lowest common ancestor, the preemptor's with
// the request added.
type FairSharingStrategy uint8

const (
	// LessThanOrEqualToFinalShare (S2-a): the preemptor's share with the
	// request is at most the target's share once the candidate is gone.
	LessThanOrEqualToFinalShare FairSharingStrategy = iota + 1
	// LessThanInitialShare (S2-b): the preemptor's share with the request
	// is below the target's share before the eviction. As the second
	// strategy it takes at most one candidate per queue, the first its
	// queue offers.
	LessThanInitialShare
	numStrategies
)

// String returns the fair sharing strategy's name, as specs and messages spell it.
func (st FairSharingStrategy) String() string {
	switch st {
	case LessThanOrEqualToFinalShare:
		return "LessThanOrEqualToFinalShare"
	case LessThanInitialShare:
		return "LessThanInitialShare"
	}
	return fmt.Sprintf("FairSharingStrategy(%d)", uint8(st))
}

// Valid reports whether st is one of the defined strategies.
func (st FairSharingStrategy) Valid() bool {
	return st >= LessThanOrEqualToFinalShare && st < numStrategies
}

// MarshalText renders the strategy by its Kueue name.
func (st FairSharingStrategy) MarshalText() ([]byte, error) {
	if !st.Valid() {
		return nil, fmt.Errorf("preempt: invalid fair-sharing strategy %d", uint8(st))
	}
	return []byte(st.String()), nil
}

// UnmarshalText reads a strategy by its Kueue name.
func (st *FairSharingStrategy) UnmarshalText(b []byte) error {
	for v := LessThanOrEqualToFinalShare; v < numStrategies; v++ {
		if string(b) == v.String() {
			*st = v
			return nil
		}
	}
	return fmt.Errorf("preempt: unknown fair-sharing strategy %q", b)
}

// passes applies the strategy to the preemptor's share with the request
// (pNew) and the target's before (tOld) and after (tNew) the eviction.
func (st FairSharingStrategy) passes(pNew, tOld, tNew quota.Share) bool {
	if st == LessThanInitialShare {
		return pNew.Compare(tOld) < 0
	}
	return pNew.Compare(tNew) <= 0
}

// resolveStrategies returns the strategies a Searcher applies: Kueue's
// default for nil, the list itself when Kueue accepts it (one strategy,
// or S2-a then S2-b), ok false otherwise.
func resolveStrategies(list []FairSharingStrategy) ([]FairSharingStrategy, bool) {
	switch {
	case list == nil:
		return []FairSharingStrategy{LessThanOrEqualToFinalShare, LessThanInitialShare}, true
	case len(list) == 1 && list[0].Valid():
		return []FairSharingStrategy{list[0]}, true
	case len(list) == 2 && list[0] == LessThanOrEqualToFinalShare && list[1] == LessThanInitialShare:
		return []FairSharingStrategy{list[0], list[1]}, true
	}
	return nil, false
}

// fairWalk holds the per-call state of the fair-sharing walk, reused
// from call to call.
type fairWalk struct {
	strategies []FairSharingStrategy
	badList    bool    // Options.FairSharingStrategies is not a list Kueue accepts
	streamOf   []int32 // per tree node: its queue's stream in the walk, or -1
	retryHead  []int32 // per tree node: the first candidate the first strategy left, or -1
	pruned     []bool  // per tree node: out of the current phase's tournament
	walk       *merged // the walk's streams, each head the walk's next (see walkHead)
	// pend, per stream of the walk: the surpluses of elastic workloads
	// read ahead of the stream's head, in the walk's order.
	pend [][]int32
}

// pickFair is Kueue's fair-sharing preemption, as far as quota goes
// (placing: also placement, on the placing path). With the request's
// usage added to the preemptor's queue, it repeatedly descends from the
// root of the tree to the child with the highest share (queues not
// borrowing and cohorts neither borrowing nor above the preemptor are
// pruned; the preemptor's own queue competes by its share, the request
// included, while it has candidates), and there:
//   - the preemptor's queue: its next candidate is taken (withinQueue);
//   - another queue while the preemptor stays within its nominal quota:
//     its next candidate is taken (reclaim);
//   - another queue: its candidates are tried in eviction order against
//     the first strategy; the first that passes is taken and the tree is
//     ranked again; those that fail are left for the second strategy.
//
// Then, with a second strategy (S2-b), the tree is ranked again over the
// candidates left, and each queue reached gives its first one if the
// strategy lets it. The walk stops as soon as the request fits (quota,
// borrowing allowed). It reports whether it does; the victims are taken.
//
// The walk knows workloads, not parts: an elastic workload comes in the
// place of its whole eviction, priced whole (see walkHead), and is
// judged and taken whole; fill-back and shrinkTaken may still make it
// shrink.
func (s *Searcher) pickFair(placing bool) bool {
	t, q := s.tree, s.req.Queue
	if s.quotaOK(true) && (!placing || s.fitsPlacing(true)) {
		return true // it fits already: the walk picks nobody
	}
	m := s.openAttempt(attempt{true, othersAll})
	n := t.NumNodes()
	s.streamOf = fillInt32(s.streamOf, n, -1)
	s.retryHead = fillInt32(s.retryHead, n, -1)
	if cap(s.pruned) < n {
		s.pruned = make([]bool, n)
	}
	s.pruned = s.pruned[:n]
	s.pend = slices.Grow(s.pend[:0], len(m.streams))[:len(m.streams)]
	for i := range m.streams {
		s.streamOf[m.streams[i].queue] = int32(i)
		s.pend[i] = s.pend[i][:0]
	}
	s.walk = &m
	defer func() { s.walk = nil }()
	for i := range m.streams {
		m.heads[i] = s.walkHead(int32(i))
	}
	if t.AddUsage(q, s.flavor, s.needGPUs) != nil {
		return false // beyond MaxAmount: it cannot fit anyway
	}
	defer func() {
		if err := t.RemoveUsage(q, s.flavor, s.needGPUs); err != nil {
			panic("preempt: undoing the request: " + err.Error())
		}
	}()
	// The walk judges and takes a workload as Kueue does, whole: an
	// elastic one, which the walk yields by its surplus, with its surplus
	// and rest together (fill-back and shrinkTaken may still make it
	// shrink).
	take := func(ci int32) bool {
		for _, x := range [2]int32{ci, ci + 1} {
			if x == ci+1 && s.cands[ci].part != surplusPart {
				break
			}
			if placing {
				s.takePlacing(x)
			} else {
				s.take(x)
			}
		}
		if err := t.RemoveUsage(q, s.flavor, s.needGPUs); err != nil {
			panic("preempt: removing the request: " + err.Error())
		}
		ok := s.quotaOK(true)
		if ok && placing {
			ok = s.fitsPlacing(true)
		}
		if err := t.AddUsage(q, s.flavor, s.needGPUs); err != nil {
			panic("preempt: adding the request back: " + err.Error())
		}
		return ok
	}
	root := t.Root(q)
	if root == q {
		// A queue without a cohort: its own work only.
		for si := s.streamOf[q]; si >= 0; {
			ci := s.popFair(si)
			if ci < 0 {
				break
			}
			if take(ci) {
				return true
			}
		}
		return false
	}
	first := s.strategies[0]
	clear(s.pruned)
	for !s.pruned[root] {
		tq := s.fairDescend(root, false)
		if tq == quota.None {
			continue
		}
		si := s.streamOf[tq]
		if tq == q || s.withinNominal {
			if take(s.popFair(si)) {
				return true
			}
			continue
		}
		qr := &s.queues[tq]
		pNew, tOld := t.DominantShare(qr.pSide), t.DominantShare(qr.cSide)
		if math.IsInf(pNew.Value(), 1) && !math.IsInf(tOld.Value(), 1) {
			// No candidate of this queue can pass either strategy: all
			// are left for the second.
			if s.retryHead[tq] < 0 {
				s.retryHead[tq] = s.walk.heads[si]
			}
			s.walk.drop(int(si))
			continue
		}
		for s.walk.heads[si] >= 0 {
			ci := s.popFair(si)
			c := &s.cands[ci]
			// An elastic workload is judged whole, by its surplus and
			// rest together.
			var rc *cand
			if c.part == surplusPart {
				rc = &s.cands[ci+1]
				s.removeUsage(rc)
			}
			s.removeUsage(c)
			tNew := t.DominantShare(qr.cSide)
			s.addUsage(c)
			if rc != nil {
				s.addUsage(rc)
			}
			if first.passes(pNew, tOld, tNew) {
				if take(ci) {
					return true
				}
				break // the shares changed: rank the tree again
			}
			if s.retryHead[tq] < 0 {
				s.retryHead[tq] = ci
			}
		}
	}
	if len(s.strategies) < 2 {
		return false
	}
	clear(s.pruned)
	for !s.pruned[root] {
		tq := s.fairDescend(root, true)
		if tq == quota.None {
			continue
		}
		qr := &s.queues[tq]
		pNew, tOld := t.DominantShare(qr.pSide), t.DominantShare(qr.cSide)
		ci := s.retryHead[tq]
		s.retryHead[tq], s.pruned[tq] = -1, true
		if s.strategies[1].passes(pNew, tOld, tOld) && take(ci) {
			return true
		}
	}
	return false
}

// popFair returns the walk's head of stream si and moves past it (-1
// when the stream is exhausted).
func (s *Searcher) popFair(si int32) int32 {
	m := s.walk
	ci := m.heads[si]
	if ci < 0 {
		return -1
	}
	if p := s.pend[si]; len(p) > 0 && p[0] == ci {
		s.pend[si] = slices.Delete(p, 0, 1)
	} else {
		s.advance(&m.streams[si])
	}
	m.heads[si] = s.walkHead(si)
	return ci
}

// walkHead returns stream si's next candidate in the walk's order (-1:
// none): the eviction order with each elastic workload in the place of
// its whole eviction, priced whole (the order the walk would follow
// were it not elastic), yielded by its surplus. The stream yields a
// surplus before the whole evictions of its priority, so surpluses are
// read ahead into s.pend, each priced whole, until the stream's head is
// not a surplus of their priority; a rest is passed over (the walk takes
// it with its surplus).
func (s *Searcher) walkHead(si int32) int32 {
	st := &s.walk.streams[si]
	if s.index.splits == 0 {
		return s.head(st) // every candidate is a workload
	}
	h := s.head(st)
	for ; h >= 0; h = s.head(st) {
		c := &s.cands[h]
		if c.part == restPart {
			s.advance(st)
			continue
		}
		if p := s.pend[si]; c.part != surplusPart || len(p) > 0 && s.cands[p[0]].prio < c.prio {
			break
		}
		c.wholeCost = s.cost.Cost(c.run, s.req.Now)
		p := s.pend[si]
		i, _ := slices.BinarySearchFunc(p, h, func(x, y int32) int { return s.compareWalk(x, y) })
		s.pend[si] = slices.Insert(p, i, h)
		s.advance(st)
	}
	if p := s.pend[si]; len(p) > 0 && (h < 0 || s.compareWalk(p[0], h) < 0) {
		return p[0]
	}
	return h
}

// compareWalk is compareIgnoringShare in the walk's order: an elastic
// workload's surplus stands for the whole eviction, priced whole.
func (s *Searcher) compareWalk(a, b int32) int {
	x, y := s.cands[a], s.cands[b]
	for _, c := range [2]*cand{&x, &y} {
		if c.part == surplusPart {
			c.part, c.whole, c.cost = wholeCand, true, c.wholeCost
		}
	}
	return compareIgnoringShare(&x, &y)
}

// fairHead is queue q's next candidate in the walk's phase (-1: none).
func (s *Searcher) fairHead(q quota.NodeID, retry bool) int32 {
	if retry {
		return s.retryHead[q]
	}
	if si := s.streamOf[q]; si >= 0 {
		return s.walk.heads[si]
	}
	return -1
}

// fairDescend returns the queue under cohort n the walk takes from next:
// at each level the child with the highest share, a cohort winning a tie
// with a queue (and, among cohorts, the last listed), queues tied on
// share ordered by their next candidates. It returns quota.None when it
// only pruned: a queue not borrowing (but the preemptor's) or without
// candidates, a cohort neither borrowing nor above the preemptor, a
// cohort whose children are all pruned.
func (s *Searcher) fairDescend(n quota.NodeID, retry bool) quota.NodeID {
	t, q := s.tree, s.req.Queue
	bestQ, bestC := quota.None, quota.None
	var qShare, cShare quota.Share
	for _, ch := range t.Children(n) {
		if s.pruned[ch] {
			continue
		}
		sh := t.DominantShare(ch)
		if t.IsQueue(ch) {
			head := s.fairHead(ch, retry)
			if head < 0 || !sh.Borrowing() && ch != q {
				s.pruned[ch] = true
				continue
			}
			if bestQ == quota.None {
				bestQ, qShare = ch, sh
				continue
			}
			switch c := sh.Compare(qShare); {
			case c > 0:
				bestQ, qShare = ch, sh
			case c == 0 && s.compareWalk(head, s.fairHead(bestQ, retry)) < 0:
				bestQ = ch
			}
			continue
		}
		if first, end := t.Subtree(ch); !sh.Borrowing() && (q < first || q >= end) {
			s.pruned[ch] = true
			continue
		}
		if bestC == quota.None || sh.Compare(cShare) >= 0 {
			bestC, cShare = ch, sh
		}
	}
	switch {
	case bestQ == quota.None && bestC == quota.None:
		s.pruned[n] = true
		return quota.None
	case bestC != quota.None && (bestQ == quota.None || cShare.Compare(qShare) >= 0):
		return s.fairDescend(bestC, retry)
	}
	return bestQ
}

// compareIgnoringShare is compareCandidates without the share criterion
// (the shares it would compare were taken at the start of the search).
func compareIgnoringShare(a, b *cand) int {
	x, y := *a, *b
	x.share, y.share = quota.Share{}, quota.Share{}
	return compareCandidates(&x, &y)
}

func fillInt32(b []int32, n int, v int32) []int32 {
	if cap(b) < n {
		b = make([]int32, n)
	}
	b = b[:n]
	for i := range b {
		b[i] = v
	}
	return b
}
