package fleet

import (
	"slices"
	"time"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// noPlanMemo is a victim search's answer that no plan makes room for a
// workload (and that the reclaim of shares, slices and named resources
// after it found none either), kept with what both read: the counts of
// changes of the fleet, the quota tree and the books, and the domains
// the search kept out of. The only other input is time: a holder
// protected by its MinRuntime when the answer was found may be a
// candidate later, and a workload that has waited Policy.WaitLimit may
// evict more, so the answer stands until the first protection ends
// (ledger.ProtectionEnds) or the workload reaches the limit. Prices move
// with time too, but a price orders plans; it never decides whether one
// exists. While all of that holds a search would answer the same: a
// cycle in which nothing changed repeats the answer without searching,
// beside what admission said in that cycle (replayNoPlan).
type noPlanMemo struct {
	valid   bool
	at      stamp     // the state it was found on
	expires bool      // false: nothing was protected, and no limit is near
	until   time.Time // when the first protection ends, or the limit is reached
	avoid   []topology.DomainID
	noPlan  *preempt.NoPlan // the search's answer
}

// stamp is the count of changes of everything a victim search reads.
type stamp struct{ fleet, tree, books uint64 }

func (s *Scheduler) stamp() stamp {
	return stamp{s.fleet.Changes(), s.tree.Changes(), s.books.Version()}
}

// noPlanStands reports whether e's kept answer that no plan exists holds
// at now for a search kept out of avoid.
func (s *Scheduler) noPlanStands(now time.Time, e *entry, avoid []topology.DomainID) bool {
	m := &e.noPlan
	return m.valid && m.at == s.stamp() &&
		(!m.expires || now.Before(m.until)) && slices.Equal(m.avoid, avoid)
}

// keepNoPlan keeps e's verdict after a search and a reclaim that found
// nothing, both run at now on the state at (which they did not change).
func (s *Scheduler) keepNoPlan(now time.Time, e *entry, avoid []topology.DomainID, at stamp) {
	if s.stamp() != at {
		e.noPlan.valid = false
		return
	}
	until, expires := s.books.ProtectionEnds(now)
	if l := s.cfg.Policy.WaitLimit; l > 0 && !s.starved(e) {
		if reached := e.submitted.Add(l); !expires || reached.Before(until) {
			until, expires = reached, true
		}
	}
	e.noPlan = noPlanMemo{valid: true, at: at, expires: expires, until: until,
		avoid: append(e.noPlan.avoid[:0], avoid...), noPlan: e.wait.noPlan}
}

// replayNoPlan gives e the verdict a search would leave this cycle: the
// kept answer's NoPlan beside what admission said this cycle (the reason,
// the booking or reservation it waits behind, the quota verdict), which
// reads more than the search does (the calendar's holds move with time)
// and which a failed search leaves as it is.
func (s *Scheduler) replayNoPlan(e *entry) {
	e.wait = replayedWait(e)
}

// replayedWait is the verdict replayNoPlan gives e.
func replayedWait(e *entry) waitVerdict {
	w := e.wait
	w.noPlan = e.noPlan.noPlan
	return w
}
