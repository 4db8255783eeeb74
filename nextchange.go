package fleet

import (
	"slices"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
)

// quietCycle is what NextChange knows of the last cycle: whether it was
// quiet (it listed nothing to act on, emitted no event but its overflow
// ones, changed nothing a cycle reads, and left the reservation it began
// with), when it ran, and the counts of calls and changes it ended at.
type quietCycle struct {
	ok    bool
	at    time.Time
	calls uint64
	stamp stamp
	// next is NextChange's answer once found.
	found bool
	next  time.Time
	// overflow and broken are its Overflow and Broken lists, kept under
	// -tags fleetverify only (checkNextChange).
	overflow []Overflow
	broken   []calendar.Offer
}

// NextChange returns the earliest time at or after now at which a cycle
// could decide differently from one run now, if the host makes no call
// in between (no submission, exit, health or usage report, quota,
// booking or node change; a checkpoint is allowed: it moves only what a
// victim costs, which orders plans but never decides whether one
// exists). A host may skip every Schedule call before that time: each
// would act on nothing (no Kill, Drain, Failed, Replace, Grow, Admit or
// Nominate), repeat the last cycle's Overflow and Broken lists and its
// EventOverflow events, and change nothing later cycles read. It
// returns the zero Time when no time-based input lies ahead.
//
// The answer is now unless the last cycle was quiet: it listed nothing
// to act on, emitted no event but its overflow ones, changed neither
// the books, the quota tree nor the fleet, and carried the reservation
// it began with, and no call counted since. Otherwise the state is a fixed point of the cycle
// until the first of the instants at which a comparison with the clock
// turns: a drain deadline (a kill), the end of a holder's MinRuntime, a
// pending workload reaching Policy.WaitLimit or the overflow target, a
// quota schedule boundary, a booking's drain (KillLead ahead of the
// calendar's), start and end, and the instant a pending workload's
// expected runtime stops ending before a booking's drain or a
// reservation's planned start, an idle limit, a lost pod's
// Policy.HotSwapWait, and a defragmentation plan leaving the budget's
// hour. While a workload waits for a defragmentation plan under a
// budget, whose price grows with time, the answer is now.
//
// It is conservative: a cycle at the time returned may well decide
// nothing. It changes nothing but the ledger's record of protections
// that have ended, which every cycle prunes too.
func (s *Scheduler) NextChange(now time.Time) time.Time {
	q := &s.quiet
	if !q.ok || q.calls != s.calls || q.stamp != s.stamp() || s.adoptedDrains || !now.After(q.at) {
		return now
	}
	if !q.found {
		q.next, q.found = s.nextChange(q.at), true
	}
	if !q.next.IsZero() && !q.next.After(now) {
		return now
	}
	return q.next
}

