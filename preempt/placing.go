package preempt

import (
	"slices"
)

// The placing path, for gangs the fast path's counters do not model.

// searchPlacing is Kueue's classical search: pick candidates in order and
// place after each pick once quota fits, then fill back. It serves the
// shapes the fast path's counters do not model (segments, spread, pod
// sets of different sizes). O(candidates) placements.
func (s *Searcher) searchPlacing(a attempt) (Plan, bool, bool, *NoPlan) {
	if np := s.releaseFreed(); np != nil {
		return Plan{}, false, false, np
	}
	defer s.giveBack()
	quotaShort := false
	if s.req.FairSharing {
		if !s.pickFair(true) {
			quotaShort = !s.quotaOK(true)
			s.untakeAllPlacing()
			return Plan{}, false, quotaShort, nil
		}
	}
	m := s.openAttempt(a)
	for !s.fitsPlacing(a.allowBorrow) {
		ci, from := s.next(&m)
		if ci < 0 {
			quotaShort = !s.quotaOK(a.allowBorrow)
			break
		}
		c := &s.cands[ci]
		if c.taken || !s.keep(c, a) {
			continue
		}
		if !s.valid(c) {
			if qr := &s.queues[c.run.Queue]; qr.other && !s.borrowingQueue(c.run.Queue, qr.lca) {
				m.drop(from)
			}
			continue
		}
		s.takePlacing(ci)
	}
	if !s.fitsPlacing(a.allowBorrow) {
		s.untakeAllPlacing()
		return Plan{}, false, quotaShort, nil
	}
	for j := len(s.taken) - 1; j >= 0; j-- {
		ci := s.taken[j]
		if s.pinned(s.taken[j : j+1]) {
			continue // a surplus whose rest is needed
		}
		s.untakePlacing(ci)
		if s.fitsPlacing(a.allowBorrow) {
			s.taken = slices.Delete(s.taken, j, j+1)
			continue
		}
		s.retakePlacing(ci)
	}
	shrunk := s.shrinkTaken(a.allowBorrow)
	target, err := s.place()
	if err != nil {
		panic("preempt: placement changed its answer on the same fleet: " + err.Error())
	}
	plan := s.plan(target)
	if shrunk {
		s.applyShrinks(&plan)
	}
	s.undoShrinks()
	s.untakeAllPlacing()
	return plan, true, false, nil
}

func (s *Searcher) fitsPlacing(allowBorrow bool) bool {
	if !s.quotaOK(allowBorrow) {
		return false
	}
	_, err := s.place()
	return err == nil
}

func (s *Searcher) takePlacing(ci int32) {
	from := len(s.taken)
	s.take(ci)
	for _, x := range s.taken[from:] { // with the surplus a rest brings along
		s.releaseNodes(&s.cands[x], 1)
	}
}

func (s *Searcher) untakePlacing(ci int32) {
	s.untake(ci)
	s.releaseNodes(&s.cands[ci], -1)
}

func (s *Searcher) retakePlacing(ci int32) {
	c := &s.cands[ci]
	s.removeUsage(c)
	c.taken = true
	s.freeAll(c, 1)
	s.releaseNodes(c, 1)
}

func (s *Searcher) untakeAllPlacing() {
	for _, ci := range slices.Backward(s.taken) {
		s.untakePlacing(ci)
	}
	s.taken = s.taken[:0]
}

func (s *Searcher) releaseNodes(c *cand, sign int) {
	for _, x := range s.nodesOf(c) {
		if !s.releaseOn(x.Node, sign*x.GPUs) {
			panic("preempt: the scratch fleet refused GPUs checked against the live fleet")
		}
	}
}
