package ledger

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Reclaiming without a nomination. A nomination passes a victim's whole
// GPUs to its beneficiary by count per node; shares, MIG slices and named
// resources are claims on the very GPU, slice and node, which no
// nomination holds. So a victim chosen to give such claims back (or for
// a beneficiary that needs them) drains under the same contract (SIGTERM
// now, kill at the deadline) but is promised to nobody: DrainServing
// names its beneficiary in Drain.Beneficiaries and leaves Drain.Live
// empty. When it exits, everything it held goes back to the pool, and the
// beneficiary, pending, is admitted by the ordinary cycle. Until then
// ReclaimingFor lists the drains it counts on, so that it waits for them
// instead of draining more.

// DrainServing starts the drain of admitted holder id for pending
// beneficiary b, deadline at deadline, without a nomination (see above).
// It is refused, changing nothing, for a holder that is not admitted (a
// draining one already has its drain), a beneficiary that is not pending
// or is nominated, an unknown reason or a deadline before now.
func (l *Ledger) DrainServing(id, b string, now, deadline time.Time, reason gang.DrainReason) (*Record, error) {
	l.version++
	r, ok := l.recs[id]
	br, bok := l.recs[b]
	switch {
	case !ok || r.State != gang.Admitted:
		return nil, fmt.Errorf("ledger: drain %q: not an admitted workload", id)
	case !bok || br.State != gang.Pending || l.noms[b] != nil:
		return nil, fmt.Errorf("ledger: drain %q for %q: not a pending workload without a nomination", id, b)
	}
	r, err := l.DrainFor(id, now, deadline, reason)
	if err != nil {
		return nil, err
	}
	r.Drain.Beneficiaries = append(r.Drain.Beneficiaries, b)
	return r, nil
}

// ReclaimingFor lists, in ID order, the draining holders drained for b
// that no nomination counts on: what b waits for when it was reclaimed
// for without a nomination.
func (l *Ledger) ReclaimingFor(b string) []*Record {
	var out []*Record
	for _, r := range l.draining {
		if !r.Drain.Promised() && slices.Contains(r.Drain.Beneficiaries, b) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y *Record) int { return compareString(x.W.ID, y.W.ID) })
	return out
}

// NumClaimHolders is how many holders run with shares, MIG slices or
// named resources: the victims only a reclaim without a nomination frees.
func (l *Ledger) NumClaimHolders() int { return l.claimHolders }

// Vacate releases (take false) or takes back (take true) on f what holder
// r holds: its claims and its whole GPUs per node. f must be a what-if
// copy of the live fleet (Fleet().Clone()), never the live fleet or the
// mirror the ledger keeps: a search vacates candidates on it, places, and
// takes back in reverse order what it keeps. Taking back is all or
// nothing.
func (l *Ledger) Vacate(f *topology.Fleet, r *Record, take bool) error {
	if f == l.fleet || f == l.scratch {
		return fmt.Errorf("ledger: vacate %q: not on the books' own fleets", r.W.ID)
	}
	if !take {
		if err := claimPods(f, r.Assign.Pods, false); err != nil {
			return err
		}
		for i, x := range r.Nodes {
			if err := f.Release(x.Node, x.GPUs); err != nil {
				for _, y := range r.Nodes[:i] {
					undo(f.Allocate(y.Node, y.GPUs))
				}
				undo(claimPods(f, r.Assign.Pods, true))
				return err
			}
		}
		return nil
	}
	moved := clearNamed(f, r.Assign.Pods)
	if err := claimPods(f, r.Assign.Pods, true); err != nil {
		recanon(f, moved)
		return err
	}
	for i, x := range r.Nodes {
		if err := f.Allocate(x.Node, x.GPUs); err != nil {
			for _, y := range r.Nodes[:i] {
				undo(f.Release(y.Node, y.GPUs))
			}
			undo(claimPods(f, r.Assign.Pods, false))
			recanon(f, moved)
			return err
		}
	}
	return nil
}

func undo(err error) {
	if err != nil {
		panic("ledger: undoing a vacate: " + err.Error())
	}
}
