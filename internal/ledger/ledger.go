// Package ledger is the one owner of who holds which GPU and which quota
// in a scheduler: the allocation of every running workload, the quota
// usage it is charged, its lifecycle state, the nominations of GPUs for
// beneficiaries of a preemption, and the drains of their victims
// (deadline, reason, every beneficiary, last checkpoint, kill requests).
//
// Every change is a transaction: it is validated whole, then applied to
// the fleet, the quota tree and the books together, so that at every
// moment and on every node
//
//	allocated = GPUs of holders (running and draining) + GPUs reserved for nominations
//
// and, per queue and flavor, quota usage = holders' GPUs + nominations'
// GPUs. CheckInvariants recounts both from the books.
//
// The ledger knows nothing of decisions or events: it returns what
// changed, and the scheduler turns that into decisions for the host. It
// keeps the victim candidates, in ID order, for the preemption search.
// It is not safe for concurrent use.
package ledger

import (
	"container/heap"
	"fmt"
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Ledger holds the books. The zero value is not ready: use New.
type Ledger struct {
	fleet *topology.Fleet
	tree  *quota.Tree
	// scratch mirrors fleet (every write goes to both) for what-if
	// searches, which change it and put it back.
	scratch *topology.Fleet
	// index holds every holder as the victim search reads it, kept up to
	// date on start, stop, drain, checkpoint and lost or replaced pods.
	index *preempt.Index

	recs     map[string]*Record           // every workload known, by ID
	noms     map[string]*Nomination       // open nominations, by beneficiary
	draining map[string]*Record           // workloads in state Draining
	degraded map[string]*Record           // holders with pods waiting for a replacement node
	byNode   [][]string                   // per node: the holders with GPUs there, ID order
	onNode   map[topology.NodeID][]string // promised victims with GPUs on a node, ID order
	promised recordList                   // draining victims promised to nominations
	sums     []promisedSum                // chargePromised's scratch
	reserved map[topology.NodeID]int      // GPUs allocated on behalf of nominations
	sized    recordList                   // records charged below their spec's size (elastic.go)
	nomSeq   uint64                       // order in which nominations were accepted
	// claimHolders counts the holders with shares, slices or named
	// resources (reclaim.go).
	claimHolders int
	// assignOpts are the scheduler's settings for choosing flavors in
	// queues whose resource groups split their resources (groups.go).
	assignOpts quota.AssignOptions

	holders *btree.BTreeG[*Record] // Admitted and Draining records, by ID
	// placed counts the changes to the holders and the nodes they hold
	// (listNodes), so that views derived from them can tell they are
	// still current.
	placed uint64
	// version counts every change to the books but a checkpoint (Version).
	version uint64
	// unpromised counts the draining victims that stopped being promised
	// to any nomination (Unpromised).
	unpromised uint64
	// protected holds, earliest first, when each holder started within
	// its MinRuntime stops being protected (ProtectionEnds); entries of
	// holders that left or started again are dropped when they surface.
	protected protections
	// crossings counts the holders spanning leaves, per leaf (crossings.go).
	crossings *placement.Crossings
}

// Record is the ledger's account of one workload. Its fields are read-only
// outside the ledger.
type Record struct {
	W      *gang.Workload // the spec; the ledger writes only Drain.LastCheckpoint
	Queue  quota.NodeID
	Flavor quota.FlavorID
	State  gang.State
	// Policy resolved by the scheduler from the priority class: whether it
	// may be a victim, how long it is protected after start, its grace.
	Policy Policy

	// Submitted is its queue-order time (submission, or adoption), which
	// LowerOrNewerEqualPriority compares.
	Submitted time.Time

	// Holding GPUs (Admitted or Draining).
	Assign    placement.Assignment
	Nodes     []placement.NodeGPUs // GPUs per node, from Assign
	Started   time.Time
	Borrowing bool // its queue borrowed once its usage was charged
	// charged is what its quota usage holds for it (see requestOf).
	charged quota.Request
	// flavors and charges are set for work with named resources in a
	// queue whose resource groups split them (groups.go): the flavor per
	// pod set and named resource, and what charged lands on per flavor.
	flavors [][]quota.FlavorID
	charges []quota.Charge

	// Drain is set while it drains.
	Drain *Drain
	// servedBy: a nomination was opened for it, so victims may still count
	// on it (Drain.Live) when it ends.
	servedBy bool

	// Lost lists pods whose node went down, waiting for a replacement
	// (a gang that survives the loss of a node). Their GPUs are not in
	// Assign or Nodes; the quota stays charged for the whole gang.
	Lost []LostPod

	size    []int  // pods per pod set charged, nil: the spec's counts (elastic.go)
	splitOf string // the workload a shrink split this pod off
	// MoveTo is where it restarts once it has drained (see ReserveMove);
	// no pods: it does not move.
	MoveTo placement.Assignment
}

// Policy is what the scheduler's priority classes decide about a holder.
type Policy struct {
	// Preemptible: it may be a victim (it checkpoints, or its class allows
	// evicting work that does not).
	Preemptible bool
	MinRuntime  time.Duration
	Grace       time.Duration
}

// GPUs is the total the workload is charged for: at its running size
// when it runs (or is nominated) below its count, its spec's otherwise.
func (r *Record) GPUs() int { return r.sizedGPUs() }

// LastCheckpoint is when it last saved its state (zero: never).
func (r *Record) LastCheckpoint() time.Time { return r.W.Drain.LastCheckpoint }

// OnNode reports whether one of its pods runs on node n.
func (r *Record) OnNode(n topology.NodeID) bool {
	for i := range r.Assign.Pods {
		if r.Assign.Pods[i].Node == n {
			return true
		}
	}
	return false
}

// Drain is a victim's drain: asked to stop at Since, to be killed from
// Deadline on.
type Drain struct {
	Since    time.Time
	Deadline time.Time
	Reason   gang.DrainReason
	// Beneficiaries lists every workload it was drained for, in the order
	// the plans were accepted.
	Beneficiaries []string
	// Live is the part of Beneficiaries still counting on it (not
	// dissolved). While any is live, the victim's GPUs and quota are
	// promised: a later search must not count them again.
	Live []string
	// KillAsked is when the host was first asked to kill it (zero: not yet).
	KillAsked time.Time

	claims []claim // its GPUs promised to nominations, per node
}

// Promised reports whether a beneficiary still counts on the victim.
func (d *Drain) Promised() bool { return len(d.Live) > 0 }

// claim is a part of a victim's GPUs on one node promised to a beneficiary.
type claim struct {
	beneficiary string
	node        topology.NodeID
	gpus        int
}

// Nomination is the GPUs promised to a pending beneficiary while its
// victims drain.
type Nomination struct {
	Beneficiary string
	Target      placement.Assignment
	// WaitOn lists the victims still holding GPUs of the target, in ID
	// order. The beneficiary starts when it is empty.
	WaitOn  []string
	ReadyBy time.Time
	// Seq orders nominations by acceptance.
	Seq uint64

	reserved []placement.NodeGPUs // allocated in the fleet on its behalf, node order
}

// Reserved returns the GPUs allocated on the nomination's behalf, per node.
func (n *Nomination) Reserved() []placement.NodeGPUs { return slices.Clone(n.reserved) }

// New returns empty books over a fleet and a quota tree that hold nothing
// yet: the ledger becomes their only writer.
func New(f *topology.Fleet, t *quota.Tree) *Ledger {
	return &Ledger{
		fleet: f, tree: t, scratch: f.Clone(), index: preempt.NewIndex(f, t), byNode: make([][]string, f.NumNodes()),
		recs: map[string]*Record{}, noms: map[string]*Nomination{}, draining: map[string]*Record{}, degraded: map[string]*Record{},
		onNode: map[topology.NodeID][]string{}, reserved: map[topology.NodeID]int{},
		holders: btree.NewG(16, func(a, b *Record) bool { return a.W.ID < b.W.ID }),
	}
}

// SetAssignOptions sets what choosing flavors in a queue whose resource
// groups split its resources reads (quota.Tree.Assign).
func (l *Ledger) SetAssignOptions(o quota.AssignOptions) { l.assignOpts = o }

// Fleet is the live fleet, for reading.
func (l *Ledger) Fleet() *topology.Fleet { return l.fleet }

// Tree is the live quota tree, for reading.
func (l *Ledger) Tree() *quota.Tree { return l.tree }

// Scratch returns a fleet equal to the live one (in GPUs per node and
// health), for a what-if search to change and put back.
func (l *Ledger) Scratch() *topology.Fleet { return l.scratch }

// RebuildScratch copies the live fleet again, after a search that was
// interrupted left the scratch fleet changed.
func (l *Ledger) RebuildScratch() { l.scratch = l.fleet.Clone() }

// Index is the victim candidates as the search reads them.
func (l *Ledger) Index() *preempt.Index { return l.index }

// indexed tells the index that a holder started, changed or stopped.
// RunningOf is r as the victim search sees it.
func (l *Ledger) RunningOf(r *Record) preempt.Running { return l.running(r) }

func (l *Ledger) indexAdd(r *Record) {
	l.version++
	if err := l.index.Add(l.running(r)); err != nil {
		panic("ledger: the index refused a holder: " + err.Error())
	}
}

// indexUpdate follows a holder's change. A gang whose every pod was lost
// with its node holds no GPU, so it leaves the index until a replacement
// brings it back.
func (l *Ledger) indexUpdate(r *Record) {
	l.version++
	_, in := l.index.Get(r.W.ID)
	var err error
	switch {
	case len(r.Nodes) == 0 && in:
		err = l.index.Remove(r.W.ID)
	case len(r.Nodes) == 0:
	case in:
		err = l.index.Update(l.running(r))
	default:
		err = l.index.Add(l.running(r))
	}
	if err != nil {
		panic("ledger: the index refused a holder's change: " + err.Error())
	}
}

func (l *Ledger) indexRemove(r *Record) {
	l.version++
	if _, in := l.index.Get(r.W.ID); !in && len(r.Nodes) == 0 {
		return
	}
	if err := l.index.Remove(r.W.ID); err != nil {
		panic("ledger: the index lost a holder: " + err.Error())
	}
}

// SetHealth changes a node's health on the fleet and its mirror.
func (l *Ledger) SetHealth(n topology.NodeID, h topology.Health) error {
	l.version++
	if err := l.fleet.SetHealth(n, h); err != nil {
		return err
	}
	if err := l.scratch.SetHealth(n, h); err != nil {
		panic("ledger: the mirror refused a health change the fleet took: " + err.Error())
	}
	return nil
}

// allocate, release and place write the fleet and its mirror. The
// mirror keeps counts per node, not which GPUs: a search counts and
// places whole GPUs there, and the live fleet names them.
func (l *Ledger) allocate(n topology.NodeID, g int) error { return l.count(n, g, true) }

func (l *Ledger) release(n topology.NodeID, g int) error { return l.count(n, g, false) }

func (l *Ledger) count(n topology.NodeID, g int, take bool) error {
	write := (*topology.Fleet).Release
	if take {
		write = (*topology.Fleet).Allocate
	}
	if err := write(l.fleet, n, g); err != nil {
		return err
	}
	mirror(write(l.scratch, n, g))
	canon(l.fleet, n)
	canon(l.scratch, n)
	return nil
}

func mirror(err error) {
	if err != nil {
		panic("ledger: the mirror refused a change the fleet took: " + err.Error())
	}
}

// Get returns the record of a known workload.
func (l *Ledger) Get(id string) (*Record, bool) {
	r, ok := l.recs[id]
	return r, ok
}

// Len is the number of known workloads.
func (l *Ledger) Len() int { return len(l.recs) }

// Nomination returns the open nomination of beneficiary b.
func (l *Ledger) Nomination(b string) (*Nomination, bool) {
	n, ok := l.noms[b]
	return n, ok
}

// Nominations lists the open nominations in acceptance order.
func (l *Ledger) Nominations() []*Nomination {
	out := make([]*Nomination, 0, len(l.noms))
	for _, n := range l.noms {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *Nomination) int { return compareUint(a.Seq, b.Seq) })
	return out
}

