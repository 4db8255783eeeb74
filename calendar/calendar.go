package calendar

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// DefaultGrace is the drain lead time when Config.Grace is 0: the
// design's drain contract, so borrowers asked to leave at the start minus
// the grace are gone by the start.
const DefaultGrace = 120 * time.Second

// DefaultMaxOptions is how many options Propose offers when
// Config.MaxOptions is 0.
const DefaultMaxOptions = 4

// Config is what a Calendar books against.
type Config struct {
	// Fleet gives the structure: levels, domains, nodes, their GPUs and
	// flavors. The Calendar reads its structure and health (never its
	// allocations, which come in Propose's view of running work) and does
	// not modify it.
	Fleet *topology.Fleet
	// Quota names the queues and flavors and, without a Schedule, gives
	// the nominal quotas (read live: a quota edit takes effect at once).
	Quota *quota.Tree
	// Schedule, when set, gives the nominal quotas at every instant; its
	// base must name the tree's nodes and flavors.
	Schedule *quota.Schedule
	// Grace is the drain lead time before a booking's start; 0 means
	// DefaultGrace. A Request may set its own.
	Grace time.Duration
	// MaxOptions caps the options of one proposal; 0 means DefaultMaxOptions.
	MaxOptions int
}

// Calendar holds approved bookings of topology blocks over time and the
// proposals awaiting a decision. It owns no clock: every call takes the
// host's now. It is not safe for concurrent use.
type Calendar struct {
	cfg      Config
	fleet    *topology.Fleet
	tree     *quota.Tree
	capacity []int64 // GPUs per quota flavor over the whole fleet

	bookings  map[string]*Booking
	proposals map[string]*Proposal
	// offers are the answers to nodes down in approved bookings' blocks
	// (fault.go), by booking ID.
	offers map[string]Offer
	// Interval indexes, keyed by start then ID. own[d] holds the bookings
	// of domain d itself, which never overlap each other; under[d] those
	// of the domains below d; byFlavor[f] every booking of quota flavor f;
	// all every booking. The span maps keep the longest booking each
	// non-disjoint index ever held, which bounds its overlap scans.
	own      []*btree.BTreeG[slot]
	under    []*btree.BTreeG[slot]
	underMax []time.Duration
	byFlavor []*btree.BTreeG[slot]
	flavMax  []time.Duration
	all      *btree.BTreeG[slot]

	log []Decision
	now time.Time // the latest now a decision was made at

	// gen counts changes to the approved bookings; held caches the holds
	// between them (AppendHeld).
	gen  uint64
	held heldCache
}

// slot is one booking in an index.
type slot struct {
	start time.Time
	id    string
	b     *Booking
}

func slotLess(a, b slot) bool {
	if !a.start.Equal(b.start) {
		return a.start.Before(b.start)
	}
	return a.id < b.id
}

func newIndex() *btree.BTreeG[slot] { return btree.NewG(16, slotLess) }

