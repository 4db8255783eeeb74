package calendar

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/topology"
)

// A node that goes down inside an approved booking's block breaks the
// promise that the block is whole at its start (or, inside the window,
// that the booking's work has all of it). The calendar answers each such
// failure with an Offer: what it can do for the booking, for the host to
// show and to accept (Relocate) or leave.
//
// What it offers, and why. A booking names a level so that its work stays
// under one domain of it (NVLink, leaf or spine locality); a single node
// borrowed from another domain would break exactly that request, so the
// calendar never patches a block with a stray node. It offers, in order:
//
//  1. Keep: the blocks' nodes that are not down still hold the booking's
//     GPUs and pods (the block was larger than the request: its stranded
//     GPUs absorb the loss). Nothing moves.
//  2. Move: each broken block is replaced by a whole healthy domain of the
//     same level, free of other approved bookings for the rest of the
//     window, ranked as Propose ranks blocks (least work displaced, fewest
//     GPUs stranded), such that the booking's GPUs and pods fit the new
//     set and the guarantees plus bookings still fit the capacity at every
//     instant. Moving is a journaled decision (Relocate); until then the
//     booking holds its broken block.
//  3. None: no such domain. The booking keeps what is left; Short says how
//     many GPUs it lacks.
//
// An offer is a function of the bookings, the fleet's health and the
// running work when the failure (or repair) was reported; a repair that
// makes every block whole again withdraws it.

// Remedy is what an Offer proposes.
type Remedy uint8

const (
	// Keep: the broken blocks still hold the booking without the down
	// nodes; nothing moves.
	Keep Remedy = iota + 1
	// Move: the broken blocks are replaced by the Replacements.
	Move
	// None: no replacement exists; the booking is short.
	None
)

func remedyNames() []string { return []string{"", "keep", "move", "none"} }

// Valid reports whether r is one of the remedies.
func (r Remedy) Valid() bool { return r >= Keep && r <= None }

// String returns the remedy's name, as specs and messages spell it.
func (r Remedy) String() string {
	if r.Valid() {
		return remedyNames()[r]
	}
	return fmt.Sprintf("Remedy(%d)", uint8(r))
}

