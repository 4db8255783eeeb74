package ledger

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Admit starts a pending workload on a: its GPUs are allocated on the
// fleet and its quota charged, all or nothing. started is when it began to
// run (now for a fresh admission, earlier for adopted work). A refused
// admission (the GPUs are not free, the quota tree refuses the usage)
// changes nothing.
func (l *Ledger) Admit(id string, a placement.Assignment, started time.Time) error {
	l.version++
	return l.admit(id, a, nil, started)
}

// AdmitDegraded is Admit for a holder restored while pods of it wait for
// a replacement (see LosePods): a holds its other pods, on GPUs allocated
// now; the lost ones count in its size and quota but hold no GPUs (their
// node may be down, or back and given to other work).
func (l *Ledger) AdmitDegraded(id string, a placement.Assignment, lost []LostPod, started time.Time) error {
	l.version++
	return l.admit(id, a, lost, started)
}

func (l *Ledger) admit(id string, a placement.Assignment, lost []LostPod, started time.Time) error {
	r, ok := l.recs[id]
	if !ok || r.State != gang.Pending {
		return fmt.Errorf("ledger: admit %q: not a pending workload", id)
	}
	if _, nominated := l.noms[id]; nominated {
		return fmt.Errorf("ledger: admit %q: it has a nomination", id)
	}
	all := a
	if len(lost) > 0 {
		if !r.W.Drain.SurvivesNodeLoss {
			return fmt.Errorf("ledger: admit %q: it did not declare it survives the loss of a node", id)
		}
		all.Pods = slices.Clone(a.Pods)
		for _, x := range lost {
			all.Pods = append(all.Pods, x.Pod)
		}
		a.Span = l.span(a)
	}
	size, ok := SizeOf(r.W, all.Pods)
	if !ok {
		return fmt.Errorf("ledger: admit %q: %d pods, not a size its pod sets allow", id, len(all.Pods))
	}
	nodes := a.NodeGPUs()
	if err := l.place(a, nodes, true); err != nil {
		return err
	}
	l.setSize(r, size)
	req := l.requestOf(all)
	given := r.flavors
	r.charged, r.charges = req, nil
	if l.splits(r, req) {
		if r.flavors == nil {
			r.flavors = l.chooseFlavors(r, all.Pods)
		}
		r.charges = l.chargesOf(r, all.Pods)
	}
	if err := r.chargeTree(l.tree, true); err != nil {
		r.charged, r.charges, r.flavors = quota.Request{}, nil, given
		l.setSize(r, nil)
		if uerr := l.place(a, nodes, false); uerr != nil {
			panic("ledger: undoing a fresh allocation: " + uerr.Error())
		}
		return err
	}
	if len(lost) > 0 {
		// Before hold: the index reads which pods are lost.
		r.Lost = slices.Clone(lost)
		l.degraded[id] = r
	}
	l.hold(r, a, nodes, started)
	return nil
}

// hold records r as running on a; GPUs and quota are already charged.
// Borrowing is read once, with its usage in the tree, on every path that
// starts a workload.
func (l *Ledger) hold(r *Record, a placement.Assignment, nodes []placement.NodeGPUs, started time.Time) {
	l.move(r, gang.Admitted)
	r.Assign, r.Nodes, r.Started = a, nodes, started
	r.Borrowing = l.borrowsNow(r)
	l.fileProtection(r)
	if _, dup := l.holders.ReplaceOrInsert(r); dup {
		panic("ledger: workload started twice: " + r.W.ID)
	}
	l.listNodes(r, 1)
	if r.HasClaims() {
		l.claimHolders++
	}
	if len(nodes) > 0 { // work holding no whole GPU stays out of the victim index
		l.indexAdd(r)
	}
}

// Exit ends a workload with the state how records. A holder's GPUs are
// released, except those promised to nominations, which pass to them, and
// its quota usage is released; a beneficiary's nomination dissolves (its
// reserved GPUs and quota return). The record is forgotten. It returns the
// record as it was, and the nomination that dissolved, if any.
func (l *Ledger) Exit(id string, how gang.ExitReason) (*Record, *Nomination, error) {
	l.version++
	r, ok := l.recs[id]
	if !ok {
		return nil, nil, fmt.Errorf("ledger: exit %q: unknown", id)
	}
	if !how.Valid() {
		return nil, nil, fmt.Errorf("ledger: exit %q: unknown reason %d", id, how)
	}
	l.DropMove(id)
	var dissolved *Nomination
	if n, ok := l.noms[id]; ok {
		l.Dissolve(id)
		dissolved = n
	}
	if r.State.HoldsGPUs() {
		l.releaseHolder(r)
		if r.servedBy {
			l.Unserve(id)
		}
	}
	to := how.State()
	if r.State == gang.Pending {
		to = gang.Cancelled // a pending workload can only be withdrawn
	}
	l.move(r, to)
	delete(l.recs, id)
	l.sized.remove(id)
	return r, dissolved, nil
}