// NumNominations is the number of open nominations.
func (l *Ledger) NumNominations() int { return len(l.noms) }

// Draining lists the draining workloads in ID order.
func (l *Ledger) Draining() []*Record {
	out := make([]*Record, 0, len(l.draining))
	for _, r := range l.draining {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Record) int { return compareString(a.W.ID, b.W.ID) })
	return out
}

// NumDraining is the number of draining workloads.
func (l *Ledger) NumDraining() int { return len(l.draining) }

// Holders calls fn for every workload holding GPUs, in ID order, until fn
// returns false.
func (l *Ledger) Holders(fn func(*Record) bool) { l.holders.Ascend(fn) }

// Placed changes whenever a workload starts or stops holding GPUs, or
// the nodes one holds change: what Holders lists, and where, is the same
// while it does not.
func (l *Ledger) Placed() uint64 { return l.placed }

// Version counts the changes to the books: every start, stop, drain,
// nomination, claim, move, resize, health or quota change, and any
// restore or adoption, but not a checkpoint. A victim search reads the
// books through the index, the claims and the promised victims, all of
// which a change moves; a checkpoint changes only what a victim costs,
// which orders plans but never decides whether one exists. Callers keep
// an answer with the Version it was found at, and it stands while the
// Version does, up to the first MinRuntime protection ending
// (ProtectionEnds).
func (l *Ledger) Version() uint64 { return l.version }

