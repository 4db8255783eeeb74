package calendar

import (
	"fmt"
	"slices"
	"time"
)

// Kind is what a decision did.
type Kind uint8

const (
	// Approve bound an option of a proposal: the booking exists from then.
	Approve Kind = iota + 1
	// Reject dropped a proposal.
	Reject
	// Cancel withdrew a booking (from then on, if it had started).
	Cancel
	// Shorten moved a booking's end earlier.
	Shorten
	// Relocate replaced blocks of a booking broken by a node failure by
	// the blocks the calendar offered.
	Relocate
)

func kindNames() []string { return []string{"", "approve", "reject", "cancel", "shorten", "relocate"} }

// Valid reports whether k is one of the kinds.
func (k Kind) Valid() bool { return k >= Approve && k <= Relocate }

// String returns the kind's name, as specs and messages spell it.
func (k Kind) String() string {
	if k.Valid() {
		return kindNames()[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("%w: kind %d", ErrInvalidLog, uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames() {
		if n != "" && n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("%w: kind %q", ErrInvalidLog, b)
}

// Decision is one journaled decision: who decided what, and when. The log
// of decisions, replayed in order on a Calendar built from the same
// Config, rebuilds the same bookings (Replay).
type Decision struct {
	Seq  int       `json:"seq"`  // 1, 2, ... in order
	At   time.Time `json:"at"`   // when it was decided
	Who  string    `json:"who"`  // who decided
	Kind Kind      `json:"kind"` // approve, reject, cancel, shorten or relocate
	// Booking names the booking (or, for Reject, the proposal).
	Booking string `json:"booking"`
	// Approved is the booking as bound, for Approve: replay needs no
	// proposal.
	Approved *Booking `json:"approved,omitempty"`
	// End is the new end, for Shorten.
	End time.Time `json:"end,omitzero"`
	// From and To are the blocks replaced and their replacements, one for
	// one, for Relocate.
	From []string `json:"from,omitempty"`
	To   []string `json:"to,omitempty"`
	// Reason is the decider's note, if any.
	Reason string `json:"reason,omitempty"`
}

func (d Decision) clone() Decision {
	if d.Approved != nil {
		b := d.Approved.plain()
		d.Approved = &b
	}
	d.From, d.To = slices.Clone(d.From), slices.Clone(d.To)
	return d
}

// record appends a decision to the log.
func (c *Calendar) record(d Decision) {
	d.Seq = len(c.log) + 1
	c.log = append(c.log, d)
	if d.At.After(c.now) {
		c.now = d.At
	}
}

// Replay builds a Calendar from cfg at now (as New does) and applies the
// decisions of log in order, each checked as when it was made (at its At): an approval that
// would now conflict or over-commit, a cancel of an unknown booking, a
// sequence out of order are refused with an *Error wrapping ErrInvalidLog
// and the rule broken. The result has the same bookings and log as the
// Calendar that wrote log (proposals are not decisions and are not
// rebuilt).
func Replay(now time.Time, cfg Config, log []Decision) (*Calendar, error) {
	c, err := New(now, cfg)
	if err != nil {
		return nil, err
	}
	for i, d := range log {
		if d.Seq != i+1 {
			return nil, refuse("replay", d.Booking, ErrInvalidLog, "decision %d has seq %d", i+1, d.Seq)
		}
		if err := c.apply(d); err != nil {
			return nil, &Error{Op: "replay", Booking: d.Booking, Detail: fmt.Sprintf("decision %d", d.Seq), Err: fmt.Errorf("%w: %w", ErrInvalidLog, err)}
		}
	}
	return c, nil
}

// apply replays one decision through the same checks as the live calls.
func (c *Calendar) apply(d Decision) error {
	switch d.Kind {
	case Approve:
		if d.Approved == nil {
			return refuse("approve", d.Booking, ErrInvalidLog, "no booking recorded")
		}
		b, err := c.rebuild("approve", *d.Approved)
		if err != nil {
			return err
		}
		if err := c.admit("approve", d.At, b); err != nil {
			return err
		}
		c.insert(b)
		c.record(d.clone())
		return nil
	case Reject:
		if d.Who == "" {
			return refuse("reject", d.Booking, ErrNoDecider, "")
		}
		delete(c.proposals, d.Booking)
		c.record(d)
		return nil
	case Cancel:
		return c.Cancel(d.At, d.Booking, d.Who, d.Reason)
	case Shorten:
		return c.Shorten(d.At, d.Booking, d.End, d.Who, d.Reason)
	case Relocate:
		if d.Who == "" {
			return refuse("relocate", d.Booking, ErrNoDecider, "")
		}
		return c.relocate(d.clone())
	}
	return refuse("replay", d.Booking, ErrInvalidLog, "kind %v", d.Kind)
}