// MarshalText writes the remedy's name.
func (r Remedy) MarshalText() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("calendar: remedy %d", uint8(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a remedy's name.
func (r *Remedy) UnmarshalText(b []byte) error {
	for i, n := range remedyNames() {
		if n != "" && n == string(b) {
			*r = Remedy(i)
			return nil
		}
	}
	return fmt.Errorf("%w: remedy %q", ErrInvalidLog, b)
}

// Offer is the calendar's answer to nodes down inside an approved
// booking's blocks.
type Offer struct {
	Booking string `json:"booking"` // the booking whose blocks lost nodes
	Queue   string `json:"queue"`   // its queue
	// Since is when the first of the down nodes was reported; Down names
	// every node of the blocks down now, Broken the blocks they are in
	// (in ID order).
	Since  time.Time `json:"since"`
	Down   []string  `json:"down"`
	Broken []string  `json:"broken"`
	Remedy Remedy    `json:"remedy"`
	// Replacements are the blocks offered in place of Broken, one for
	// one (Move only); Displaced the running work they would push out.
	Replacements []string  `json:"replacements,omitempty"`
	Displaced    Displaced `json:"displaced"`
	// Healthy is the booking's GPUs on nodes not down now; Short how many
	// of the GPUs it needs that is (0 for Keep).
	Healthy int `json:"healthy"`
	Short   int `json:"short,omitempty"`
}

func (o Offer) clone() Offer {
	o.Down = slices.Clone(o.Down)
	o.Broken = slices.Clone(o.Broken)
	o.Replacements = slices.Clone(o.Replacements)
	o.Displaced.Workloads = slices.Clone(o.Displaced.Workloads)
	return o
}

// String renders the offer as one sentence.
func (o Offer) String() string {
	head := fmt.Sprintf("booking %s lost node %v of %v at %s", o.Booking, o.Down, o.Broken, o.Since.Format(time.DateTime))
	switch o.Remedy {
	case Keep:
		return head + fmt.Sprintf("; its other nodes still hold it (%d GPUs healthy): kept", o.Healthy)
	case Move:
		return head + fmt.Sprintf("; the calendar offers %v in its place", o.Replacements)
	}
	return head + fmt.Sprintf("; no whole block is free for the rest of the window: short by %d GPUs", o.Short)
}

// NodeDown re-examines, after node n went down, every approved booking
// not yet ended whose blocks hold n, and returns their offers (by booking
// ID); the offers are kept until a repair withdraws them, the host
// relocates the booking, or the booking ends. running is the work holding
// GPUs now, as for Propose, to rank replacements by what they displace.
// The fleet must already report n as down.
func (c *Calendar) NodeDown(now time.Time, n topology.NodeID, running []Running) []Offer {
	var out []Offer
	for _, b := range c.holding(now, n) {
		o := c.offer(now, b, running)
		if o.Booking == "" {
			continue
		}
		if old, ok := c.offers[b.ID]; ok {
			o.Since = old.Since
		}
		c.offers[b.ID] = o
		out = append(out, o.clone())
	}
	return out
}

// NodeUp re-examines, after node n came back, the bookings whose blocks
// hold it: an offer is withdrawn when no node of the booking's blocks is
// down any more, and is recomputed otherwise. It returns the IDs of the
// bookings whose offers were withdrawn.
func (c *Calendar) NodeUp(now time.Time, n topology.NodeID, running []Running) []string {
	var gone []string
	for _, b := range c.holding(now, n) {
		old, ok := c.offers[b.ID]
		if !ok {
			continue
		}
		o := c.offer(now, b, running)
		if o.Booking == "" {
			delete(c.offers, b.ID)
			gone = append(gone, b.ID)
			continue
		}
		o.Since = old.Since
		c.offers[b.ID] = o
	}
	return gone
}

// Offers returns the offers awaiting the host, by booking ID, leaving out
// those of bookings that ended by now. The caller owns the slice.
func (c *Calendar) Offers(now time.Time) []Offer {
	if len(c.offers) == 0 {
		return nil // asked every cycle, and there are seldom any
	}
	var out []Offer
	for _, id := range sortedKeys(c.offers) {
		if b := c.bookings[id]; b != nil && b.End.After(now) {
			out = append(out, c.offers[id].clone())
		}
	}
	return out
}

// OfferFor returns the offer awaiting the host for booking id.
func (c *Calendar) OfferFor(id string) (Offer, bool) {
	o, ok := c.offers[id]
	if !ok || c.bookings[id] == nil {
		return Offer{}, false
	}
	return o.clone(), true
}

// holding lists the approved bookings not ended at now with a block that
// holds node n, by booking ID.
func (c *Calendar) holding(now time.Time, n topology.NodeID) []*Booking {
	var out []*Booking
	for _, id := range sortedKeys(c.bookings) {
		b := c.bookings[id]
		if !b.End.After(now) {
			continue
		}
		if slices.ContainsFunc(b.domains, func(d topology.DomainID) bool {
			lo, hi := c.fleet.Nodes(d)
			return n >= lo && n < hi
		}) {
			out = append(out, b)
		}
	}
	return out
}

// offer computes booking b's offer from the fleet's health now, or the
// zero Offer when no node of its blocks is down.
func (c *Calendar) offer(now time.Time, b *Booking, running []Running) Offer {
	groups := c.groupsOf(b.Flavor, b.Pool)
	var o Offer
	var broken []topology.DomainID
	healthy := 0
	var free []int
	for i, d := range b.domains {
		lo, hi := c.fleet.Nodes(d)
		down := false
		for n := lo; n < hi; n++ {
			if !slices.Contains(groups, c.fleet.NodeGroup(n)) {
				continue
			}
			if c.fleet.Health(n) == topology.Down {
				o.Down = append(o.Down, c.fleet.NodeName(n))
				down = true
				continue
			}
			healthy += c.fleet.Capacity(n)
		}
		free = c.nodeGPUs(free, d, groups, true)
		if down {
			broken = append(broken, d)
			o.Broken = append(o.Broken, b.Domains[i])
		}
	}
	if len(broken) == 0 {
		return Offer{}
	}
	o.Booking, o.Queue, o.Since, o.Healthy = b.ID, b.Queue, now, healthy
	if healthy >= b.GPUs && (len(b.PodSets) == 0 || fitPods(free, b.PodSets)) {
		o.Remedy = Keep
		return o
	}
	if to, displaced, ok := c.replacements(now, b, broken, groups, running); ok {
		o.Remedy, o.Displaced = Move, displaced
		for _, d := range to {
			o.Replacements = append(o.Replacements, c.fleet.DomainName(d))
		}
		return o
	}
	o.Remedy, o.Short = None, max(0, b.GPUs-healthy)
	return o
}
