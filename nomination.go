package fleet

import (
	"slices"
	"time"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// dissolve cancels the nomination of beneficiary b: the ledger gives its
// reserved GPUs and quota back. Its victims go on draining (they were
// already told to stop); their GPUs are simply freed when they exit.
func (s *Scheduler) dissolve(now time.Time, b string, why string) {
	gpus := s.books.Dissolve(b)
	ev := Event{Kind: EventNominationDissolved, Time: now, Workload: b, GPUs: gpus, Reason: why}
	if e, ok := s.work[b]; ok {
		ev.Queue = e.w.Queue
		// Its victims drain on for it without a nomination: it waits for
		// them before it drains more, as a restored scheduler reads from
		// the books.
		e.reclaiming = len(s.books.ReclaimingFor(b)) > 0
	}
	s.emit(ev)
}

// targetOnNode reports whether a nomination's target uses node n.
func targetOnNode(a placement.Assignment, n topology.NodeID) bool {
	return slices.ContainsFunc(a.Pods, func(p placement.Pod) bool { return p.Node == n })
}
