package preempt

import (
	"fmt"

	"github.com/fleetsched/fleet/quota"
)

// borrowGate is Kueue's test of whether preemption may help a request
// that does not fit: the request alone within the queue's nominal quota,
// or a cohort below the root whose subtree quota holds the queue's usage
// plus the request (a reclaim within the hierarchy), or a rule that lets
// the queue preempt while it borrows (borrowWithinCohort other than
// Never; fair sharing with reclaimWithinCohort other than Never). Without
// one, the request could fit only by borrowing, and evicting the queue's
// own lower-priority work so that it can borrow is what Kueue refuses: it
// answers "does not fit" and evicts nothing. The gate compares the
// request, not usage plus request, with the nominal quota, as Kueue does.
// Victims asks it before looking for candidates, so a host sees this one
// verdict whether or not some workload could be evicted. It returns nil
// when preemption may be tried.
func (s *Searcher) borrowGate() *NoPlan {
	nominal := s.tree.Nominal(s.req.Queue, s.flavor)
	r := s.rules
	switch {
	case s.needGPUs <= nominal, s.advantage >= 0:
		return nil
	case r.BorrowWithinCohort.Policy != quota.BorrowNever:
		return nil
	case s.req.FairSharing && r.ReclaimWithinCohort != quota.ReclaimNever:
		return nil
	}
	np := s.noPlan(WhyAboveNominal)
	np.Limit = nominal
	np.Detail = fmt.Sprintf("%d GPUs requested, nominal quota %d of queue %q: it would have to borrow, and no rule lets it preempt to borrow",
		s.needGPUs, nominal, s.tree.Name(s.req.Queue))
	return np
}
