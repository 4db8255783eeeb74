package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// WaitReason says why the last cycle left a pending workload pending.
type WaitReason uint8

// The wait reasons.
const (
	// WaitUnscheduled: no cycle has run since it was submitted.
	WaitUnscheduled WaitReason = iota
	// WaitQuota: its queue's quota does not fit it (Quota says which limit
	// bites), and preemption could not help (Preemption says why) or is off.
	WaitQuota
	// WaitTopology: quota fits but no placement does (Placement says why),
	// and preemption could not help.
	WaitTopology
	// WaitHeadOfQueue: its StrictFIFO queue waits for its head (Behind).
	WaitHeadOfQueue
	// WaitReservation: it fits only in a domain held for the gang Behind.
	WaitReservation
	// WaitMemo: a gang of its class no larger than it found no victims
	// earlier in the same cycle, so none was searched for it.
	WaitMemo
	// WaitVictims: victims are draining for it; it starts when those on
	// its nodes have exited.
	WaitVictims
	// WaitBooking: it fits only in blocks an approved booking (Behind)
	// holds, or it is the booking's work and waits for its start or for
	// room in its blocks.
	WaitBooking
	// WaitVictimsTaken: the victims draining for it (reclaimed without a
	// nomination) were promised in the same cycle to the plan of Behind;
	// it searches again in the next cycle.
	WaitVictimsTaken
)

// String names the reason, as Explanation.Message uses it.
func (w WaitReason) String() string {
	switch w {
	case WaitUnscheduled:
		return "unscheduled"
	case WaitQuota:
		return "quota"
	case WaitTopology:
		return "topology"
	case WaitHeadOfQueue:
		return "head-of-queue"
	case WaitReservation:
		return "reservation"
	case WaitMemo:
		return "memo"
	case WaitVictims:
		return "victims"
	case WaitBooking:
		return "booking"
	case WaitVictimsTaken:
		return "victims-taken"
	}
	return fmt.Sprintf("WaitReason(%d)", uint8(w))
}

// waitVerdict is what a cycle decided for a pending workload: Explain
// reads it instead of deciding again.
type waitVerdict struct {
	cycle  uint64 // 0: no cycle has seen it
	at     time.Time
	reason WaitReason
	quota  quota.Verdict
	noFit  *placement.NoFit
	noPlan *preempt.NoPlan
	behind string
	// refusedPlan: the cycle's victim search found a plan it could not
	// take (see Scheduler.refused).
	refusedPlan bool
}

// Explanation says why a workload is where it is, as data with a rendered
// sentence, so a host can show it or act on it. For a pending workload it
// is what the last cycle decided, not a new decision: Explain and
// Schedule never disagree.
type Explanation struct {
	ID    string     // the workload explained
	State gang.State // its lifecycle state now
	// Waiting is why the last cycle (at Cycle) left it pending.
	Waiting WaitReason
	Cycle   time.Time
	// Quota is that cycle's quota verdict (nil when it was not asked).
	Quota *quota.Verdict
	// Placement is the topology's answer when it did not fit physically.
	Placement *placement.NoFit
	// Preemption says why no victims could make room, when a search ran.
	Preemption *preempt.NoPlan
	// Behind names the queue head it waits for, or the gang whose held
	// domain it may not use.
	Behind string
	// Reserved names the domain the last cycle held for it, a blocked
	// gang (the reservation of Schedule's step 5), as PendingView.Reserved
	// does; ReservedStart is when the work there it cannot evict is
	// expected to have ended, zero while work without an expected end
	// that it cannot evict runs there (ReservedBlocked GPUs of it).
	Reserved        string
	ReservedStart   time.Time
	ReservedBlocked int
	// A nominated workload: the victims it still waits for and the time
	// by which their deadlines are all past.
	VictimsLeft int
	Victims     []string
	ReadyBy     time.Time
	// A draining victim: its drain, every beneficiary, and how overdue
	// it is if its deadline passed.
	Reason        gang.DrainReason
	Deadline      time.Time
	Beneficiaries []string
	Overdue       time.Duration
	// Size is the pods of each pod set it runs (or is nominated) with,
	// in pod set order; Split names the elastic workload a pod given up
	// by a shrink belongs to.
	Size    []int
	Split   string
	Message string
}

// String is the rendered sentence, Message.
func (x Explanation) String() string { return x.Message }

