package calendar

import (
	"slices"
	"time"

	"github.com/fleetsched/fleet/topology"
)

// Approve binds option option of the pending proposal id, as decided by
// who at now: from now on the booking is a promise (see the package
// documentation for what the host owes it). The option is checked again,
// since other approvals may have come since it was proposed: it is
// refused with an *Error (no decider, unknown proposal or option, start
// passed, ID taken), a *ConflictError (it overlaps an approved booking of
// the same block, or of one above or below it) or an *OverCommitError
// (guarantees plus bookings would exceed capacity at some instant of the
// window), and the Calendar is then unchanged. Approval is journaled.
func (c *Calendar) Approve(now time.Time, id string, option int, who string) (Booking, error) {
	if who == "" {
		return Booking{}, refuse("approve", id, ErrNoDecider, "")
	}
	p, ok := c.proposals[id]
	if !ok {
		return Booking{}, refuse("approve", id, ErrUnknownProposal, "%s", c.noProposal(id))
	}
	if option < 0 || option >= len(p.Options) {
		return Booking{}, refuse("approve", id, ErrUnknownOption, "option %d of %d", option, len(p.Options))
	}
	r, err := c.resolve("approve", now, p.Request)
	if err != nil {
		return Booking{}, err
	}
	o, req := p.Options[option], p.Request
	b := &Booking{
		ID: req.ID, Queue: req.Queue, Flavor: req.Flavor, Pool: req.Pool, GPUs: r.gpus,
		PodSets: slices.Clone(req.PodSets), Level: req.Level, Domains: slices.Clone(o.DomainNames),
		Held: o.GPUs, Start: req.Start, End: req.End(), Grace: r.grace,
		ApprovedBy: who, ApprovedAt: now, Option: option,
		domains: slices.Clone(o.Domains), flavor: r.flavor, queue: r.queue,
	}
	if err := c.admit("approve", now, b); err != nil {
		return Booking{}, err
	}
	c.insert(b)
	delete(c.proposals, id)
	out := b.plain()
	c.record(Decision{At: now, Who: who, Kind: Approve, Booking: id, Approved: &out})
	return b.plain(), nil
}

// noProposal says why there is no pending proposal id, from the last
// decision about it, and what to do.
func (c *Calendar) noProposal(id string) string {
	for i := len(c.log) - 1; i >= 0; i-- {
		d := c.log[i]
		if d.Booking != id {
			continue
		}
		when := d.At.Format(time.RFC3339) + " by " + d.Who
		switch d.Kind {
		case Approve, Shorten, Relocate:
			if c.bookings[id] != nil {
				return "it was approved " + c.bookings[id].ApprovedAt.Format(time.RFC3339) + " by " + c.bookings[id].ApprovedBy +
					" and is booked: nothing to approve; propose under a new ID for another booking"
			}
			return "it was booked and the booking is over: propose it again to book it anew"
		case Reject:
			return "it was rejected " + when + ": propose it again to decide anew"
		case Cancel:
			return "its booking was cancelled " + when + ": propose it again to book it anew"
		}
	}
	return "nothing is proposed under this ID (or its start passed): propose it first"
}

// admit checks that b can be bound at now: a decider, a window not yet
// started, an unused ID, no conflict, no over-commitment.
func (c *Calendar) admit(op string, now time.Time, b *Booking) error {
	switch {
	case b.ApprovedBy == "":
		return refuse(op, b.ID, ErrNoDecider, "")
	case b.Start.Before(now):
		return refuse(op, b.ID, ErrStartInPast, "start %s is before now %s", b.Start.Format(time.RFC3339), now.Format(time.RFC3339))
	case !b.End.After(b.Start):
		return refuse(op, b.ID, ErrBadDuration, "end %s is not after start %s", b.End.Format(time.RFC3339), b.Start.Format(time.RFC3339))
	case c.bookings[b.ID] != nil:
		return refuse(op, b.ID, ErrDuplicateID, "")
	}
	if cs := c.conflicts(b.domains, b.Start, b.End, ""); len(cs) > 0 {
		return &ConflictError{Booking: b.ID, Conflicts: cs}
	}
	if e := c.overCommit(b.flavor, b.Start, b.End, b, ""); e != nil {
		return e
	}
	return nil
}