// Unpromised counts the times a draining victim stopped being promised to
// any nomination (a nomination dissolved, a beneficiary started): from
// then on every beneficiary it still lists waits for it without one
// (ReclaimingFor). Nothing else adds a victim to another workload's
// ReclaimingFor list, so an answer of ReclaimingFor found while this count
// stands may shrink (victims leave) but never grows, except for the
// workload a reclaim drains for.
func (l *Ledger) Unpromised() uint64 { return l.unpromised }

// ProtectionEnds is the earliest time after now at which a holder's
// MinRuntime protection ends (Started plus Policy.MinRuntime), and false
// when no holder is protected at now: a victim search's candidates
// change with time only then. now must not go back from one call to
// the next. O(log n) amortised over the holders started since.
func (l *Ledger) ProtectionEnds(now time.Time) (time.Time, bool) {
	l.dropProtections(now)
	if len(l.protected) == 0 {
		return time.Time{}, false
	}
	return l.protected[0].end, true
}

// dropProtections drops the earliest protections while they end by now
// or belong to no holder started at their time.
func (l *Ledger) dropProtections(now time.Time) {
	for len(l.protected) > 0 {
		p := l.protected[0]
		r, ok := l.recs[p.id]
		if p.end.After(now) && ok && r.State.HoldsGPUs() && r.Started.Add(r.Policy.MinRuntime).Equal(p.end) {
			return
		}
		heap.Pop(&l.protected)
	}
}

