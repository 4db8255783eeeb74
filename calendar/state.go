package calendar

import (
	"time"

	"github.com/fleetsched/fleet/quota"
)

// State is everything a Calendar holds, as plain data for a snapshot: the
// approved bookings, the proposals awaiting a decision and the decision
// log. It marshals to JSON; Restore rebuilds the Calendar from it.
type State struct {
	// Time is the latest now a decision was made at.
	Time      time.Time  `json:"time"`
	Bookings  []Booking  `json:"bookings,omitempty"`
	Proposals []Proposal `json:"proposals,omitempty"`
	Log       []Decision `json:"log,omitempty"`
	// Offers are the answers to node failures in booked blocks awaiting
	// the host.
	Offers []Offer `json:"offers,omitempty"`
}

// Snapshot returns the Calendar's state. The caller owns it.
func (c *Calendar) Snapshot() State {
	st := State{Time: c.now, Bookings: c.Bookings(), Proposals: c.Proposals(), Log: c.Log()}
	for _, id := range sortedKeys(c.offers) {
		if c.bookings[id] != nil {
			st.Offers = append(st.Offers, c.offers[id].clone())
		}
	}
	return st
}

// Restore builds a Calendar from cfg and a snapshot. It checks the state
// as Approve would have, except for the start (bookings may be under way):
// every booking resolves against the fleet and tree, no two conflict from
// st.Time on (a relocation may have moved one into a block another held
// before), the promise holds from st.Time on, the log's sequence is in order, and each
// proposal's options still name domains of its level. A refused state
// returns an *Error wrapping the rule broken (or a *ConflictError or
// *OverCommitError) and no Calendar.
func Restore(cfg Config, st State) (*Calendar, error) {
	c, err := New(st.Time, cfg)
	if err != nil {
		return nil, err
	}
	for _, rec := range st.Bookings {
		b, err := c.rebuild("restore", rec)
		if err != nil {
			return nil, err
		}
		if c.bookings[b.ID] != nil {
			return nil, refuse("restore", b.ID, ErrDuplicateID, "")
		}
		// Only the rest of the window is checked: a booking relocated into
		// a block another held in the past shares it at instants over.
		if start := rest(b, st.Time); start.Before(b.End) {
			if cs := c.conflicts(b.domains, start, b.End, ""); len(cs) > 0 {
				return nil, &ConflictError{Booking: b.ID, Conflicts: cs}
			}
		}
		c.insert(b)
	}
	if err := c.Validate(st.Time); err != nil {
		return nil, err
	}
	for i, d := range st.Log {
		if d.Seq != i+1 || !d.Kind.Valid() {
			return nil, refuse("restore", d.Booking, ErrInvalidLog, "decision %d: seq %d, kind %v", i+1, d.Seq, d.Kind)
		}
		c.log = append(c.log, d.clone())
	}
	for _, p := range st.Proposals {
		p = p.clone()
		l, ok := c.fleet.Level(p.Request.Level)
		if !ok || p.Request.ID == "" || c.proposals[p.Request.ID] != nil {
			return nil, refuse("restore", p.Request.ID, ErrInvalidRequest, "proposal of level %q", p.Request.Level)
		}
		for i := range p.Options {
			o := &p.Options[i]
			o.Domains = o.Domains[:0]
			for _, name := range o.DomainNames {
				d, ok := c.fleet.Domain(l, name)
				if !ok {
					return nil, refuse("restore", p.Request.ID, ErrUnknownLevel, "option %d: domain %q of level %s", i, name, p.Request.Level)
				}
				o.Domains = append(o.Domains, d)
			}
			if o.Index != i {
				return nil, refuse("restore", p.Request.ID, ErrUnknownOption, "option %d has index %d", i, o.Index)
			}
		}
		c.proposals[p.Request.ID] = &p
	}
	for _, o := range st.Offers {
		if c.bookings[o.Booking] == nil || !o.Remedy.Valid() || c.offers[o.Booking].Booking != "" ||
			o.Remedy == Move && len(o.Replacements) != len(o.Broken) {
			return nil, refuse("restore", o.Booking, ErrNoOffer, "offer for booking %q", o.Booking)
		}
		c.offers[o.Booking] = o.clone()
	}
	c.now = st.Time
	return c, nil
}

// SetSchedule replaces the quota schedule (nil: the tree's quotas). It
// refuses, leaving the Calendar unchanged, a schedule under which the
// guarantees plus the approved bookings would exceed capacity at some
// instant from now on.
func (c *Calendar) SetSchedule(now time.Time, s *quota.Schedule) error {
	old := c.cfg.Schedule
	c.cfg.Schedule = s
	if s != nil {
		if err := c.checkSchedule(s); err != nil {
			c.cfg.Schedule = old
			return err
		}
	}
	if err := c.Validate(now); err != nil {
		c.cfg.Schedule = old
		return err
	}
	// The promise was checked from now on: a snapshot taken after this
	// is restored from now on too, not from an instant the new schedule
	// was never checked at.
	if now.After(c.now) {
		c.now = now
	}
	return nil
}
