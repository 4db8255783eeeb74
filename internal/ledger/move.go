package ledger

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// A move is a holder drained to restart elsewhere (defragmentation): the
// GPUs of its new place are reserved for it while it drains, allocated
// on the fleet so that nobody else takes them but not charged to its
// quota a second time, since it gives its old GPUs back as it takes the
// new ones. When it exits drained or killed, Requeue turns the
// reservation into its nomination and the next cycle starts it there,
// from its last checkpoint; any other end drops the reservation.

// ReserveMove reserves target, free GPUs now, for holder id, which drains
// (or is about to: Admitted is accepted so that a plan can drain and
// reserve in one step). It is refused, changing nothing, for work that
// holds no GPUs or already moves, a target of the wrong size, or one
// whose GPUs are not free on healthy nodes.
func (l *Ledger) ReserveMove(id string, target placement.Assignment) error {
	l.version++
	r, ok := l.recs[id]
	switch {
	case !ok || !r.State.HoldsGPUs():
		return fmt.Errorf("ledger: move %q: it holds no GPUs", id)
	case len(r.MoveTo.Pods) > 0:
		return fmt.Errorf("ledger: move %q: it already moves", id)
	case target.GPUs() != r.GPUs():
		return fmt.Errorf("ledger: move %q: target has %d GPUs, it needs %d", id, target.GPUs(), r.GPUs())
	}
	nodes := target.NodeGPUs()
	for _, x := range nodes {
		if x.Node < 0 || int(x.Node) >= l.fleet.NumNodes() || l.fleet.Health(x.Node) != topology.Healthy || l.fleet.Free(x.Node) < x.GPUs {
			return fmt.Errorf("ledger: move %q: %d GPUs not free on node %d", id, x.GPUs, x.Node)
		}
	}
	for _, x := range nodes {
		if err := l.allocate(x.Node, x.GPUs); err != nil {
			panic(fmt.Sprintf("ledger: reserving GPUs checked free for the move of %q: %v", id, err))
		}
	}
	r.MoveTo = target.Clone()
	return nil
}

// DropMove gives back the GPUs reserved for id's move, if it has one,
// and reports whether it had.
func (l *Ledger) DropMove(id string) bool {
	l.version++
	r, ok := l.recs[id]
	if !ok || len(r.MoveTo.Pods) == 0 {
		return false
	}
	for _, x := range r.MoveTo.NodeGPUs() {
		if err := l.release(x.Node, x.GPUs); err != nil {
			panic(fmt.Sprintf("ledger: GPUs reserved for the move of %q lost: %v", id, err))
		}
	}
	r.MoveTo = placement.Assignment{}
	return true
}

// MovesOn lists the holders whose move reserves GPUs on node n, in ID
// order: O(the holders).
func (l *Ledger) MovesOn(n topology.NodeID) []string {
	var out []string
	l.holders.Ascend(func(r *Record) bool {
		for _, p := range r.MoveTo.Pods {
			if p.Node == n {
				out = append(out, r.W.ID)
				break
			}
		}
		return true
	})
	return out
}

// Moving reports whether holder id drains to restart elsewhere: it has
// a reserved place, or it drains for defragmentation and its place was
// given back (DropMove) when the place's node left service.
func (l *Ledger) Moving(id string) bool {
	r, ok := l.recs[id]
	return ok && r.State.HoldsGPUs() && (len(r.MoveTo.Pods) > 0 || r.Drain != nil && r.Drain.Reason == gang.DrainDefrag)
}

// Requeue ends a moving holder's run (it exited drained or killed): its
// old GPUs and quota are released as Exit releases them and it is pending
// again. Its reserved GPUs, if it still has them, become its nomination,
// ready at now: the next cycle starts it there. A mover whose place was
// given back is pending with no nomination, at its spec's size: the next
// cycle places it wherever it fits. It is refused, changing nothing, for
// work that is not Moving.
func (l *Ledger) Requeue(id string, now time.Time) error {
	l.version++
	r := l.recs[id]
	if !l.Moving(id) {
		return fmt.Errorf("ledger: requeue %q: not a moving holder", id)
	}
	if _, ok := l.noms[id]; ok {
		return fmt.Errorf("ledger: requeue %q: it is nominated already", id)
	}
	l.releaseHolder(r)
	if r.servedBy {
		l.Unserve(id)
	}
	r.Drain = nil
	l.move(r, gang.Pending)
	if len(r.MoveTo.Pods) == 0 {
		r.servedBy = false
		r.Assign, r.Nodes, r.Lost = placement.Assignment{}, nil, nil
		l.setSize(r, nil)
		return nil
	}
	if err := l.tree.AddUsage(r.Queue, r.Flavor, int64(r.GPUs())); err != nil {
		panic(fmt.Sprintf("ledger: charging the quota %q just gave back: %v", id, err))
	}
	target := r.MoveTo
	r.MoveTo = placement.Assignment{}
	r.Assign, r.Nodes = placement.Assignment{}, nil
	r.servedBy = true
	l.nomSeq++
	n := &Nomination{Beneficiary: id, Target: target, ReadyBy: now, Seq: l.nomSeq}
	for _, x := range target.NodeGPUs() {
		n.reserved = addGPUs(n.reserved, x.Node, x.GPUs)
		l.reserved[x.Node] += x.GPUs
	}
	l.noms[id] = n
	return nil
}

// MoveGPUs is the GPUs reserved for id's move (0: none).
func (l *Ledger) MoveGPUs(id string) int {
	if r, ok := l.recs[id]; ok {
		return r.MoveTo.GPUs()
	}
	return 0
}
