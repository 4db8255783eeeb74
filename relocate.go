package fleet

import (
	"strings"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/topology"
)

// A node down inside an approved booking's block. The calendar answers
// with an offer (calendar.Offer): keep the block when its other nodes
// still hold the booking, move to a whole healthy domain of the same
// level free for the rest of the window, or none. The failure is an
// EventBlockBroken carrying the offer, Decisions.Broken lists the offer
// every cycle until it is settled, Explain tells the booking's workloads,
// and RelocateBooking is the host's journaled acceptance. A repair that
// makes the blocks whole withdraws the offer (EventBlockWhole).

// bookedHealth tells the calendar about a node's health change, after the
// books have it, and records what it answers.
func (s *Scheduler) bookedHealth(now time.Time, n topology.NodeID, h topology.Health) {
	switch h {
	case topology.Down:
		for _, o := range s.cal.NodeDown(now, n, s.running()) {
			s.emit(Event{Kind: EventBlockBroken, Time: now, Booking: o.Booking, Queue: o.Queue, Node: s.fleet.NodeName(n),
				Reason: o.Remedy.String(), NewNode: strings.Join(o.Replacements, "+"), GPUs: o.Short})
		}
	case topology.Healthy:
		for _, id := range s.cal.NodeUp(now, n, s.running()) {
			s.emit(Event{Kind: EventBlockWhole, Time: now, Booking: id, Node: s.fleet.NodeName(n)})
		}
	}
}

// RelocateBooking accepts the calendar's offer to move booking id's
// blocks broken by a node failure to the replacement blocks it named, as
// decided by who: from now on the booking holds the replacements (drained
// for it with the contract, as any booked block) and no longer the broken
// blocks. The booking's workloads still running in a broken block keep
// running; those pending start in the new set. The decision is journaled
// by the calendar and kept by Snapshot. It is refused, with nothing
// changed, when no Move offer is pending for id, when the replacement was
// booked meanwhile (*calendar.ConflictError) or would over-commit the
// guarantees (*calendar.OverCommitError).
func (s *Scheduler) RelocateBooking(now time.Time, id, who string) (calendar.Booking, error) {
	if err := s.tick("relocate-booking", now); err != nil {
		return calendar.Booking{}, err
	}
	o, _ := s.cal.OfferFor(id)
	b, err := s.cal.Relocate(now, id, who)
	if err != nil {
		return calendar.Booking{}, bookingError("relocate-booking", id, err)
	}
	s.advance(now)
	s.emit(Event{Kind: EventRelocated, Time: now, Booking: id, Queue: b.Queue,
		Node: strings.Join(o.Broken, "+"), NewNode: strings.Join(o.Replacements, "+")})
	return b, nil
}

// brokenNote is what Explain adds for a workload of a booking with a node
// down in its blocks.
func (s *Scheduler) brokenNote(booking string) (string, bool) {
	if booking == "" {
		return "", false
	}
	o, ok := s.cal.OfferFor(booking)
	if !ok {
		return "", false
	}
	return o.String(), true
}
