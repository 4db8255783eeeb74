package fleet

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Sentinel errors of live operations (SetQueue, RemoveNode, AddNode).
var (
	// ErrInvalidQuota refuses a quota edit that breaks the quota tree's
	// rules; it wraps the tree's *quota.SpecError.
	ErrInvalidQuota = errors.New("fleet: invalid quota edit")
	// ErrOverCapacity refuses a change after which the quota tree would
	// guarantee more GPUs of a flavor than the fleet has in service; it
	// wraps a *quota.CapacityError.
	ErrOverCapacity = errors.New("fleet: guarantees would exceed the fleet's capacity")
	// ErrNodeBusy refuses taking out of service a node that something
	// still holds or is promised.
	ErrNodeBusy = errors.New("fleet: node is in use")
)

// Quota returns the quota configuration in force, live edits included,
// in the order of the Config's spec: a host edits a node of it and passes
// it to SetQueue.
func (s *Scheduler) Quota() quota.Spec { return s.tree.Spec() }

// SetQueue replaces, as one edit, the settings of the cohort or queue
// named spec.Name: its quota of every flavor (nominal, borrowing and
// lending limits, resources), its fair-sharing weight, and for a queue its
// preemption rules and queueing strategy. spec is the node as Quota lists
// it, edited; its parent and kind cannot change, and a flavor it serves
// cannot be dropped (set its nominal quota to 0).
//
// It is refused whole, changing nothing, when the edit breaks the quota
// tree's rules (ErrInvalidQuota wrapping the *quota.SpecError: an unknown
// node is quota.ErrUnknownNode) or when the tree would then guarantee more
// GPUs of a flavor than the fleet's nodes in service have
// (ErrOverCapacity wrapping the *quota.CapacityError).
//
// Nothing is evicted by the edit itself. Running work keeps its GPUs and
// stays charged to its queue: a queue left above its new quota borrows
// the excess, and the next cycles reclaim it by preemption when a queue
// below its own quota needs it, under the drain contract (deadline, then
// kill). Pending work is judged by the new quota, weight and rules from
// the next cycle on; a pending workload larger than its queue can now
// ever reach waits (Explain says quota) rather than being refused.
func (s *Scheduler) SetQueue(now time.Time, spec quota.NodeSpec) error {
	if err := s.tick("set-queue", now); err != nil {
		return err
	}
	capacity := s.capacity(-1)
	var old quota.NodeSpec
	for _, n := range s.tree.Spec().Nodes {
		if n.Name == spec.Name {
			old = n
		}
	}
	err := s.books.SetQuotaNode(spec, func(t *quota.Tree) error {
		if err := t.ValidateCapacity(capacity); err != nil {
			return fmt.Errorf("%w: %w", ErrOverCapacity, err)
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrOverCapacity):
		return &Error{Op: "set-queue", Detail: fmt.Sprintf("node %q", spec.Name), Err: err}
	case err != nil:
		return &Error{Op: "set-queue", Detail: fmt.Sprintf("node %q", spec.Name), Err: fmt.Errorf("%w: %w", ErrInvalidQuota, err)}
	}
	// Approved bookings are promises: an edit whose guarantees would break
	// one at some instant is undone.
	if err := s.cal.Validate(now); err != nil {
		if uerr := s.books.SetQuotaNode(old, func(*quota.Tree) error { return nil }); uerr != nil {
			panic("fleet: undoing a quota edit: " + uerr.Error())
		}
		return &Error{Op: "set-queue", Detail: fmt.Sprintf("node %q breaks an approved booking", spec.Name), Err: fmt.Errorf("%w: %w", ErrOverCapacity, err)}
	}
	s.advance(now)
	s.emit(Event{Kind: EventQueueChanged, Time: now, Queue: spec.Name})
	return nil
}

// capacity is the GPUs per flavor of the nodes in service (not absent),
// leaving out node except (-1: none).
func (s *Scheduler) capacity(except topology.NodeID) map[string]int64 {
	f := s.fleet
	out := map[string]int64{}
	for n := range topology.NodeID(f.NumNodes()) {
		if n != except && f.Health(n) != topology.Absent {
			out[f.GroupFlavor(f.NodeGroup(n))] += int64(f.Capacity(n))
		}
	}
	return out
}

// RemoveNode takes a node out of service: it keeps its place in the
// topology (nodes are declared once, in the Config's topology spec) but
// gets health topology.Absent, takes no work, and its GPUs leave the
// capacity that quota guarantees are checked against. Use it for a node
// decommissioned or lent elsewhere; a failure is SetNodeHealth's Down.
//
// The node must be empty: it is refused with ErrNodeBusy while a workload
// runs or drains there, a nomination holds or targets GPUs there, or a
// pod lost with it waits for a replacement. Drain it first (cordon it with
// SetNodeHealth, then RequestDrain what runs there, or let it end). It is
// refused with ErrOverCapacity when the quota tree would then guarantee
// more GPUs of the node's flavor than the nodes left in service have, or
// guarantees plus approved bookings would at some instant: lower the
// guarantees first with SetQueue. Bookings are promises a planned removal
// may not break (only a failure may, and gets the calendar's offer): a
// node inside the block of an approved booking not yet ended is
// ErrNodeBusy (wrapping calendar.ErrConflict, naming the booking) until
// the booking ends or is shortened or cancelled; take it down with
// SetNodeHealth if it has failed. An unknown node is ErrUnknownNode, one
// already absent ErrBadState.
func (s *Scheduler) RemoveNode(now time.Time, node string) error {
	if err := s.tick("remove-node", now); err != nil {
		return err
	}
	n, ok := s.fleet.Node(node)
	if !ok {
		return refuse("remove-node", "", ErrUnknownNode, "%q", node)
	}
	if s.fleet.Health(n) == topology.Absent {
		return refuse("remove-node", "", ErrBadState, "node %q is already absent", node)
	}
	if holders := s.holdersOf(n); len(holders) > 0 {
		return refuse("remove-node", "", ErrNodeBusy, "node %q: held by %s", node, strings.Join(holders, ", "))
	}
	if err := s.tree.ValidateCapacity(s.capacity(n)); err != nil {
		return &Error{Op: "remove-node", Detail: fmt.Sprintf("node %q", node), Err: fmt.Errorf("%w: %w", ErrOverCapacity, err)}
	}
	// Approved bookings are promises a planned removal may not break.
	if err := s.cal.RemoveNode(now, n); err != nil {
		kind := ErrOverCapacity
		if errors.Is(err, calendar.ErrConflict) {
			kind = ErrNodeBusy
		}
		return &Error{Op: "remove-node", Detail: fmt.Sprintf("node %q", node), Err: fmt.Errorf("%w: %w", kind, err)}
	}
	if err := s.books.SetHealth(n, topology.Absent); err != nil {
		panic("fleet: health of a known node refused: " + err.Error())
	}
	s.advance(now)
	s.emit(Event{Kind: EventNodeRemoved, Time: now, Node: node, Reason: topology.Absent.String()})
	return nil
}

// holdersOf lists what keeps node n in use: workloads with pods there
// (running, draining, or lost with it and waiting for a replacement) and
// nominations with GPUs there, sorted by kind then ID.
func (s *Scheduler) holdersOf(n topology.NodeID) []string {
	out := s.books.OnNode(n)
	for _, r := range s.books.Degraded() {
		for _, lp := range r.Lost {
			if lp.Pod.Node == n {
				out = append(out, r.W.ID+" (lost pod)")
				break
			}
		}
	}
	for _, nom := range s.nominationsInQueueOrder() {
		if targetOnNode(nom.Target, n) {
			out = append(out, nom.Beneficiary+" (nominated)")
		}
	}
	if len(out) == 0 && (s.fleet.Allocated(n) > 0 || s.fleet.MilliUsed(n) > 0) {
		out = append(out, fmt.Sprintf("%d allocated GPUs", s.fleet.Allocated(n)))
	}
	return out
}

// AddNode brings a node into service: one declared absent in the Config's
// topology spec (topology.NodeSpec.Absent), or taken out with RemoveNode.
// It becomes healthy, takes work from the next cycle on, and its GPUs
// count in the capacity quota guarantees are checked against. A node not
// declared in the spec cannot be added: the topology is fixed at New. It
// is refused with ErrUnknownNode for an unknown node and ErrBadState for
// one not absent.
func (s *Scheduler) AddNode(now time.Time, node string) error {
	if err := s.tick("add-node", now); err != nil {
		return err
	}
	n, ok := s.fleet.Node(node)
	if !ok {
		return refuse("add-node", "", ErrUnknownNode, "%q", node)
	}
	if h := s.fleet.Health(n); h != topology.Absent {
		return refuse("add-node", "", ErrBadState, "node %q is %s, not absent", node, h)
	}
	if err := s.books.SetHealth(n, topology.Healthy); err != nil {
		panic("fleet: health of a known node refused: " + err.Error())
	}
	s.cal.AddNode(n)
	s.advance(now)
	s.emit(Event{Kind: EventNodeAdded, Time: now, Node: node, Reason: topology.Healthy.String()})
	return nil
}

// restoreLive brings back what live operations changed before a restore
// places any workload: the quota tree as the snapshot had it, and which
// nodes are in service (a node added since New must take its workloads
// back; one removed holds none).
func (s *Scheduler) restoreLive(snap Snapshot) error {
	absent := map[string]bool{}
	for _, h := range snap.Fleet.Unhealthy {
		if h.Health == topology.Absent {
			absent[h.Node] = true
		}
	}
	for n := range topology.NodeID(s.fleet.NumNodes()) {
		want := topology.Healthy
		if absent[s.fleet.NodeName(n)] {
			want = topology.Absent
		}
		if is := s.fleet.Health(n); is != want && (is == topology.Absent || want == topology.Absent) {
			if err := s.books.SetHealth(n, want); err != nil {
				panic("fleet: health of a known node refused: " + err.Error())
			}
		}
	}
	capacity := s.capacity(-1)
	for _, ns := range snap.Quota.Nodes {
		if err := s.books.SetQuotaNode(ns, nil); err != nil {
			return &Error{Op: "restore", Detail: fmt.Sprintf("quota node %q", ns.Name), Err: fmt.Errorf("%w: %w", ErrInvalidQuota, err)}
		}
	}
	if err := s.tree.ValidateCapacity(capacity); err != nil {
		return &Error{Op: "restore", Err: fmt.Errorf("%w: %w", ErrOverCapacity, err)}
	}
	return nil
}