// Explain says why workload id is where it is: for a pending one, what the
// last cycle found (which quota limit bites and by how much, which
// topology level failed, why preemption could not help, the queue head or
// held domain it is behind, the drain in progress for it); for a running
// one, where; for a draining one, its deadline and beneficiaries, and how
// overdue it is. It reads the books and changes nothing, so it may be
// called as often as a dashboard likes.
func (s *Scheduler) Explain(id string) (Explanation, error) {
	e, ok := s.work[id]
	if !ok {
		return Explanation{}, refuse("explain", id, ErrUnknownID, "")
	}
	r := e.rec
	x := Explanation{ID: id, State: r.State, Size: slices.Clone(r.Size())}
	if e.split != nil {
		x.Split = e.split.of
	}
	var msg []string
	switch r.State {
	case gang.Admitted:
		// Named by the smallest domain holding its pods, which the pods
		// alone tell: a scheduler restored or rebuilt by adoption, which
		// never saw the level its placement searched, names the same.
		a := r.Assign
		if len(a.Pods) > 0 {
			a.Domain = s.fleet.DomainOf(a.Pods[0].Node, a.Span)
		}
		msg = append(msg, fmt.Sprintf("running since %s on %s", r.Started.Format(time.TimeOnly), a.Format(s.fleet)))
		if ledger.Elastic(&e.w) {
			msg = append(msg, "elastic, running "+sizeOf(&e.w, r.Size()))
		}
		if r.Borrowing {
			msg = append(msg, "borrowing quota, so reclaimable by preemption")
		}
		if len(r.Lost) > 0 {
			wait := s.cfg.Policy.HotSwapWait
			if wait == 0 {
				wait = DefaultHotSwapWait
			}
			lp := r.Lost[0]
			msg = append(msg, fmt.Sprintf("%d pods lost with node %s at %s wait for a replacement node; it fails whole at %s without one",
				len(r.Lost), s.fleet.NodeName(lp.Pod.Node), lp.Since.Format(time.TimeOnly), lp.Since.Add(wait).Format(time.TimeOnly)))
		}
	case gang.Draining:
		d := r.Drain
		x.Reason, x.Deadline, x.Beneficiaries = d.Reason, d.Deadline, slices.Clone(d.Beneficiaries)
		if s.now.After(d.Deadline) {
			x.Overdue = s.now.Sub(d.Deadline)
			msg = append(msg, fmt.Sprintf("draining (%s), overdue by %s: deadline was %s, kill asked", d.Reason, x.Overdue, d.Deadline.Format(time.DateTime)))
		} else {
			msg = append(msg, fmt.Sprintf("draining (%s) by %s", d.Reason, d.Deadline.Format(time.TimeOnly)))
		}
		if len(d.Beneficiaries) > 0 {
			msg = append(msg, "for "+strings.Join(d.Beneficiaries, ", "))
		}
		if e.split != nil {
			msg = append(msg, fmt.Sprintf("pod %s[%d] given up by elastic %s", e.split.pod.PodSet, e.split.pod.Index, e.split.of))
		}
	case gang.Pending:
		if n, ok := s.books.Nomination(id); ok {
			x.Waiting, x.Cycle = WaitVictims, e.wait.at
			x.Victims, x.VictimsLeft, x.ReadyBy = slices.Clone(n.WaitOn), len(n.WaitOn), n.ReadyBy
			msg = append(msg, fmt.Sprintf("waiting for %d victims to drain, capacity back by %s", x.VictimsLeft, x.ReadyBy.Format(time.TimeOnly)))
			break
		}
		msg = s.explainWait(e, &x)
	}
	if note, ok := s.brokenNote(e.w.Booking); ok {
		msg = append(msg, note)
	}
	x.Message = id + ": " + strings.Join(msg, "; ")
	return x, nil
}

// holdNote describes the domain held for e, when the last cycle held one
// for it: what keeps it from starting there, read from the work running
// there now.
func (s *Scheduler) holdNote(e *entry, x *Explanation) string {
	r := s.lastReserve
	if r == nil || r.id != e.w.ID {
		return ""
	}
	lo, _ := s.fleet.DomainsAt(r.level)
	o := s.outlook(r.level, r.priority)[r.domain-lo]
	x.Reserved, x.ReservedBlocked = s.fleet.DomainName(r.domain), o.blocked
	msg := "holds " + x.Reserved + ": work of its priority or lower that it cannot evict stays out"
	switch {
	case o.blocked > 0:
		gpus := "GPUs run"
		if o.blocked == 1 {
			gpus = "GPU runs"
		}
		msg += fmt.Sprintf("; %d %s work there that it cannot evict and that has no expected end, so no start can be planned", o.blocked, gpus)
	case o.end.After(s.now):
		x.ReservedStart = o.end
		msg += "; the work there it cannot evict is expected to end by " + o.end.Format(time.DateTime)
	default:
		msg += "; nothing there it cannot evict is expected to run past now"
	}
	return msg
}