// New checks cfg and returns an empty Calendar. With a Schedule, it
// refuses one whose guarantees exceed the fleet's capacity at any instant
// from now on (a *quota.ScheduleCapacityError).
func New(now time.Time, cfg Config) (*Calendar, error) {
	if cfg.Fleet == nil || cfg.Quota == nil {
		return nil, refuse("new", "", ErrInvalidConfig, "a fleet and a quota tree are required")
	}
	if cfg.Grace < 0 || cfg.MaxOptions < 0 {
		return nil, refuse("new", "", ErrInvalidConfig, "negative grace %s or max options %d", cfg.Grace, cfg.MaxOptions)
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.MaxOptions == 0 {
		cfg.MaxOptions = DefaultMaxOptions
	}
	c := &Calendar{
		cfg:       cfg,
		fleet:     cfg.Fleet,
		tree:      cfg.Quota,
		bookings:  map[string]*Booking{},
		proposals: map[string]*Proposal{},
		offers:    map[string]Offer{},
		own:       make([]*btree.BTreeG[slot], cfg.Fleet.NumDomains()),
		under:     make([]*btree.BTreeG[slot], cfg.Fleet.NumDomains()),
		underMax:  make([]time.Duration, cfg.Fleet.NumDomains()),
		byFlavor:  make([]*btree.BTreeG[slot], cfg.Quota.NumFlavors()),
		flavMax:   make([]time.Duration, cfg.Quota.NumFlavors()),
		all:       newIndex(),
		capacity:  make([]int64, cfg.Quota.NumFlavors()),
		now:       now,
	}
	// The nodes in service: one absent (declared so, or removed before a
	// restore) promises nothing.
	for n := range topology.NodeID(c.fleet.NumNodes()) {
		if c.fleet.Health(n) == topology.Absent {
			continue
		}
		if f, ok := c.tree.Flavor(c.fleet.GroupFlavor(c.fleet.NodeGroup(n))); ok {
			c.capacity[f] += int64(c.fleet.Capacity(n))
		}
	}
	if s := cfg.Schedule; s != nil {
		if err := c.checkSchedule(s); err != nil {
			return nil, err
		}
		if err := s.ValidateCapacity(c.capacityByName(), now); err != nil {
			return nil, &Error{Op: "new", Detail: "schedule", Err: fmt.Errorf("%w: %w", ErrInvalidConfig, err)}
		}
	}
	return c, nil
}

// checkSchedule refuses a schedule whose base does not name exactly the
// tree's nodes and flavors.
func (c *Calendar) checkSchedule(s *quota.Schedule) error {
	if err := s.Validate(); err != nil {
		return &Error{Op: "schedule", Err: fmt.Errorf("%w: %w", ErrInvalidConfig, err)}
	}
	base := s.Base()
	if !slices.Equal(base.Flavors, c.tree.Flavors()) {
		return refuse("schedule", "", ErrInvalidConfig, "the schedule's flavors %v are not the tree's %v", base.Flavors, c.tree.Flavors())
	}
	names := map[string]bool{}
	for _, n := range base.Nodes {
		if _, ok := c.tree.Node(n.Name); !ok {
			return refuse("schedule", "", ErrInvalidConfig, "the schedule's base names node %q, which the tree lacks", n.Name)
		}
		names[n.Name] = true
	}
	for n := range quota.NodeID(c.tree.NumNodes()) {
		if !names[c.tree.Name(n)] {
			return refuse("schedule", "", ErrInvalidConfig, "the schedule's base has no node %q", c.tree.Name(n))
		}
	}
	return nil
}

// capacityByName is the fleet's GPUs per flavor name.
func (c *Calendar) capacityByName() map[string]int64 {
	m := make(map[string]int64, len(c.capacity))
	for f, n := range c.capacity {
		m[c.tree.FlavorName(quota.FlavorID(f))] = n
	}
	return m
}

// Grace is the default drain lead time.
func (c *Calendar) Grace() time.Duration { return c.cfg.Grace }

// Booking returns the approved booking id, and false when there is none.
// The caller owns the copy.
func (c *Calendar) Booking(id string) (Booking, bool) {
	b, ok := c.bookings[id]
	if !ok {
		return Booking{}, false
	}
	return b.plain(), true
}

// Bookings returns every approved booking not yet pruned, by start then
// ID. The caller owns the slice.
func (c *Calendar) Bookings() []Booking {
	out := make([]Booking, 0, len(c.bookings))
	c.all.Ascend(func(s slot) bool {
		out = append(out, s.b.plain())
		return true
	})
	return out
}

// Proposals returns the proposals awaiting a decision, by ID. The caller
// owns the slice.
func (c *Calendar) Proposals() []Proposal {
	out := make([]Proposal, 0, len(c.proposals))
	for _, id := range sortedKeys(c.proposals) {
		out = append(out, c.proposals[id].clone())
	}
	return out
}

// Log returns every decision so far, in order. The caller owns the slice.
func (c *Calendar) Log() []Decision {
	out := make([]Decision, len(c.log))
	for i, d := range c.log {
		out[i] = d.clone()
	}
	return out
}
