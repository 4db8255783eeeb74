package calendar

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Request asks for whole blocks of the fleet for a window of time: every
// node of one or more domains of Level, for a queue, from Start for
// Duration. "1,024 GPUs as two whole spines" is GPUs 1024, Level "spine",
// Blocks 2; "one 512-GPU spine" is GPUs 512, Level "spine".
type Request struct {
	// ID names the booking the request becomes once approved; unique
	// among approved bookings. Proposing again under the same ID replaces
	// the pending proposal.
	ID    string `json:"id"`
	Queue string `json:"queue"`
	// Flavor is the GPU model; Pool, when set, restricts the blocks'
	// GPUs to one pool.
	Flavor string `json:"flavor"`
	Pool   string `json:"pool,omitempty"`
	// GPUs is the GPUs the booking's work needs. With PodSets it may be 0
	// (then it is their GPUs); the pods must fit the blocks' nodes, each
	// pod on one node. Pods take whole GPUs.
	GPUs    int           `json:"gpus,omitempty"`
	PodSets []gang.PodSet `json:"podSets,omitempty"`
	// Level names the level of the blocks ("spine", "leaf"); Blocks is how
	// many domains, 0 meaning as few as hold the GPUs.
	Level  string `json:"level"`
	Blocks int    `json:"blocks,omitempty"`
	// Start and Duration are the window [Start, Start+Duration).
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	// Grace overrides Config.Grace for this booking; 0 keeps it.
	Grace time.Duration `json:"grace,omitempty"`
}

// End is the end of the requested window.
func (r Request) End() time.Time { return r.Start.Add(r.Duration) }

// gpus is what the request needs: GPUs, or its pods' GPUs.
func (r Request) gpus() int {
	if r.GPUs > 0 {
		return r.GPUs
	}
	n := 0
	for _, p := range r.PodSets {
		n += p.GPUs()
	}
	return n
}

func (r Request) clone() Request {
	r.PodSets = slices.Clone(r.PodSets)
	for i := range r.PodSets {
		r.PodSets[i].Resources = slices.Clone(r.PodSets[i].Resources)
	}
	return r
}

// Running is one workload holding GPUs now, as Propose reads it: where it
// runs and when it is expected to end. The root builds these from its
// ledger; Nodes is the same shape as the ledger's.
type Running struct {
	ID       string // the workload
	Queue    string // its queue
	Priority int32  // its priority
	// Preemptible work may be drained under its contract; Borrowing work
	// runs above its queue's guarantee (reclaimable).
	Preemptible bool
	Borrowing   bool
	Nodes       []placement.NodeGPUs
	// End is the expected end (start + ExpectedRuntime); zero means
	// open-ended.
	End time.Time
}

// Option is one way to satisfy a request: which blocks, what they cost,
// what stands in the way.
type Option struct {
	// Index is the option's place in its proposal, as Approve names it.
	Index int `json:"index"`
	// Domains are the blocks, by ID and name, in ID order.
	Domains     []topology.DomainID `json:"-"`
	DomainNames []string            `json:"domains"`
	// GPUs is the blocks' GPUs of the flavor: what the booking holds.
	// Stranded is what of it the request does not need.
	GPUs     int `json:"gpus"`
	Stranded int `json:"stranded"`
	// Displaced is the work in the blocks expected to still run at the
	// start minus the grace: it must leave for the promise to be kept.
	Displaced Displaced `json:"displaced"`
	// FreeBy is the latest expected end of the work in the blocks that
	// ends in time (zero when there is none).
	FreeBy time.Time `json:"freeBy,omitzero"`
	// Unhealthy is the blocks' GPUs on nodes not healthy now.
	Unhealthy int `json:"unhealthy,omitempty"`
	// Conflicts are the approved bookings the blocks overlap; Quota is set
	// when guarantees plus bookings would exceed capacity at some instant
	// of the window. Either makes the option unapprovable.
	Conflicts []Conflict       `json:"conflicts,omitempty"`
	Quota     *OverCommitError `json:"quota,omitempty"`
}

// Displaced sums up the work an option would push out of its blocks, in
// GPUs: Blocking work cannot be drained (not preemptible); Guaranteed work
// is preemptible but within its queue's guarantee; Borrowed work is
// preemptible and borrowing, drained under the contract as usual.
type Displaced struct {
	Blocking   int      `json:"blocking,omitempty"`   // GPUs of work that cannot be drained
	Guaranteed int      `json:"guaranteed,omitempty"` // GPUs of preemptible work within its guarantee
	Borrowed   int      `json:"borrowed,omitempty"`   // GPUs of preemptible, borrowing work
	Workloads  []string `json:"workloads,omitempty"`  // the workloads displaced, by ID
}

