package fleet

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Bookings of future capacity. A team proposes a block (say 1,024 GPUs as
// two whole spines, three weeks from a date), gets the options the
// calendar finds, and someone approves one: only then does it bind. From
// the approval the Scheduler keeps the promise:
//
//   - Booked: new work that would still run at the drain is kept off the
//     blocks (placed around them); preemptible work and work expected to
//     end before the drain (ExpectedRuntime) may still use them.
//   - Draining (the start minus the booking's grace, and KillLead): every
//     other workload in the blocks is drained with its contract, deadline
//     KillLead before the start, so the blocks are whole at the start.
//   - Active (the window): the booking's workloads (gang.Workload.Booking)
//     start inside the blocks, charged to the booking's queue but not
//     refused by its quota (the calendar promised the capacity), and
//     nothing preempts them; idle GPUs of the blocks are lent to
//     preemptible work, which is drained again when a booking workload
//     needs the room.
//
// Bookings are journaled decisions (who, when, which option), are kept by
// Snapshot and Restore, and show in Explain ("behind booking X").

// Propose asks the calendar for the options of a booking request, from
// the fleet as it runs now. It changes nothing but the calendar's pending
// proposals.
func (s *Scheduler) Propose(now time.Time, req calendar.Request) ([]calendar.Option, error) {
	if err := s.tick("propose", now); err != nil {
		return nil, err
	}
	opts, err := s.cal.Propose(now, req, s.running())
	if err != nil {
		return nil, &Error{Op: "propose", Detail: req.ID, Err: err}
	}
	s.advance(now)
	return opts, nil
}

// running is the calendar's view of the work holding GPUs now.
func (s *Scheduler) running() []calendar.Running {
	var running []calendar.Running
	s.books.Holders(func(r *ledger.Record) bool {
		x := calendar.Running{ID: r.W.ID, Queue: r.W.Queue, Priority: r.W.Priority, Preemptible: r.Policy.Preemptible,
			Borrowing: r.Borrowing, Nodes: r.Nodes}
		if r.W.ExpectedRuntime > 0 {
			x.End = r.Started.Add(r.W.ExpectedRuntime)
		}
		running = append(running, x)
		return true
	})
	return running
}

// Approve binds option of proposal id: who decided, and when, is
// journaled by the calendar. It is refused (nothing changes) for an
// unknown proposal or option, or one that conflicts with approved
// bookings or over-commits the guarantees.
func (s *Scheduler) Approve(now time.Time, id string, option int, who string) (calendar.Booking, error) {
	if err := s.tick("approve", now); err != nil {
		return calendar.Booking{}, err
	}
	b, err := s.cal.Approve(now, id, option, who)
	if err != nil {
		return calendar.Booking{}, bookingError("approve", id, err)
	}
	s.advance(now)
	return b, nil
}

// Reject turns a proposal down.
func (s *Scheduler) Reject(now time.Time, id, who, reason string) error {
	if err := s.tick("reject", now); err != nil {
		return err
	}
	if err := s.cal.Reject(now, id, who, reason); err != nil {
		return bookingError("reject", id, err)
	}
	s.advance(now)
	return nil
}

// CancelBooking releases an approved booking's blocks. Its workloads keep
// running as ordinary work.
func (s *Scheduler) CancelBooking(now time.Time, id, who, reason string) error {
	if err := s.tick("cancel-booking", now); err != nil {
		return err
	}
	if err := s.cal.Cancel(now, id, who, reason); err != nil {
		return bookingError("cancel-booking", id, err)
	}
	s.advance(now)
	return nil
}

// ShortenBooking moves an approved booking's end earlier.
func (s *Scheduler) ShortenBooking(now time.Time, id string, end time.Time, who, reason string) error {
	if err := s.tick("shorten-booking", now); err != nil {
		return err
	}
	if err := s.cal.Shorten(now, id, end, who, reason); err != nil {
		return bookingError("shorten-booking", id, err)
	}
	s.advance(now)
	return nil
}

// Bookings lists the approved bookings.
func (s *Scheduler) Bookings() []calendar.Booking { return s.cal.Bookings() }

// holds is what the calendar holds in one cycle.
type holds struct {
	list []calendar.Hold
	// waiting marks bookings with a workload that found no room in its
	// blocks this cycle: nothing more is lent there.
	waiting map[string]bool
	// against keeps holdsAgainst's answers, one per class of workload,
	// for the now they were found at (at), while valid: each is found
	// once a cycle, not once per workload and call.
	against []heldSet
	at      time.Time
	valid   bool
	// scratch is a buffer for the held domains plus a reserved one.
	scratch []topology.DomainID
}

// heldClass is what of a workload decides which held blocks it may not
// enter (holdsAgainst): its booking, whether it is preemptible and, for
// work that is not, its expected run time.
type heldClass struct {
	booking     string
	preemptible bool
	runtime     time.Duration
}

// heldSet is holdsAgainst's answer for one class.
type heldSet struct {
	class heldClass
	// domains are the held domains, each once, in the calendar's order.
	domains []topology.DomainID
	// holds are the domains of every hold the class may not enter, a
	// domain held by several bookings once per booking: what the failure
	// memo tells avoid sets apart by (avoidSet).
	holds []topology.DomainID
	// avoid is the index plus one of holds in the cycle's avoidSets, and
	// avoidReserve that of holds with the reserved domain reserveDomain
	// added (0: not interned yet); withReserved is domains with it.
	avoid, avoidReserve int
	reserveDomain       topology.DomainID
	withReserved        []topology.DomainID
}

// invalidateHeld drops holdsAgainst's answers: the holds or what decides
// them changed.
func (s *Scheduler) invalidateHeld() {
	s.held.valid = false
	s.held.against = s.held.against[:0]
}

// loadHolds reads the calendar's holds for this cycle.
func (s *Scheduler) loadHolds(now time.Time) {
	clear(s.held.waiting)
	s.invalidateHeld()
	s.held.list = s.cal.AppendHeld(s.held.list[:0], now)
	if len(s.held.list) == 0 {
		return
	}
	// While any workload of a booking waits, nothing more is lent in its
	// blocks: the whole cycle, not only after its turn.
	for _, e := range s.queued {
		if e.w.Booking != "" {
			s.held.waiting[e.w.Booking] = true
		}
	}
	// So does a booking's gang waiting for a replacement of a lost pod.
	for _, r := range s.books.Degraded() {
		if b := r.W.Booking; b != "" {
			s.held.waiting[b] = true
		}
	}
}

// drainBooked drains, from a booking's drain on, every workload in its
// blocks that is not the booking's own, with the start as deadline (or
// the workload's grace once the window has begun), so the blocks are
// whole at the start.
func (s *Scheduler) drainBooked(now time.Time, d *Decisions) {
	for _, h := range s.held.list {
		// The drain starts KillLead ahead of the calendar's, with the
		// deadline KillLead before the start: a victim that overstays is
		// killed, and gone, before the start, not at it.
		if h.Phase == calendar.Active || now.Before(h.DrainAt.Add(-KillLead)) {
			continue
		}
		deadline := h.Start.Add(-KillLead)
		if deadline.Before(now) {
			// A block that joined the booking late (relocated after a
			// node failure) still gives its work the drain contract.
			deadline = now.Add(s.cal.Grace())
		}
		s.drainBlock(now, h, deadline, d)
	}
}

// KillLead is how long before a booking's start its blocks' drain
// deadlines fall, so that work killed at its deadline has left when the
// block starts.
const KillLead = time.Minute

// drainBlock drains the other work in hold h's domain by deadline (at the
// latest; a workload's own grace may end earlier).
func (s *Scheduler) drainBlock(now time.Time, h calendar.Hold, deadline time.Time, d *Decisions) {
	lo, hi := s.fleet.Nodes(h.Domain)
	for _, id := range s.books.OnNodes(lo, hi) {
		e := s.work[id]
		if e.w.Booking == h.Booking || e.state() != gang.Admitted {
			continue
		}
		at := now.Add(e.grace())
		if deadline.Before(at) {
			at = deadline
		}
		if at.Before(now) {
			at = now
		}
		r, err := s.books.DrainFor(id, now, at, gang.DrainBooking)
		if err != nil {
			panic("fleet: draining a holder of a booked block: " + err.Error())
		}
		dr := Drain{ID: id, Deadline: r.Drain.Deadline, Reason: r.Drain.Reason}
		d.Drain = append(d.Drain, dr)
		ev := s.event(EventDrainStarted, now, e)
		ev.Reason, ev.Deadline, ev.Node = dr.Reason.String(), dr.Deadline, h.Name
		s.emit(ev)
	}
}

// holdsAgainst lists the held domains e may not enter now: all of them
// for work that would still run at a booking's drain, except preemptible
// work (it is drained when the booking needs the room) and, while the
// booking is only booked, work expected to end before its drain; during
// a booking's window, preemptible work may use its idle GPUs unless one
// of its workloads waits for room. Each domain is listed once, in the
// calendar's order.
//
// The list is found once per class of workload (heldClass) and kept
// until the holds, now or a booking's waiting change: callers must not
// change it, and use it before then.
func (s *Scheduler) holdsAgainst(now time.Time, e *entry) []topology.DomainID {
	if len(s.held.list) == 0 {
		return nil
	}
	d := s.held.against[s.heldFor(now, e)].domains
	return d[:len(d):len(d)] // an append copies
}

// heldFor is the position in held.against of holdsAgainst's answer for
// e's class, found at the first call for the class at now.
func (s *Scheduler) heldFor(now time.Time, e *entry) int {
	if !s.held.valid || !s.held.at.Equal(now) {
		s.invalidateHeld()
		s.held.valid, s.held.at = true, now
	}
	c := heldClass{booking: e.w.Booking, preemptible: e.rec.Policy.Preemptible}
	if !c.preemptible {
		c.runtime = e.w.ExpectedRuntime
	}
	for i := range s.held.against {
		if s.held.against[i].class == c {
			return i
		}
	}
	// The slot's lists from an earlier cycle are reused.
	i := len(s.held.against)
	if i < cap(s.held.against) {
		s.held.against = s.held.against[:i+1]
	} else {
		s.held.against = append(s.held.against, heldSet{})
	}
	set := &s.held.against[i]
	*set = heldSet{class: c, holds: set.holds[:0], domains: set.domains[:0], withReserved: set.withReserved[:0]}
	for _, h := range s.held.list {
		if c.booking == h.Booking {
			continue
		}
		switch h.Phase {
		case calendar.Booked:
			closing := !now.Before(h.DrainAt.Add(-KillLead)) // the block's drain has begun
			if !closing && (c.preemptible || c.runtime > 0 && !now.Add(c.runtime).After(h.DrainAt.Add(-KillLead))) {
				continue
			}
		case calendar.Active:
			if c.preemptible && !s.held.waiting[h.Booking] {
				continue
			}
		}
		set.holds = append(set.holds, h.Domain)
		if !slices.Contains(set.domains, h.Domain) {
			set.domains = append(set.domains, h.Domain)
		}
	}
	return i
}

// withReserve is held plus the reserved domain, in a buffer the next
// call reuses.
func (s *Scheduler) withReserve(held []topology.DomainID) []topology.DomainID {
	s.held.scratch = append(append(s.held.scratch[:0], held...), s.reserve.domain)
	return s.held.scratch
}

// touches reports whether a has a pod in one of the domains.
func (s *Scheduler) touches(a placement.Assignment, doms []topology.DomainID) bool {
	for _, d := range doms {
		lo, hi := s.fleet.Nodes(d)
		for _, p := range a.Pods {
			if p.Node >= lo && p.Node < hi {
				return true
			}
		}
	}
	return false
}

// admitBooked starts a booking's workload inside its blocks during the
// window. Before the start it waits; when the blocks have no room it
// drains the preemptible work lent their idle GPUs and waits for it.
func (s *Scheduler) admitBooked(now time.Time, e *entry, d *Decisions) admitResult {
	var mine []calendar.Hold
	for _, h := range s.held.list {
		if h.Booking == e.w.Booking {
			mine = append(mine, h)
		}
	}
	e.wait.behind = e.w.Booking
	if len(mine) == 0 || mine[0].Phase != calendar.Active {
		e.wait.reason = WaitBooking
		return notAdmitted
	}
	// Every domain of the blocks' level outside the booking is out of
	// bounds.
	l := s.fleet.DomainLevel(mine[0].Domain)
	lo, hi := s.fleet.DomainsAt(l)
	var avoid []topology.DomainID
	for dom := lo; dom < hi; dom++ {
		if !slices.ContainsFunc(mine, func(h calendar.Hold) bool { return h.Domain == dom }) {
			avoid = append(avoid, dom)
		}
	}
	a, err := s.placer.PlaceAvoiding(s.fleet, &e.w, avoid...)
	if err != nil {
		e.wait.reason = WaitBooking
		if !s.held.waiting[e.w.Booking] {
			s.held.waiting[e.w.Booking] = true
			s.invalidateHeld()
		}
		for _, h := range mine {
			s.drainBlock(now, h, now.Add(s.cal.Grace()), d)
		}
		return notAdmitted
	}
	if err := s.books.Admit(e.w.ID, a.Clone(), now); err != nil {
		panic(fmt.Sprintf("fleet: admitting booked work on a fresh placement: %v", err))
	}
	s.dequeue(e)
	s.admitted(now, e, d)
	return admitted
}

// bookingError wraps a calendar refusal of op on booking id. A
// *calendar.Error already names the call and the booking, and is kept as
// it says it; the others get the booking's name.
func bookingError(op, id string, err error) error {
	if _, ok := errors.AsType[*calendar.Error](err); ok {
		return &Error{Err: err}
	}
	return &Error{Op: op, Detail: fmt.Sprintf("booking %q", id), Err: err}
}
