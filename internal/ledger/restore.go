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
	l.version++
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
	l.version++
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
	l.version++
	if r, ok := l.recs[id]; ok && r.State.HoldsGPUs() {
		r.Borrowing = borrowing
	}
}

// AdoptNomination reopens a beneficiary's nomination from what a host
// sees after a restart without a snapshot: its target, and the victims
// draining for it (restored first, each listing it among its live
// beneficiaries). The GPUs each target node needs come from the claims on
// it the host kept (restored with their drains), or, when it kept none,
// from those victims there, in ID order, up to what no other nomination
// claims of them; the rest must be free, and is reserved for it now. It
// waits on the victims whose GPUs it claims. It is ready by readyBy, the
// time the host kept, or by the latest of their deadlines if one is later
// (now when readyBy is zero and it claims none). It is refused, changing
// nothing, when b is not pending without a nomination, the target is not
// a size its pod sets allow, or its GPUs cannot be covered.
func (l *Ledger) AdoptNomination(b string, target placement.Assignment, now, readyBy time.Time) error {
	l.version++
	r, ok := l.recs[b]
	if !ok || r.State != gang.Pending || l.noms[b] != nil {
		return fmt.Errorf("ledger: adopt nomination of %q: not a pending workload without one", b)
	}
	if _, ok := SizeOf(r.W, target.Pods); !ok {
		return fmt.Errorf("ledger: adopt nomination of %q: target of %d pods, not a size its pod sets allow", b, len(target.Pods))
	}
	type victimClaim struct {
		victim *Record
		claim  claim
	}
	var claims []victimClaim
	var reserved []placement.NodeGPUs
	var waitOn []string
	// Claims the host kept (restored with their drains) say all: the rest
	// of the target was reserved. Without any, they are derived.
	kept := false
	for _, v := range l.draining {
		kept = kept || slices.ContainsFunc(v.Drain.claims, func(c claim) bool { return c.beneficiary == b })
	}
	for _, x := range target.NodeGPUs() {
		need := x.GPUs
		for _, id := range l.onNode[x.Node] {
			v := l.draining[id]
			if v == nil {
				continue
			}
			for _, c := range v.Drain.claims {
				if c.beneficiary == b && c.node == x.Node && need > 0 {
					need -= min(need, c.gpus)
					if !slices.Contains(waitOn, id) {
						waitOn = append(waitOn, id)
						if v.Drain.Deadline.After(readyBy) {
							readyBy = v.Drain.Deadline
						}
					}
				}
			}
		}
		for _, id := range l.onNode[x.Node] {
			v := l.draining[id]
			if need == 0 || kept {
				break
			}
			if v == nil || !slices.Contains(v.Drain.Live, b) {
				continue
			}
			if g := min(need, v.unclaimedOn(x.Node)); g > 0 {
				claims = append(claims, victimClaim{v, claim{b, x.Node, g}})
				need -= g
				if !slices.Contains(waitOn, id) {
					waitOn = append(waitOn, id)
					if v.Drain.Deadline.After(readyBy) {
						readyBy = v.Drain.Deadline
					}
				}
			}
		}
		if need > 0 {
			if x.Node < 0 || int(x.Node) >= l.fleet.NumNodes() || l.fleet.Health(x.Node) != topology.Healthy || l.fleet.Free(x.Node) < need {
				return fmt.Errorf("ledger: adopt nomination of %q: %d GPUs neither free nor draining for it on node %d", b, need, x.Node)
			}
			reserved = append(reserved, placement.NodeGPUs{Node: x.Node, GPUs: need})
		}
	}
	if readyBy.IsZero() {
		readyBy = now
	}
	for _, c := range claims {
		c.victim.Drain.claims = append(c.victim.Drain.claims, c.claim)
	}
	l.nomSeq++
	if err := l.RestoreNomination(b, target, reserved, waitOn, readyBy, l.nomSeq); err != nil {
		l.nomSeq--
		for _, c := range slices.Backward(claims) {
			c.victim.Drain.claims = c.victim.Drain.claims[:len(c.victim.Drain.claims)-1]
		}
		return fmt.Errorf("ledger: adopt nomination of %q: %w", b, err)
	}
	return nil
}

// AdoptServed marks a workload adopted after a restart (pending, or a
// beneficiary that started while victims freeing its quota still drain)
// as served when a draining victim lists it among its live beneficiaries,
// as a nomination or reclaim would have: its end then releases them.
func (l *Ledger) AdoptServed(b string) {
	l.version++
	r, ok := l.recs[b]
	if !ok {
		return
	}
	for _, v := range l.draining {
		if slices.Contains(v.Drain.Live, b) {
			r.servedBy = true
			return
		}
	}
}

// DropUnknownLive forgets, on every drain, the live beneficiaries the
// books do not track: after a restart by adoption, a beneficiary the host
// did not adopt again no longer counts on its victims, which become
// ordinary draining candidates. A beneficiary that runs still counts on
// the victims that free its quota, until it ends.
func (l *Ledger) DropUnknownLive() {
	l.version++
	var gone []string
	for _, v := range l.draining {
		for _, b := range v.Drain.Live {
			if _, ok := l.recs[b]; !ok && !slices.Contains(gone, b) {
				gone = append(gone, b)
			}
		}
	}
	slices.Sort(gone)
	for _, b := range gone {
		l.Unserve(b)
	}
}
