package calendar

import (
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/topology"
)

// The interval indexes. Two bookings conflict when their windows overlap
// and one's domain is the other's, or above or below it. A query for
// domain d over [s, e) reads:
//
//   - own[d] and own[a] for each ancestor a of d: bookings of one domain
//     never overlap each other, so the one starting last before s and those
//     starting in [s, e) are all that can overlap: O(log n + k);
//   - under[d], the bookings of domains below d, which may overlap each
//     other: those starting in [s - longest, e), where longest is the
//     longest booking under[d] ever held, filtered by their end:
//     O(log n + k'), k' counting the bookings under d that start within
//     one longest booking before the window.

// insert adds b to every index. It assumes b conflicts with nothing.
func (c *Calendar) insert(b *Booking) {
	s := slot{start: b.Start, id: b.ID, b: b}
	for _, d := range b.domains {
		tree(&c.own[d]).ReplaceOrInsert(s)
		for a, ok := c.fleet.Parent(d); ok && a != topology.Root; a, ok = c.fleet.Parent(a) {
			tree(&c.under[a]).ReplaceOrInsert(s)
			c.underMax[a] = max(c.underMax[a], b.End.Sub(b.Start))
		}
	}
	tree(&c.byFlavor[b.flavor]).ReplaceOrInsert(s)
	c.flavMax[b.flavor] = max(c.flavMax[b.flavor], b.End.Sub(b.Start))
	c.all.ReplaceOrInsert(s)
	c.bookings[b.ID] = b
	c.gen++
}

// remove takes b out of every index.
func (c *Calendar) remove(b *Booking) {
	s := slot{start: b.Start, id: b.ID}
	for _, d := range b.domains {
		c.own[d].Delete(s)
		for a, ok := c.fleet.Parent(d); ok && a != topology.Root; a, ok = c.fleet.Parent(a) {
			c.under[a].Delete(s)
		}
	}
	c.byFlavor[b.flavor].Delete(s)
	c.all.Delete(s)
	delete(c.bookings, b.ID)
	c.gen++
}

func tree(t **btree.BTreeG[slot]) *btree.BTreeG[slot] {
	if *t == nil {
		*t = newIndex()
	}
	return *t
}

// overlapsDisjoint calls fn for each booking of a disjoint index that
// overlaps [s, e).
func overlapsDisjoint(t *btree.BTreeG[slot], s, e time.Time, fn func(*Booking)) {
	if t == nil {
		return
	}
	// IDs are never empty, so the pivot sorts before every booking
	// starting at s: the first one visited starts before s.
	t.DescendLessOrEqual(slot{start: s}, func(x slot) bool {
		if x.start.Before(s) && x.b.End.After(s) {
			fn(x.b)
		}
		return false // only the last one starting before s can reach s
	})
	t.AscendRange(slot{start: s}, slot{start: e}, func(x slot) bool {
		fn(x.b)
		return true
	})
}

// overlapsSpan calls fn for each booking of an index whose bookings may
// overlap, all no longer than longest, that overlaps [s, e).
func overlapsSpan(t *btree.BTreeG[slot], longest time.Duration, s, e time.Time, fn func(*Booking)) {
	if t == nil {
		return
	}
	t.AscendRange(slot{start: s.Add(-longest)}, slot{start: e}, func(x slot) bool {
		if x.b.End.After(s) {
			fn(x.b)
		}
		return true
	})
}

// conflicts lists the approved bookings (other than except) overlapping
// [s, e) on any of domains, by start then booking ID then domain.
func (c *Calendar) conflicts(domains []topology.DomainID, s, e time.Time, except string) []Conflict {
	var out []Conflict
	add := func(b *Booking) {
		if b.ID == except {
			return
		}
		for i, d := range b.domains {
			// Report the booking's domains that touch the query's.
			for _, q := range domains {
				if c.related(d, q) && !slices.ContainsFunc(out, func(x Conflict) bool { return x.Booking == b.ID && x.Domain == b.Domains[i] }) {
					out = append(out, Conflict{Booking: b.ID, Queue: b.Queue, Domain: b.Domains[i], Start: b.Start, End: b.End})
				}
			}
		}
	}
	for _, d := range domains {
		c.conflictsOf(d, s, e, add)
	}
	slices.SortFunc(out, func(a, b Conflict) int {
		if x := a.Start.Compare(b.Start); x != 0 {
			return x
		}
		if a.Booking != b.Booking {
			if a.Booking < b.Booking {
				return -1
			}
			return 1
		}
		if a.Domain < b.Domain {
			return -1
		}
		if a.Domain > b.Domain {
			return 1
		}
		return 0
	})
	return out
}

// conflictsOf calls fn for every booking overlapping [s, e) on d, above it
// or below it (a booking may be reported more than once).
func (c *Calendar) conflictsOf(d topology.DomainID, s, e time.Time, fn func(*Booking)) {
	overlapsDisjoint(c.own[d], s, e, fn)
	overlapsSpan(c.under[d], c.underMax[d], s, e, fn)
	for a, ok := c.fleet.Parent(d); ok && a != topology.Root; a, ok = c.fleet.Parent(a) {
		overlapsDisjoint(c.own[a], s, e, fn)
	}
}

// hasConflict reports whether anything overlaps [s, e) on d, above or below.
func (c *Calendar) hasConflict(d topology.DomainID, s, e time.Time) bool {
	found := false
	c.conflictsOf(d, s, e, func(*Booking) { found = true })
	return found
}

// related reports whether domains a and b are the same or one is below
// the other: their node ranges nest.
func (c *Calendar) related(a, b topology.DomainID) bool {
	alo, ahi := c.fleet.Nodes(a)
	blo, bhi := c.fleet.Nodes(b)
	return alo <= blo && bhi <= ahi || blo <= alo && ahi <= bhi
}