// rebuild resolves a recorded booking's names against this Calendar's
// fleet and tree, and checks that its blocks still hold what it says.
func (c *Calendar) rebuild(op string, rec Booking) (*Booking, error) {
	b := rec.clone()
	bad := func(err error, format string, args ...any) (*Booking, error) {
		return nil, refuse(op, rec.ID, err, format, args...)
	}
	if b.ID == "" {
		return bad(ErrInvalidRequest, "empty ID")
	}
	l, ok := c.fleet.Level(b.Level)
	if !ok {
		return bad(ErrUnknownLevel, "level %q", b.Level)
	}
	f, ok := c.tree.Flavor(b.Flavor)
	if !ok {
		return bad(ErrUnknownFlavor, "flavor %q", b.Flavor)
	}
	q, ok := c.tree.Node(b.Queue)
	if !ok || !c.tree.IsQueue(q) || !c.tree.Serves(q, f) {
		return bad(ErrUnknownQueue, "queue %q with flavor %s", b.Queue, b.Flavor)
	}
	b.flavor, b.queue = f, q
	var groups []topology.GroupID
	for g := range topology.GroupID(c.fleet.NumGroups()) {
		if c.fleet.GroupFlavor(g) == b.Flavor && (b.Pool == "" || c.fleet.GroupPool(g) == b.Pool) {
			groups = append(groups, g)
		}
	}
	held := 0
	b.domains = make([]topology.DomainID, 0, len(b.Domains))
	for _, name := range b.Domains {
		d, ok := c.fleet.Domain(l, name)
		if !ok || slices.Contains(b.domains, d) {
			return bad(ErrUnknownLevel, "domain %q of level %s", name, b.Level)
		}
		b.domains = append(b.domains, d)
		held += c.gpusOf(d, groups)
	}
	if len(b.domains) == 0 || held != b.Held {
		return bad(ErrTooLarge, "blocks %v hold %d GPUs of %s, the booking says %d", b.Domains, held, b.Flavor, b.Held)
	}
	if b.Grace < 0 {
		return bad(ErrInvalidRequest, "grace %s", b.Grace)
	}
	if !b.End.After(b.Start) || !inRFC3339(b.Start) || !inRFC3339(b.End) {
		return bad(ErrBadDuration, "window %s to %s", b.Start.Format(time.RFC3339), b.End.Format(time.RFC3339))
	}
	if b.GPUs < 0 || b.GPUs > b.Held {
		return bad(ErrTooLarge, "gpus %d, its blocks hold %d", b.GPUs, b.Held)
	}
	return &b, nil
}

// Reject drops the pending proposal id, as decided by who at now, and
// journals it. It refuses an unknown proposal or an empty who.
func (c *Calendar) Reject(now time.Time, id, who, reason string) error {
	if who == "" {
		return refuse("reject", id, ErrNoDecider, "")
	}
	if _, ok := c.proposals[id]; !ok {
		return refuse("reject", id, ErrUnknownProposal, "%s", c.noProposal(id))
	}
	delete(c.proposals, id)
	c.record(Decision{At: now, Who: who, Kind: Reject, Booking: id, Reason: reason})
	return nil
}

// Cancel withdraws booking id at now, as decided by who: its blocks are
// no longer held (from now on, if it had started). It refuses an unknown
// booking, one that has ended, or an empty who.
func (c *Calendar) Cancel(now time.Time, id, who, reason string) error {
	if who == "" {
		return refuse("cancel", id, ErrNoDecider, "")
	}
	b, ok := c.bookings[id]
	switch {
	case !ok:
		return refuse("cancel", id, ErrUnknownBooking, "")
	case !b.End.After(now):
		return refuse("cancel", id, ErrEnded, "it ended at %s", b.End.Format(time.RFC3339))
	}
	c.remove(b)
	delete(c.offers, id)
	c.record(Decision{At: now, Who: who, Kind: Cancel, Booking: id, Reason: reason})
	return nil
}

// Shorten moves booking id's end to end, as decided by who at now. The
// new end must be after the start, before the current end and not before
// now (end == now ends it now). A shorter booking promises less, so it is
// never refused for quota. It refuses an unknown or ended booking, a bad
// end or an empty who.
func (c *Calendar) Shorten(now time.Time, id string, end time.Time, who, reason string) error {
	if who == "" {
		return refuse("shorten", id, ErrNoDecider, "")
	}
	b, ok := c.bookings[id]
	switch {
	case !ok:
		return refuse("shorten", id, ErrUnknownBooking, "")
	case !b.End.After(now):
		return refuse("shorten", id, ErrEnded, "it ended at %s", b.End.Format(time.RFC3339))
	case !end.After(b.Start) || !end.Before(b.End) || end.Before(now):
		return refuse("shorten", id, ErrBadEnd, "end %s: want after the start %s, before the end %s and not before now %s",
			end.Format(time.RFC3339), b.Start.Format(time.RFC3339), b.End.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	b.End = end // indexes are keyed by start: only the bound of a scan may now be loose
	c.gen++
	c.record(Decision{At: now, Who: who, Kind: Shorten, Booking: id, End: end, Reason: reason})
	return nil
}