// ruleHint names the preemption rule of e's queue that keeps it waiting,
// with the setting that would let preemption help: reclaimWithinCohort
// when the queue is below its nominal quota and may not take back what it
// lent, withinClusterQueue when its own running work was excluded by it.
// "" when no rule of its queue is to blame.
func (s *Scheduler) ruleHint(e *entry, x *Explanation) string {
	if s.cfg.Policy.NoPreemption || e.wait.reason != WaitQuota && e.wait.reason != WaitMemo {
		return ""
	}
	rules := s.tree.Rules(e.queue)
	var fix []string
	if rules.ReclaimWithinCohort == quota.ReclaimNever && s.tree.Usage(e.queue, e.flavor) < s.tree.Nominal(e.queue, e.flavor) {
		fix = append(fix, "reclaimWithinCohort: Any (or LowerPriority) lets it take back the quota it lent")
	}
	if rules.WithinQueue == quota.WithinQueueNever && x.Preemption != nil && x.Preemption.Excluded.QueueRule > 0 {
		fix = append(fix, "withinClusterQueue: LowerPriority lets it preempt its own queue's lower-priority work")
	}
	if len(fix) == 0 {
		return ""
	}
	return fmt.Sprintf("queue %q's preemption rules keep it waiting: %s", e.w.Queue, strings.Join(fix, "; "))
}

// explainWait renders what the last cycle stored for a pending workload.
func (s *Scheduler) explainWait(e *entry, x *Explanation) []string {
	w := e.wait
	x.Waiting, x.Behind = w.reason, w.behind
	if w.cycle == 0 {
		return []string{"not yet considered: submitted after the last cycle"}
	}
	x.Cycle = w.at
	var msg []string
	if w.reason == WaitQuota || w.reason == WaitTopology {
		q := w.quota
		x.Quota = &q
	}
	if w.noFit != nil {
		nf := *w.noFit
		nf.Tried = slices.Clone(nf.Tried) // the record is kept from cycle to cycle
		x.Placement = &nf
	}
	if w.noPlan != nil {
		np := *w.noPlan
		x.Preemption = &np
	}
	switch w.reason {
	case WaitQuota:
		msg = append(msg, "quota: "+w.quota.String())
	case WaitTopology:
		if x.Placement != nil {
			msg = append(msg, "topology: "+x.Placement.Error())
		} else {
			msg = append(msg, "topology: no placement")
		}
	case WaitHeadOfQueue:
		msg = append(msg, "behind "+w.behind+", the head of its StrictFIFO queue")
	case WaitReservation:
		msg = append(msg, "fits only in a domain held for gang "+w.behind)
	case WaitMemo:
		msg = append(msg, "no preemption searched: a gang of its class no larger found no victims this cycle")
	case WaitVictimsTaken:
		msg = append(msg, "the victims draining for it were promised to "+w.behind+"; it searches again in the next cycle")
	case WaitBooking:
		if b, ok := s.cal.Booking(w.behind); ok {
			if e.w.Booking == w.behind {
				msg = append(msg, fmt.Sprintf("runs in booking %s, from %s to %s", b.ID, b.Start.Format(time.DateTime), b.End.Format(time.DateTime)))
			} else {
				msg = append(msg, fmt.Sprintf("behind booking %s from %s: it fits only in the booked %v", b.ID, b.Start.Format(time.DateTime), b.Domains))
			}
		} else {
			msg = append(msg, "behind booking "+w.behind)
		}
	}
	switch {
	case s.cfg.Policy.NoPreemption && (w.reason == WaitQuota || w.reason == WaitTopology):
		msg = append(msg, "preemption is off")
	case x.Preemption != nil:
		msg = append(msg, "preemption cannot help: "+x.Preemption.Error())
	}
	if hold := s.holdNote(e, x); hold != "" {
		msg = append(msg, hold)
	}
	if hint := s.ruleHint(e, x); hint != "" {
		msg = append(msg, hint)
	}
	if note := s.waitLimitNote(e, x); note != "" {
		msg = append(msg, note)
	}
	msg = append(msg, "as of the cycle at "+w.at.Format(time.TimeOnly))
	return msg
}

// waitLimitNote says when a workload whose priority rule kept victims out
// may evict the runs of its priority queued before it (Policy.WaitLimit),
// or that it may already; "" when the limit does not apply.
func (s *Scheduler) waitLimitNote(e *entry, x *Explanation) string {
	l := s.cfg.Policy.WaitLimit
	if l <= 0 || x.Preemption == nil || x.Preemption.Excluded.Priority == 0 ||
		s.tree.Rules(e.queue).WithinQueue != quota.WithinQueueLowerOrNewerEqualPriority {
		return ""
	}
	at := e.submitted.Add(l)
	if !e.wait.at.Before(at) {
		return fmt.Sprintf("it has waited the wait limit (%s): runs of its priority queued before it were candidates", l)
	}
	return fmt.Sprintf("from %s, once it has waited the wait limit (%s), runs of its priority queued before it are candidates too",
		at.Format(time.DateTime), l)
}