// Feasible reports whether the option can be approved as proposed: no
// conflict and no over-commitment. (Displaced work does not make it
// infeasible: the host drains it, and Blocking work is a cost to weigh.)
func (o Option) Feasible() bool { return len(o.Conflicts) == 0 && o.Quota == nil }

func (o Option) clone() Option {
	o.Domains = slices.Clone(o.Domains)
	o.DomainNames = slices.Clone(o.DomainNames)
	o.Displaced.Workloads = slices.Clone(o.Displaced.Workloads)
	o.Conflicts = slices.Clone(o.Conflicts)
	if o.Quota != nil {
		q := *o.Quota
		o.Quota = &q
	}
	return o
}

// Proposal is a request and its options, awaiting approval or rejection.
type Proposal struct {
	Request  Request   `json:"request"`  // what was asked
	Proposed time.Time `json:"proposed"` // when Propose answered it
	Options  []Option  `json:"options"`  // the options, best first
}

func (p Proposal) clone() Proposal {
	p.Request = p.Request.clone()
	p.Options = slices.Clone(p.Options)
	for i := range p.Options {
		p.Options[i] = p.Options[i].clone()
	}
	return p
}

// Booking is an approved promise: the blocks are the queue's from Start to
// End, drained of other work from DrainAt (Start minus its grace).
type Booking struct {
	ID      string        `json:"id"`                // the request's ID
	Queue   string        `json:"queue"`             // the queue it books for
	Flavor  string        `json:"flavor"`            // the GPU model
	Pool    string        `json:"pool,omitempty"`    // the pool its GPUs come from, "" for any
	GPUs    int           `json:"gpus"`              // what the work needs
	PodSets []gang.PodSet `json:"podSets,omitempty"` // the pods its work runs, when the request named them
	Level   string        `json:"level"`             // the level of its blocks, e.g. "spine"
	Domains []string      `json:"domains"`           // block names at Level, in ID order
	Held    int           `json:"held"`              // the blocks' GPUs of the flavor
	Start   time.Time     `json:"start"`             // when the window opens
	End     time.Time     `json:"end"`               // when it closes
	Grace   time.Duration `json:"grace"`             // the drain deadline before Start
	// ApprovedBy and ApprovedAt say who bound it, and when; Option which
	// option of the proposal it was.
	ApprovedBy string    `json:"approvedBy"`
	ApprovedAt time.Time `json:"approvedAt"`
	Option     int       `json:"option"`

	domains []topology.DomainID
	flavor  quota.FlavorID
	queue   quota.NodeID
}

// String sums the booking up on one line: "booking "pretrain": research,
// 512 H100 GPUs on spine-2 (512 held), 2025-02-15 00:00 to 2025-03-08
// 00:00 UTC, approved by gpu-council".
func (b Booking) String() string {
	const day = "2006-01-02 15:04"
	pool := ""
	if b.Pool != "" {
		pool = " of pool " + b.Pool
	}
	return fmt.Sprintf("booking %q: %s, %d %s GPUs%s on %s (%d held), %s to %s UTC, approved by %s",
		b.ID, b.Queue, b.GPUs, b.Flavor, pool, strings.Join(b.Domains, ", "), b.Held,
		b.Start.UTC().Format(day), b.End.UTC().Format(day), b.ApprovedBy)
}

// DrainAt is when the host must start draining the blocks' other work.
func (b *Booking) DrainAt() time.Time { return b.Start.Add(-b.Grace) }

// DomainIDs returns the blocks' domain IDs, in ID order.
func (b *Booking) DomainIDs() []topology.DomainID { return slices.Clone(b.domains) }

func (b *Booking) clone() Booking {
	c := *b
	c.PodSets = slices.Clone(b.PodSets)
	c.Domains = slices.Clone(b.Domains)
	c.domains = slices.Clone(b.domains)
	return c
}

// plain is a copy without the resolved IDs, as the log and snapshots
// keep it: names only, so it reads the same after a JSON round trip.
func (b *Booking) plain() Booking {
	c := b.clone()
	c.domains, c.flavor, c.queue = nil, 0, 0
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.SortedFunc(maps.Keys(m), cmp.Compare[string])
}