// nextChange is the first instant after t0, the time of the last cycle
// (quiet), at which a comparison of the clock the cycle makes turns, or
// zero when none lies ahead; t0 itself when one may turn at any instant. Nothing it reads moves without a change of
// the stamp or a counted call, so it is found once per quiet cycle.
func (s *Scheduler) nextChange(t0 time.Time) time.Time {
	if s.cfg.Policy.DefragBudget > 0 {
		// The price of a move grows with time: whether one fits the
		// budget may turn at any instant.
		for _, e := range s.queued {
			if nf := e.wait.noFit; nf != nil && nf.Cause == placement.CauseFragmented {
				return t0
			}
		}
	}
	var next time.Time
	consider := func(t time.Time) {
		if t.After(t0) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	considerOK := func(t time.Time, ok bool) {
		if ok {
			consider(t)
		}
	}
	considerOK(s.books.NextDeadline(t0))
	considerOK(s.books.ProtectionEnds(t0))
	if s.sched != nil {
		consider(s.nextQuota)
	}
	considerOK(s.cal.NextEvent(t0))
	if s.idle.due != nil {
		if k, ok := s.idle.due.Min(); ok {
			consider(k.due)
		}
	}
	if s.cfg.Policy.DefragBudget > 0 {
		for _, x := range s.defragSpent {
			consider(x.at.Add(time.Hour))
		}
	}
	wait := s.cfg.Policy.HotSwapWait
	if wait == 0 {
		wait = DefaultHotSwapWait
	}
	for _, r := range s.books.Degraded() {
		if len(r.Lost) > 0 {
			consider(r.Lost[0].Since.Add(wait))
		}
	}
	s.pendingChanges(t0, consider)
	return next
}

// pendingChanges passes to consider the instants at which a comparison of
// the clock with a pending workload's times turns.
func (s *Scheduler) pendingChanges(t0 time.Time, consider func(time.Time)) {
	target := s.cfg.Policy.OverflowAfter
	if target == 0 {
		target = DefaultOverflowAfter
	}
	limit := s.cfg.Policy.WaitLimit
	holds := s.cal.AppendHeld(nil, t0)
	for _, e := range s.queued {
		if limit > 0 {
			consider(e.submitted.Add(limit))
		}
		if e.w.Shape == gang.Inference {
			consider(e.submitted.Add(target))
		}
		s.runtimeChanges(e.w.ExpectedRuntime, holds, consider)
	}
	// Shrunken elastic work grows in a cycle after the one it started in,
	// into room its runtime keeps it out of or lets it into.
	if s.books.NumShrunk() > 0 {
		for _, r := range s.books.Shrunken() {
			consider(r.Started.Add(time.Nanosecond))
			s.runtimeChanges(r.W.ExpectedRuntime, holds, consider)
		}
	}
	for _, h := range holds {
		consider(h.DrainAt.Add(-KillLead))
		consider(h.Start.Add(-KillLead))
	}
}

// runtimeChanges passes to consider the instants at which work expected
// to run for rt stops ending before a booking's drain or the planned
// start of the reservation. A comparison of now+rt with an instant t
// turns at t-rt; an earlier instant is as good, so whether it is strict
// does not matter.
func (s *Scheduler) runtimeChanges(rt time.Duration, holds []calendar.Hold, consider func(time.Time)) {
	if rt <= 0 {
		return
	}
	for _, h := range holds {
		consider(h.DrainAt.Add(-KillLead - rt))
	}
	if r := s.lastReserve; r != nil && !r.start.IsZero() {
		consider(r.start.Add(-rt))
	}
}

// noteQuiet records, at the end of the cycle at now, whether it was
// quiet: d lists nothing to act on, it emitted no event but one per
// Overflow entry (emitted: the events it added, kept or not), nothing it
// reads changed (before: the stamp it began with), and it ends with the
// reservation it began with (carried). A queue that stops overflowing
// emits one more event, so that cycle is not quiet.
func (s *Scheduler) noteQuiet(now time.Time, d *Decisions, emitted int, before stamp, carried *reservation) {
	quiet := emitted == len(d.Overflow) && before == s.stamp() && sameReservation(carried, s.lastReserve) &&
		len(d.Kill) == 0 && len(d.Drain) == 0 && len(d.Failed) == 0 && len(d.Replace) == 0 &&
		len(d.Grow) == 0 && len(d.Admit) == 0 && len(d.Nominate) == 0
	s.quiet = quietCycle{ok: quiet, at: now, calls: s.calls, stamp: s.stamp()}
	if verifyNextChange {
		s.quiet.overflow, s.quiet.broken = slices.Clone(d.Overflow), slices.Clone(d.Broken)
	}
}

// sameReservation reports whether a cycle that begins with a carried
// hold for the same gang, domain and priority as r would begin as one
// that began with c did.
func sameReservation(c, r *reservation) bool {
	if c == nil || r == nil {
		return c == nil && r == nil
	}
	return c.id == r.id && c.priority == r.priority && c.level == r.level && c.group == r.group && c.domain == r.domain
}
