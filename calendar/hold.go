package calendar

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet/topology"
)

// Phase is where a booking stands at an instant.
type Phase uint8

const (
	// Booked: approved, before its drain. The host keeps new open-ended
	// work out of the blocks; work expected to end before the drain, and
	// preemptible work, may still enter.
	Booked Phase = iota + 1
	// Draining: from the start minus the grace to the start. The host
	// drains the blocks' other work so that they are empty at the start.
	Draining
	// Active: from the start to the end. The blocks belong to the
	// booking's work; idle GPUs may be lent to preemptible work under the
	// drain contract.
	Active
)

func phaseNames() []string { return []string{"", "booked", "draining", "active"} }

// Valid reports whether p is one of the phases.
func (p Phase) Valid() bool { return p >= Booked && p <= Active }

// String returns the phase's name, as specs and messages spell it.
func (p Phase) String() string {
	if p.Valid() {
		return phaseNames()[p]
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// MarshalText writes the phase's name.
func (p Phase) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("calendar: phase %d", uint8(p))
	}
	return []byte(p.String()), nil
}

// Hold is one block held for a booking at an instant: the host's to-do
// for that domain.
type Hold struct {
	Booking string            // the booking holding it
	Queue   string            // the booking's queue
	Flavor  string            // the GPU model held
	Domain  topology.DomainID // the domain held
	Name    string            // the domain's name
	Phase   Phase             // booked, draining or active
	// DrainAt, Start and End are the booking's drain, start and end.
	DrainAt, Start, End time.Time
}

func (c *Calendar) holdsOf(b *Booking, now time.Time, out []Hold) []Hold {
	p := Booked
	switch {
	case !now.Before(b.Start):
		p = Active
	case !now.Before(b.DrainAt()):
		p = Draining
	}
	for i, d := range b.domains {
		out = append(out, Hold{Booking: b.ID, Queue: b.Queue, Flavor: b.Flavor, Domain: d, Name: b.Domains[i],
			Phase: p, DrainAt: b.DrainAt(), Start: b.Start, End: b.End})
	}
	return out
}

// Held returns every block held at now, one Hold per domain of every
// approved booking that has not ended, by start, then booking ID, then
// domain ID. The caller owns the slice.
func (c *Calendar) Held(now time.Time) []Hold { return c.AppendHeld(nil, now) }

// AppendHeld appends Held(now) to dst and returns it: a scheduler that
// asks every cycle reuses one buffer instead of allocating a list. The
// list is kept from one call to the next while no booking changes and no
// drain, start or end falls between their nows.
func (c *Calendar) AppendHeld(dst []Hold, now time.Time) []Hold {
	h := &c.held
	if !h.valid || h.gen != c.gen || now.Before(h.from) || !h.until.IsZero() && !now.Before(h.until) {
		h.valid, h.gen, h.from, h.until, h.list = true, c.gen, now, time.Time{}, h.list[:0]
		c.all.Ascend(func(x slot) bool {
			b := x.b
			if b.End.After(now) {
				h.list = c.holdsOf(b, now, h.list)
			}
			for _, t := range [3]time.Time{b.DrainAt(), b.Start, b.End} {
				if t.After(now) && (h.until.IsZero() || t.Before(h.until)) {
					h.until = t
				}
			}
			return true
		})
	}
	return append(dst, h.list...)
}

// heldCache is the list of holds AppendHeld keeps: valid for the
// bookings as of gen, at every instant of [from, until) (until zero: from
// on, nothing changes any more).
type heldCache struct {
	valid       bool
	gen         uint64
	from, until time.Time
	list        []Hold
}

// Due returns the holds whose drain has come and whose end has not
// (phases Draining and Active), in Held's order: the blocks the host must
// be emptying of other work, or giving to the booking's work. It is a
// function of now, not an edge: it keeps returning a booking until its
// end, so a restarted host loses nothing.
func (c *Calendar) Due(now time.Time) []Hold {
	var out []Hold
	c.all.Ascend(func(x slot) bool {
		if x.b.End.After(now) && !now.Before(x.b.DrainAt()) {
			out = c.holdsOf(x.b, now, out)
		}
		return true
	})
	return out
}

// NextEvent returns the first instant after after where a booking's phase
// changes (its drain, start or end) or the quota schedule changes, and
// false when none is known: the host can wake then.
func (c *Calendar) NextEvent(after time.Time) (time.Time, bool) {
	var best time.Time
	consider := func(t time.Time) {
		if t.After(after) && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	c.all.Ascend(func(x slot) bool {
		consider(x.b.DrainAt())
		consider(x.b.Start)
		consider(x.b.End)
		return true
	})
	if s := c.cfg.Schedule; s != nil {
		if t, ok := s.NextChange(after); ok {
			consider(t)
		}
	}
	return best, !best.IsZero()
}

// Prune forgets the bookings that ended at or before now and returns how
// many. They stay in the decision log; nothing they promised remains.
func (c *Calendar) Prune(now time.Time) int {
	var gone []*Booking
	c.all.Ascend(func(x slot) bool {
		if !x.b.End.After(now) {
			gone = append(gone, x.b)
		}
		return x.start.Before(now)
	})
	for _, b := range gone {
		c.remove(b)
		delete(c.offers, b.ID)
	}
	return len(gone)
}