// release returns a holder's GPUs and quota. GPUs that nominations claim
// stay allocated: they are reserved for those nominations from now on.
func (l *Ledger) releaseHolder(r *Record) {
	if err := r.chargeTree(l.tree, false); err != nil {
		panic(fmt.Sprintf("ledger: quota usage of %q lost: %v", r.W.ID, err))
	}
	l.releaseClaims(r)
	var claims []claim
	if r.Drain != nil {
		claims = r.Drain.claims
	}
	for _, ng := range r.Nodes {
		free := ng.GPUs
		for _, c := range claims {
			if c.node == ng.Node {
				free -= c.gpus
			}
		}
		if free > 0 {
			if err := l.release(ng.Node, free); err != nil {
				panic(fmt.Sprintf("ledger: GPUs of %q lost: %v", r.W.ID, err))
			}
		}
	}
	if r.Drain != nil {
		l.victimGone(r)
	}
	l.holders.Delete(r)
	if r.HasClaims() {
		l.claimHolders--
	}
	l.listNodes(r, -1)
	delete(l.degraded, r.W.ID)
	l.indexRemove(r)
}

// Checkpoint records that a holder saved its state at at. A checkpoint
// older than the last one known changes nothing (hosts learn of them late
// and out of order). It is refused for work that holds no GPUs, and for a
// time before the run started or after now.
func (l *Ledger) Checkpoint(id string, at, now time.Time) error {
	r, ok := l.recs[id]
	switch {
	case !ok:
		return fmt.Errorf("ledger: checkpoint %q: unknown", id)
	case !r.State.HoldsGPUs():
		return fmt.Errorf("ledger: checkpoint %q: it is %s, not running", id, r.State)
	case at.After(now):
		return fmt.Errorf("ledger: checkpoint %q: at %s is after now %s", id, at.Format(time.RFC3339), now.Format(time.RFC3339))
	case at.Before(r.Started):
		return fmt.Errorf("ledger: checkpoint %q: at %s is before its start %s", id, at.Format(time.RFC3339), r.Started.Format(time.RFC3339))
	}
	if at.After(r.W.Drain.LastCheckpoint) {
		// The index keeps the key it filed the entry under, so the spec
		// it shares may change before the update; the rest of what it
		// holds of r is as it was (unless every pod was lost with its
		// node: it holds no GPU and stays out).
		r.W.Drain.LastCheckpoint = at
		if err := l.index.Checkpointed(id); err != nil && !errors.Is(err, preempt.ErrUnknownWorkload) {
			panic("ledger: the index refused a checkpoint: " + err.Error())
		}
	}
	return nil
}

// OnNode lists, in ID order, the holders with a pod on node n.
func (l *Ledger) OnNode(n topology.NodeID) []string {
	return slices.Clone(l.byNode[n])
}

// HoldersOn is OnNode without the copy: the caller must not change the
// list, and it is valid until the books next change.
func (l *Ledger) HoldersOn(n topology.NodeID) []string { return l.byNode[n] }

// OnNodes lists, in ID order and once each, the holders with a pod on a
// node of [lo, hi): O(the nodes and what runs there).
func (l *Ledger) OnNodes(lo, hi topology.NodeID) []string {
	var out []string
	for n := lo; n < hi; n++ {
		out = append(out, l.byNode[n]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listNodes files r under the nodes its pods run on (sign 1) or takes it
// off them (sign -1): every pod counts, one holding only a share, a slice
// or named resources included.
func (l *Ledger) listNodes(r *Record, sign int) {
	l.version++
	l.placed++
	l.countCrossing(r, sign)
	for j := range r.Assign.Pods {
		n := r.Assign.Pods[j].Node
		if j > 0 && r.Assign.Pods[j-1].Node == n {
			continue
		}
		list := l.byNode[n]
		i, found := slices.BinarySearch(list, r.W.ID)
		switch {
		case sign > 0 && !found:
			l.byNode[n] = slices.Insert(list, i, r.W.ID)
		case sign < 0 && found:
			l.byNode[n] = slices.Delete(list, i, i+1)
		}
	}
}

// indexHidden reports whether the index shows r as running although it
// drains: a promised victim (see Promised).
func (r *Record) indexHidden() bool { return r.Drain != nil && r.Drain.Promised() }

func (l *Ledger) running(r *Record) preempt.Running {
	shrinkable, keep := r.Shrinkable()
	return preempt.Running{
		W: r.W, Queue: r.Queue, Flavor: r.Flavor, Nodes: r.Nodes, Started: r.Started, Submitted: r.Submitted,
		Draining:    r.State == gang.Draining && !r.indexHidden(),
		Preemptible: r.Policy.Preemptible,
		MinRuntime:  r.Policy.MinRuntime,
		Grace:       r.Policy.Grace,
		Shrinkable:  shrinkable,
		Keep:        keep,
	}
}
