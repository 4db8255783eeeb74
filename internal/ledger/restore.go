package ledger

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Claim is a victim's GPUs on one node promised to a beneficiary.
type Claim struct {
	Beneficiary string
	Node        topology.NodeID
	GPUs        int
}

// Claims returns the drain's promises, in the order they were made.
func (d *Drain) Claims() []Claim {
	out := make([]Claim, len(d.claims))
	for i, c := range d.claims {
		out[i] = Claim{Beneficiary: c.beneficiary, Node: c.node, GPUs: c.gpus}
	}
	return out
}

// RestoreDrain puts a running workload back into the drain it was in
// before a restart, with its promises. Nominations it promises GPUs to
// are restored after it (RestoreNomination), and CheckInvariants then
// confirms the books add up.
func (l *Ledger) RestoreDrain(id string, d Drain, claims []Claim) error {
	r, ok := l.recs[id]
	if !ok || r.State != gang.Admitted {
		return fmt.Errorf("ledger: restore drain of %q: not running", id)
	}
	if !d.Reason.Valid() || d.Deadline.IsZero() {
		return fmt.Errorf("ledger: restore drain of %q: no reason or deadline", id)
	}
	dr := &Drain{Since: d.Since, Deadline: d.Deadline, Reason: d.Reason, KillAsked: d.KillAsked,
		Beneficiaries: slices.Clone(d.Beneficiaries), Live: slices.Clone(d.Live)}
	for _, c := range claims {
		if c.GPUs <= 0 || !slices.Contains(dr.Live, c.Beneficiary) {
			return fmt.Errorf("ledger: restore drain of %q: bad claim for %q", id, c.Beneficiary)
		}
		dr.claims = append(dr.claims, claim{c.Beneficiary, c.Node, c.GPUs})
	}
	r.Drain = dr
	for _, b := range dr.Live {
		if x, ok := l.recs[b]; ok {
			x.servedBy = true
		}
	}
	for _, x := range r.Nodes {
		if r.unclaimedOn(x.Node) < 0 {
			r.Drain = nil
			return fmt.Errorf("ledger: restore drain of %q: promises more GPUs than it holds", id)
		}
	}
	l.move(r, gang.Draining)
	l.draining[id] = r
	l.listPromised(r)
	l.indexUpdate(r)
	return nil
}

// RestoreNomination reopens a beneficiary's nomination after a restart:
// its quota is charged and its reserved GPUs allocated again; the victims
// it waits on must have been restored with their claims.
func (l *Ledger) RestoreNomination(b string, target placement.Assignment, reserved []placement.NodeGPUs, waitOn []string, readyBy time.Time, seq uint64) error {
	r, ok := l.recs[b]
	if !ok || r.State != gang.Pending || l.noms[b] != nil {
		return fmt.Errorf("ledger: restore nomination of %q: not a pending workload without one", b)
	}
	for _, v := range waitOn {
		if x, ok := l.draining[v]; !ok || !slices.Contains(x.Drain.Live, b) {
			return fmt.Errorf("ledger: restore nomination of %q: victim %q is not draining for it", b, v)
		}
	}
	size, ok := SizeOf(r.W, target.Pods)
	if !ok {
		return fmt.Errorf("ledger: restore nomination of %q: target of %d pods, not a size its pod sets allow", b, len(target.Pods))
	}
	l.setSize(r, size)
	if err := l.tree.AddUsage(r.Queue, r.Flavor, int64(r.GPUs())); err != nil {
		l.setSize(r, nil)
		return fmt.Errorf("ledger: restore nomination of %q: %w", b, err)
	}
	for i, x := range reserved {
		if err := l.allocate(x.Node, x.GPUs); err != nil {
			for _, y := range reserved[:i] {
				_ = l.release(y.Node, y.GPUs)
			}
			_ = l.tree.RemoveUsage(r.Queue, r.Flavor, int64(r.GPUs()))
			l.setSize(r, nil)
			return fmt.Errorf("ledger: restore nomination of %q: %w", b, err)
		}
	}
	r.servedBy = true
	n := &Nomination{Beneficiary: b, Target: target.Clone(), WaitOn: slices.Sorted(slices.Values(waitOn)), ReadyBy: readyBy, Seq: seq}
	for _, x := range reserved {
		n.reserved = addGPUs(n.reserved, x.Node, x.GPUs)
		l.reserved[x.Node] += x.GPUs
	}
	l.noms[b] = n
	l.nomSeq = max(l.nomSeq, seq)
	return nil
}

// RestoreBorrowing sets whether a restored holder borrowed when it was
// admitted: a fact of its admission, not of the restored tree.
func (l *Ledger) RestoreBorrowing(id string, borrowing bool) {
	if r, ok := l.recs[id]; ok && r.State.HoldsGPUs() {
		r.Borrowing = borrowing
	}
}