// fileProtection files r, just started, among the protected holders,
// first dropping those whose protection ended by its start (no later
// than now).
func (l *Ledger) fileProtection(r *Record) {
	if r.Policy.MinRuntime <= 0 {
		return
	}
	l.dropProtections(r.Started)
	heap.Push(&l.protected, protection{end: r.Started.Add(r.Policy.MinRuntime), id: r.W.ID})
}

// protection is when holder id stops being protected by its MinRuntime.
type protection struct {
	end time.Time
	id  string
}

// protections is a min-heap of protections by end (container/heap).
type protections []protection

func (h protections) Len() int           { return len(h) }
func (h protections) Less(i, j int) bool { return h[i].end.Before(h[j].end) }
func (h protections) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *protections) Push(x any)        { *h = append(*h, x.(protection)) }
func (h *protections) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = protection{}
	*h = old[:len(old)-1]
	return x
}

// ReservedGPUs is the number of GPUs allocated on behalf of nominations.
func (l *Ledger) ReservedGPUs() int {
	t := 0
	for _, g := range l.reserved {
		t += g
	}
	return t
}

// Track records a new pending workload. The spec is the scheduler's copy;
// the ledger keeps the pointer.
func (l *Ledger) Track(w *gang.Workload, q quota.NodeID, f quota.FlavorID, p Policy) (*Record, error) {
	l.version++
	if _, dup := l.recs[w.ID]; dup {
		return nil, fmt.Errorf("ledger: %q already tracked", w.ID)
	}
	r := &Record{W: w, Queue: q, Flavor: f, Policy: p, State: gang.Pending}
	l.recs[w.ID] = r
	return r, nil
}

// Forget drops a pending workload that never held anything (an adoption
// refused after tracking it).
func (l *Ledger) Forget(id string) {
	l.version++
	if r, ok := l.recs[id]; ok && r.State == gang.Pending && l.noms[id] == nil {
		delete(l.recs, id)
	}
}

// move changes a record's state, checked against gang's transition table:
// a move the table refuses is a broken invariant of the caller.
func (l *Ledger) move(r *Record, to gang.State) {
	l.version++
	if !gang.CanTransition(r.State, to) {
		panic(fmt.Sprintf("ledger: %s cannot move from %s to %s", r.W.ID, r.State, to))
	}
	r.State = to
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
