package preempt

import (
	"slices"

	"github.com/fleetsched/fleet/quota"
)

// Usage changes on the Searcher's own copy of the quota tree, one at a
// time or summed per queue, and the quota checks that read it.

type removal struct {
	q quota.NodeID
	g int64
}

// quotaReachable reports whether evicting every candidate the attempt may
// take could make quota fit (from the Index's per-queue sums, counting
// candidates still under their MinRuntime: an optimistic answer), a
// cheap way to skip hopeless attempts.
func (s *Searcher) quotaReachable(a attempt) bool {
	t, x := s.tree, s.index
	rm := s.removals[:0]
	ok := true
	for q := range s.queues {
		qr := &s.queues[q]
		if !qr.allowed {
			continue
		}
		maxPrio := qr.maxPrio
		if qr.other && !qr.hier {
			switch a.others {
			case othersHier:
				continue
			case othersHierOrWhileB:
				maxPrio = min(maxPrio, qr.whileBMax)
			}
		}
		g := int64(0)
		for _, b := range x.queueBands[x.queueSlot(quota.NodeID(q), s.flavor)] {
			if int64(b.prio) <= maxPrio {
				g += int64(b.gpus)
			}
		}
		for _, pos := range s.gone {
			if e := &x.entries[pos]; e.run.Queue == quota.NodeID(q) && e.run.Flavor == s.flavor && e.cand && int64(e.prio) <= maxPrio {
				g -= int64(e.gpus)
			}
		}
		if g <= 0 {
			continue
		}
		if err := t.RemoveUsage(quota.NodeID(q), s.flavor, g); err != nil {
			ok = false
			break
		}
		rm = append(rm, removal{quota.NodeID(q), g})
	}
	s.removals = rm
	if ok {
		ok = s.quotaOK(a.allowBorrow)
	}
	for _, r := range slices.Backward(rm) {
		if err := t.AddUsage(r.q, s.flavor, r.g); err != nil {
			panic("preempt: undoing a removal: " + err.Error())
		}
	}
	return ok
}

func (s *Searcher) quotaOK(allowBorrow bool) bool {
	v := s.tree.Fits(s.req.Queue, s.flavor, s.needGPUs)
	return v.Fits() && (allowBorrow || !v.Borrowing())
}

// quotaShort is a lower bound on the GPUs of usage the search must still
// remove for the request to fit its queue's quota: what it is short by
// (0 when it fits). Removing g GPUs of usage anywhere in the tree makes
// at most g more available to the queue.
func (s *Searcher) quotaShort() int64 {
	if v := s.tree.Fits(s.req.Queue, s.flavor, s.needGPUs); !v.Fits() {
		return max(0, v.Reason.ShortBy)
	}
	return 0
}

func (s *Searcher) removeUsage(c *cand) {
	if err := s.tree.RemoveUsage(c.run.Queue, s.flavor, int64(c.gpus)); err != nil {
		panic("preempt: usage of an indexed workload: " + err.Error())
	}
}

func (s *Searcher) addUsage(c *cand) {
	if err := s.tree.AddUsage(c.run.Queue, s.flavor, int64(c.gpus)); err != nil {
		panic("preempt: undoing a removal: " + err.Error())
	}
}

// pendingUsage notes g GPUs of queue q for flushUsage.
func (s *Searcher) pendingUsage(q quota.NodeID, g int) {
	if len(s.pending) < len(s.queues) {
		s.pending = make([]int64, len(s.queues))
	}
	if s.pending[q] == 0 {
		s.pendingQ = append(s.pendingQ, q)
	}
	s.pending[q] += int64(g)
}

// flushUsage adds (sign 1) or removes (sign -1) the pending GPUs per
// queue: the tree ends as after one change per victim, since usage is
// exact arithmetic.
func (s *Searcher) flushUsage(sign int) {
	for _, q := range s.pendingQ {
		g := s.pending[q]
		s.pending[q] = 0
		var err error
		if sign > 0 {
			err = s.tree.AddUsage(q, s.flavor, g)
		} else {
			err = s.tree.RemoveUsage(q, s.flavor, g)
		}
		if err != nil {
			panic("preempt: usage of indexed workloads: " + err.Error())
		}
	}
	s.pendingQ = s.pendingQ[:0]
}

// quotaBuffers holds usage changes summed per queue before they reach the
// tree, and quotaReachable's removals.
type quotaBuffers struct {
	pending  []int64 // per queue: GPUs of usage changes not yet applied
	pendingQ []quota.NodeID
	removals []removal
	reachSums
}
