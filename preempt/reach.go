package preempt

import (
	"slices"

	"github.com/fleetsched/fleet/quota"
)

// A request no cell can be opened for. Each cell's bound (cellBounds) is
// a lower bound on the highest priority of any set of victims that makes
// the cell hold the gang, whatever else is taken; when every bound is
// above the highest priority the rules let go (maxVictim), no attempt
// finds a plan, and a search would only learn why: WhyTopology when some
// attempt's victims for quota fit it, WhyQuota otherwise. Victims for
// quota are picked in eviction order, which moves with now (a cost is
// GPUs x unsaved time), and an order matters only when another queue
// stops borrowing part way (its work is then no victim any more). When
// no queue can stop, even with every candidate gone, the picks fit quota
// exactly when all of them do: the answer is read from per-queue sums,
// without picking. Borrowing only falls as victims go, so the worst
// case for a candidate is every other one gone before it: a queue whose
// smallest candidate still finds it borrowing then can never stop part
// way.

// outOfReach reports whether no cell of the gang's level can be made to
// hold it by victims the rules allow (or there is no cell).
func (s *Searcher) outOfReach() bool {
	s.cellBounds()
	if s.wholeCells {
		return len(s.cellHeap) == 0 || beyond(s.cellHeap[0].prio, s.maxVictim)
	}
	switch {
	case len(s.bounds) == 0:
		return true
	case s.noBounds || s.unbounded:
		return false
	}
	return beyond(s.bounds[0].prio, s.maxVictim) // the heap's least
}

// beyond reports whether no victim of priority at most maxVictim can
// meet a cell bound of p.
func beyond(p int32, maxVictim int64) bool {
	return p == noPrice || p != freePrice && int64(p) > maxVictim
}

// reachSums are the per-queue sums orderFree reads the quota answer from.
type reachSums struct {
	candGPUs   []int64 // per queue: GPUs of its candidates
	whileBGPUs []int64 // of those, at most its whileBMax priority
	minGPUs    []int64 // its smallest candidate's
}

// orderFree reports whether picking victims for quota cannot depend on
// the order: every other queue with candidates still borrows when all
// candidates of every queue are gone but its smallest. It sums each
// allowed queue's candidates for quotaFitsAll.
func (s *Searcher) orderFree() bool {
	n := len(s.queues)
	s.candGPUs = append(s.candGPUs[:0], make([]int64, n)...)
	s.whileBGPUs = append(s.whileBGPUs[:0], make([]int64, n)...)
	s.minGPUs = append(s.minGPUs[:0], make([]int64, n)...)
	for q := range s.queues {
		qr := &s.queues[q]
		if !qr.allowed {
			continue
		}
		t := s.index.byQueue[s.index.queueSlot(quota.NodeID(q), s.flavor)]
		if t == nil {
			continue
		}
		t.Ascend(func(k orderKey) bool {
			if int64(bandPrio(k.band)) > qr.maxPrio {
				return k.band < runningBand // a draining band: the running ones may still hold one
			}
			if s.ruleOut(k.pos) != 0 {
				return true
			}
			e := &s.index.entries[k.pos]
			g := int64(e.gpus)
			if e.split() {
				// An elastic workload is two candidates: its surplus
				// pods at one key, the rest (band bit 0 set) at another.
				if k.band&1 != 0 {
					g -= int64(e.parts.shrinkGPUs)
				} else {
					g = int64(e.parts.shrinkGPUs)
				}
			}
			if s.candGPUs[q] == 0 || g < s.minGPUs[q] {
				s.minGPUs[q] = g
			}
			s.candGPUs[q] += g
			if int64(s.index.entries[k.pos].prio) <= qr.whileBMax {
				s.whileBGPUs[q] += g
			}
			return true
		})
	}
	s.removeSums(-1, attempt{})
	defer s.restoreSums()
	for q := range s.queues {
		qr := &s.queues[q]
		if !qr.allowed || !qr.other || s.candGPUs[q] == 0 {
			continue
		}
		if err := s.tree.AddUsage(quota.NodeID(q), s.flavor, s.minGPUs[q]); err != nil {
			panic("preempt: giving back a candidate's usage: " + err.Error())
		}
		borrowing := s.borrowingQueue(quota.NodeID(q), qr.lca)
		if err := s.tree.RemoveUsage(quota.NodeID(q), s.flavor, s.minGPUs[q]); err != nil {
			panic("preempt: taking a candidate's usage back: " + err.Error())
		}
		if !borrowing {
			return false
		}
	}
	return true
}

// quotaFitsAll reports whether quota fits once every candidate attempt a
// may take is gone: with orderFree, whether its picks for quota fit it.
func (s *Searcher) quotaFitsAll(a attempt) bool {
	s.removeSums(1, a)
	ok := s.quotaOK(a.allowBorrow)
	s.restoreSums()
	return ok
}

// removeSums removes from every allowed queue, on the Searcher's tree,
// the GPUs of its candidates (all < 0) or of those attempt a may take
// (all > 0); restoreSums puts them back.
func (s *Searcher) removeSums(all int, a attempt) {
	t := s.tree
	rm := s.removals[:0]
	for q := range s.queues {
		qr := &s.queues[q]
		if !qr.allowed {
			continue
		}
		g := s.candGPUs[q]
		if all > 0 {
			switch {
			case !qr.other || a.others == othersAll || qr.hier:
			case a.others == othersHierOrWhileB:
				g = s.whileBGPUs[q]
			default:
				g = 0
			}
		}
		if g > 0 {
			if err := t.RemoveUsage(quota.NodeID(q), s.flavor, g); err != nil {
				panic("preempt: usage of indexed candidates: " + err.Error())
			}
			rm = append(rm, removal{quota.NodeID(q), g})
		}
	}
	s.removals = rm
}

// restoreSums undoes removeSums.
func (s *Searcher) restoreSums() {
	for _, r := range slices.Backward(s.removals) {
		if err := s.tree.AddUsage(r.q, s.flavor, r.g); err != nil {
			panic("preempt: undoing a removal: " + err.Error())
		}
	}
	s.removals = s.removals[:0]
}

// quotaOutOfReach reports, once orderFree holds, whether the sums
// prove that no attempt's victims can make quota fit: with orderFree an
// attempt's picks fit quota exactly when quotaFitsAll does, so an
// attempt quotaReachable skips is short of quota, and a search of any
// other would run out of candidates before quota fit. Every attempt
// short, the searches would answer WhyQuota. It leaves hopeless as
// they would (false once one has run).
func (s *Searcher) quotaOutOfReach() bool {
	searched := false
	for _, a := range s.attempts() {
		if !s.quotaReachable(a) {
			continue
		}
		if s.quotaFitsAll(a) {
			return false
		}
		searched = true
	}
	if searched {
		s.hopeless = false
	}
	return true
}
