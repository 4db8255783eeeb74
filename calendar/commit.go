package calendar

import (
	"slices"
	"time"

	"github.com/fleetsched/fleet/quota"
)

// The promise, in arithmetic. At every instant t and for every flavor f:
//
//	committed(f, t) = sum over nodes n of nominal(n, f, t)
//	                + sum over queues q of max(0, booked(q, f, t) - nominal(q, f, t))
//	committed(f, t) <= capacity(f)
//
// where booked(q, f, t) is the GPUs held by q's approved bookings in force
// at t (whole blocks, stranded GPUs included), nominal comes from the
// Schedule (or the tree) and capacity is the fleet's GPUs of f. A booking
// within its queue's own guarantee promises nothing new: the queue could
// reclaim that much anyway; only its excess is added. So every queue can
// still get back to its guarantee while every booking is whole.
//
// Both terms change only at a schedule boundary or a booking's start or
// end, so checking at the window's start and at each of those inside it
// checks every instant.

// nominalAt is node n's nominal quota of flavor f at t.
func (c *Calendar) nominalAt(n quota.NodeID, f quota.FlavorID, t time.Time) int64 {
	if s := c.cfg.Schedule; s != nil {
		if v, ok := s.Nominal(c.tree.Name(n), c.tree.FlavorName(f), t); ok {
			return v
		}
		return 0
	}
	return c.tree.Nominal(n, f)
}

// guaranteedAt is the sum of every node's nominal quota of f at t.
func (c *Calendar) guaranteedAt(f quota.FlavorID, t time.Time) int64 {
	if s := c.cfg.Schedule; s != nil {
		return s.Guaranteed(c.tree.FlavorName(f), t)
	}
	var sum int64
	for n := range quota.NodeID(c.tree.NumNodes()) {
		sum += c.tree.Nominal(n, f)
	}
	return sum
}

// overCommit checks flavor f over [from, to) with the approved bookings
// plus extra (nil for none), skipping the booking called skip (a booking
// being shortened checks its new self as extra). It returns the first
// instant where the promise breaks, or nil.
func (c *Calendar) overCommit(f quota.FlavorID, from, to time.Time, extra *Booking, skip string) *OverCommitError {
	var in []*Booking
	overlapsSpan(c.byFlavor[f], c.flavMax[f], from, to, func(b *Booking) {
		if b.ID != skip {
			in = append(in, b)
		}
	})
	if extra != nil {
		in = append(in, extra)
	}
	edges := []time.Time{from}
	for _, b := range in {
		for _, t := range [2]time.Time{b.Start, b.End} {
			if t.After(from) && t.Before(to) {
				edges = append(edges, t)
			}
		}
	}
	if s := c.cfg.Schedule; s != nil {
		for t, ok := s.NextChange(from); ok && t.Before(to); t, ok = s.NextChange(t) {
			edges = append(edges, t)
		}
	}
	slices.SortFunc(edges, time.Time.Compare)
	edges = slices.CompactFunc(edges, time.Time.Equal)

	capacity := c.capacity[f]
	type queueSum struct {
		q      quota.NodeID
		booked int64
	}
	var sums []queueSum // few queues book at once: a slice beats a map
	for _, t := range edges {
		sums = sums[:0]
		for _, b := range in {
			if t.Before(b.Start) || !t.Before(b.End) {
				continue
			}
			i := slices.IndexFunc(sums, func(s queueSum) bool { return s.q == b.queue })
			if i < 0 {
				sums = append(sums, queueSum{q: b.queue})
				i = len(sums) - 1
			}
			sums[i].booked += int64(b.Held)
		}
		committed := c.guaranteedAt(f, t)
		tip := ""
		for _, s := range sums {
			if x := s.booked - c.nominalAt(s.q, f, t); x > 0 {
				committed += x
				tip = c.tree.Name(s.q)
			}
		}
		if committed > capacity {
			if extra != nil && extra.Start.Compare(t) <= 0 && t.Before(extra.End) {
				tip = extra.Queue
			}
			return &OverCommitError{Queue: tip, Flavor: c.tree.FlavorName(f), At: t, Committed: committed, Capacity: capacity}
		}
	}
	return nil
}

// horizon is an instant after which nothing the calendar knows changes
// any more (or repeats weekly): the latest booking end and the schedule's
// horizon.
func (c *Calendar) horizon(from time.Time) time.Time {
	h := from.Add(time.Nanosecond)
	if s := c.cfg.Schedule; s != nil {
		h = s.Horizon(from)
	}
	c.all.Ascend(func(x slot) bool {
		if x.b.End.After(h) {
			h = x.b.End
		}
		return true
	})
	return h
}

// Validate checks the promise over every future instant from now: for
// every flavor, guarantees plus approved bookings never exceed the fleet's
// capacity. It returns the first breach as an *OverCommitError.
func (c *Calendar) Validate(now time.Time) error {
	to := c.horizon(now)
	for f := range quota.FlavorID(c.tree.NumFlavors()) {
		if e := c.overCommit(f, now, to, nil, ""); e != nil {
			return e
		}
	}
	return nil
}
