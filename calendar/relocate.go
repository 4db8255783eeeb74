package calendar

import (
	"slices"
	"time"

	"github.com/fleetsched/fleet/topology"
)

// groupsOf lists the fleet groups of a flavor, restricted to a pool when
// one is named.
func (c *Calendar) groupsOf(flavor, pool string) []topology.GroupID {
	var out []topology.GroupID
	for g := range topology.GroupID(c.fleet.NumGroups()) {
		if c.fleet.GroupFlavor(g) == flavor && (pool == "" || c.fleet.GroupPool(g) == pool) {
			out = append(out, g)
		}
	}
	return out
}

// rest is the part of booking b's window still to come at now.
func rest(b *Booking, now time.Time) time.Time {
	if now.After(b.Start) {
		return now
	}
	return b.Start
}

// replacements picks, for each broken block of b, a whole healthy domain
// of the same level, best first as Propose ranks them, not one of b's,
// free of other approved bookings for the rest of the window, such that
// the new set holds b's GPUs and pods and keeps the promise. It returns
// the chosen domains (one per broken block, in order) and the work they
// displace.
func (c *Calendar) replacements(now time.Time, b *Booking, broken []topology.DomainID, groups []topology.GroupID, running []Running) ([]topology.DomainID, Displaced, bool) {
	l := c.fleet.DomainLevel(b.domains[0])
	from := rest(b, now)
	drainAt := b.DrainAt()
	if drainAt.Before(now) {
		drainAt = now
	}
	ranked, err := c.rank(l, groups, drainAt, from, b.End, running, b.ID)
	if err != nil {
		return nil, Displaced{}, false
	}
	var to []topology.DomainID
	var displaced Displaced
	for _, cd := range ranked {
		if len(to) == len(broken) {
			break
		}
		if cd.conflict || cd.unhealthy > 0 || slices.Contains(b.domains, cd.d) {
			continue
		}
		to = append(to, cd.d)
		displaced.Blocking += cd.displaced.Blocking
		displaced.Guaranteed += cd.displaced.Guaranteed
		displaced.Borrowed += cd.displaced.Borrowed
		displaced.Workloads = append(displaced.Workloads, cd.displaced.Workloads...)
	}
	if len(to) < len(broken) {
		return nil, Displaced{}, false
	}
	if _, err := c.moved(now, b, broken, to, groups); err != nil {
		return nil, Displaced{}, false
	}
	slices.Sort(displaced.Workloads)
	displaced.Workloads = slices.Compact(displaced.Workloads)
	return to, displaced, true
}

// moved returns b with the blocks from replaced by to (one for one), after
// checking that the new set holds b's GPUs and pods on nodes not down, that
// it overlaps no other approved booking for the rest of the window, and
// that the guarantees plus bookings still fit the capacity. b is not
// changed.
func (c *Calendar) moved(now time.Time, b *Booking, from, to []topology.DomainID, groups []topology.GroupID) (*Booking, error) {
	if len(from) != len(to) || len(from) == 0 {
		return nil, refuse("relocate", b.ID, ErrInvalidRequest, "%d blocks to replace by %d", len(from), len(to))
	}
	nb := b.clone()
	for i, d := range from {
		j := slices.Index(nb.domains, d)
		if j < 0 || slices.Contains(nb.domains, to[i]) || c.fleet.DomainLevel(to[i]) != c.fleet.DomainLevel(d) {
			return nil, refuse("relocate", b.ID, ErrUnknownLevel, "block %s for %s", c.fleet.DomainName(to[i]), c.fleet.DomainName(d))
		}
		nb.domains[j] = to[i]
	}
	slices.Sort(nb.domains)
	nb.Domains = nb.Domains[:0]
	nb.Held = 0
	var free []int
	healthy := 0
	for _, d := range nb.domains {
		nb.Domains = append(nb.Domains, c.fleet.DomainName(d))
		nb.Held += c.gpusOf(d, groups)
		n := len(free)
		free = c.nodeGPUs(free, d, groups, true)
		for _, g := range free[n:] {
			healthy += g
		}
	}
	if healthy < nb.GPUs || len(nb.PodSets) > 0 && !fitPods(free, nb.PodSets) {
		return nil, refuse("relocate", b.ID, ErrTooLarge, "blocks %v hold %d healthy GPUs, the booking needs %d", nb.Domains, healthy, nb.GPUs)
	}
	start := rest(b, now)
	if cs := c.conflicts(to, start, nb.End, b.ID); len(cs) > 0 {
		return nil, &ConflictError{Booking: b.ID, Conflicts: cs}
	}
	if e := c.overCommit(nb.flavor, start, nb.End, &nb, b.ID); e != nil {
		return nil, e
	}
	return &nb, nil
}

// Relocate accepts the pending Move offer for booking id, as decided by
// who at now: the broken blocks are replaced by the offered ones from now
// on (the booking's work still running in a broken block keeps running;
// new work of the booking starts in the new set). The move is checked
// again (approvals may have come since the offer) and journaled. It is
// refused, leaving the Calendar unchanged, with an *Error (no decider,
// unknown or ended booking, no Move offer pending), a *ConflictError or
// an *OverCommitError.
func (c *Calendar) Relocate(now time.Time, id, who string) (Booking, error) {
	if who == "" {
		return Booking{}, refuse("relocate", id, ErrNoDecider, "")
	}
	b, ok := c.bookings[id]
	switch {
	case !ok:
		return Booking{}, refuse("relocate", id, ErrUnknownBooking, "")
	case !b.End.After(now):
		return Booking{}, refuse("relocate", id, ErrEnded, "it ended at %s", b.End.Format(time.RFC3339))
	}
	o, ok := c.offers[id]
	if !ok || o.Remedy != Move {
		return Booking{}, refuse("relocate", id, ErrNoOffer, "")
	}
	d := Decision{At: now, Who: who, Kind: Relocate, Booking: id, From: slices.Clone(o.Broken), To: slices.Clone(o.Replacements)}
	if err := c.relocate(d); err != nil {
		return Booking{}, err
	}
	return c.bookings[id].plain(), nil
}

// relocate applies a Relocate decision, checked, and records it.
func (c *Calendar) relocate(d Decision) error {
	b, ok := c.bookings[d.Booking]
	if !ok || !b.End.After(d.At) {
		return refuse("relocate", d.Booking, ErrUnknownBooking, "")
	}
	l := c.fleet.DomainLevel(b.domains[0])
	resolve := func(names []string) ([]topology.DomainID, error) {
		var out []topology.DomainID
		for _, name := range names {
			dom, ok := c.fleet.Domain(l, name)
			if !ok {
				return nil, refuse("relocate", d.Booking, ErrUnknownLevel, "domain %q of level %s", name, b.Level)
			}
			out = append(out, dom)
		}
		return out, nil
	}
	from, err := resolve(d.From)
	if err != nil {
		return err
	}
	to, err := resolve(d.To)
	if err != nil {
		return err
	}
	nb, err := c.moved(d.At, b, from, to, c.groupsOf(b.Flavor, b.Pool))
	if err != nil {
		return err
	}
	c.remove(b)
	c.insert(nb)
	delete(c.offers, d.Booking)
	c.record(d)
	return nil
}
