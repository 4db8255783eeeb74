package quota

import (
	"fmt"
	"strconv"
	"strings"
)

// AddUsage records that queue q now holds gpus more GPUs of flavor f. It is
// bookkeeping, not admission: it does not ask Fits, so a host can also adopt
// workloads it finds running. The change bubbles up in O(depth): a node
// passes to its parent only the part of its usage above its local quota.
//
// It refuses, leaving the tree unchanged, a node that is not a queue, a
// flavor the queue does not serve, a negative amount, or usage that would
// exceed MaxAmount in total. It does not allocate unless it refuses.
func (t *Tree) AddUsage(q NodeID, f FlavorID, gpus int64) error {
	if err := t.checkUsage(q, f, gpus); err != nil {
		return err
	}
	if gpus*milli > maxBase-t.inUseSum[f] {
		return t.usageError(q, f, gpus, ErrAmountTooLarge, "usage would exceed %d GPUs of the flavor", MaxAmount)
	}
	t.shift(q, f, gpus*milli)
	return nil
}

// RemoveUsage records that queue q released gpus GPUs of flavor f. Removing
// then adding back the same amount restores the tree exactly (Changes
// counts both), so a what-if search can undo its steps without a copy. It refuses, leaving the tree
// unchanged, the cases AddUsage refuses and removing more than q holds.
func (t *Tree) RemoveUsage(q NodeID, f FlavorID, gpus int64) error {
	if err := t.checkUsage(q, f, gpus); err != nil {
		return err
	}
	if u := t.usage[t.at(q, f)]; gpus*milli > u {
		return t.usageError(q, f, gpus, ErrUsageUnderflow, "queue %q holds %d %s GPUs, cannot release %d", t.s.names[q], ceilGPUs(u), t.s.flavors[f], gpus)
	}
	t.shift(q, f, -gpus*milli)
	return nil
}

func (t *Tree) checkUsage(q NodeID, f FlavorID, gpus int64) error {
	switch {
	case q < 0 || int(q) >= len(t.s.names):
		return &UsageError{Queue: q, Flavor: f, GPUs: gpus, Err: ErrUnknownNode}
	case f < 0 || int(f) >= len(t.s.flavors):
		return &UsageError{Queue: q, Flavor: f, GPUs: gpus, Err: ErrUnknownFlavor}
	case t.s.kind[q] != Queue:
		return t.usageError(q, f, gpus, ErrNotQueue, "%q is a cohort", t.s.names[q])
	case !t.served[t.at(q, f)]:
		return t.usageError(q, f, gpus, ErrFlavorNotServed, "queue %q has no quota entry for %s", t.s.names[q], t.s.flavors[f])
	case gpus < 0:
		return t.usageError(q, f, gpus, ErrNegativeAmount, "%d GPUs", gpus)
	case gpus > MaxAmount:
		return t.usageError(q, f, gpus, ErrAmountTooLarge, "%d GPUs", gpus)
	}
	return nil
}

func (t *Tree) usageError(q NodeID, f FlavorID, gpus int64, err error, format string, args ...any) error {
	return &UsageError{Queue: q, Flavor: f, GPUs: gpus, Err: err, Detail: fmt.Sprintf(format, args...)}
}

// shift changes queue q's usage by d and carries the consequences to the
// root (inUse always walks to the root; Kueue's usage stops where it no
// longer changes).
func (t *Tree) shift(q NodeID, f FlavorID, d int64) {
	t.changes++
	for a := q; a != None; a = t.s.parent[a] {
		t.inUse[t.at(a, f)] += d
	}
	t.inUseSum[f] += d
	t.reflow(q, f, 0, d)
}

// reflow adds dSub to n's subtree quota and dUse to its usage and carries
// the change in what n lends to and stores in its parent up the tree, so
// that every ancestor keeps Kueue's invariants: subtree = nominal + sum of
// children's (subtree - local), usage = sum of children's
// max(0, usage - local). A step that changes neither ends the walk.
func (t *Tree) reflow(n NodeID, f FlavorID, dSub, dUse int64) {
	for n != None && (dSub != 0 || dUse != 0) {
		x := t.at(n, f)
		l0 := t.local(x)
		lent0, stored0 := t.subtree[x]-l0, max(0, t.usage[x]-l0)
		t.subtree[x] += dSub
		t.usage[x] += dUse
		l1 := t.local(x)
		dSub = t.subtree[x] - l1 - lent0
		dUse = max(0, t.usage[x]-l1) - stored0
		n = t.s.parent[n]
	}
}

// SetQuota replaces node n's quota for q.Flavor, checked by the same rules
// as New. A node not listing the flavor starts to (a queue then serves it).
// Usage is kept: a queue left above its new quota becomes a borrower whose
// excess is reclaimable. A refused edit leaves the tree unchanged.
func (t *Tree) SetQuota(n NodeID, q FlavorQuota) error {
	if n < 0 || int(n) >= len(t.s.names) {
		return &SpecError{Field: "node", Detail: fmt.Sprintf("node ID %d", n), Err: ErrUnknownNode}
	}
	name := t.s.names[n]
	if err := checkQuota(name, q, t.s.flavorID); err != nil {
		return err
	}
	if t.s.parent[n] == None && (q.BorrowingLimit.set || q.LendingLimit.set) {
		return &SpecError{Node: name, Flavor: q.Flavor, Field: "borrowingLimit/lendingLimit",
			Detail: "a root has no parent to borrow from or lend to", Err: ErrLimitOnRoot}
	}
	if err := checkResourceQuotas(name, q, t.s); err != nil {
		return err
	}
	f := t.s.flavorID[q.Flavor]
	type edit struct {
		c               FlavorID
		nominal, bl, ll int64
	}
	edits := []edit{{f, q.Nominal * milli, scaleLimit(q.BorrowingLimit.encode(), milli), scaleLimit(q.LendingLimit.encode(), milli)}}
	for _, rq := range q.Resources {
		edits = append(edits, edit{t.s.col(int(f), t.s.resourceID[rq.Name]), rq.Nominal, rq.BorrowingLimit.encode(), rq.LendingLimit.encode()})
	}
	for _, e := range edits {
		if sum := t.nominalSum[e.c] + e.nominal - t.nominal[t.at(n, e.c)]; sum > maxBase {
			return &SpecError{Node: name, Flavor: q.Flavor, Field: "nominal",
				Detail: fmt.Sprintf("nominal quotas would add up to %d, above %d", t.s.out(e.c, sum), MaxAmount), Err: ErrAmountTooLarge}
		}
	}
	if !t.served[t.at(n, f)] {
		if t.groups.declared[n] != nil {
			return &SpecError{Node: name, Flavor: q.Flavor, Field: "resourceGroups",
				Detail: "a node with resource groups takes a new flavor by SetNode, which puts it in a group", Err: ErrResourceGroup}
		}
		t.order[n] = append(t.order[n][:len(t.order[n]):len(t.order[n])], f) // never write into a shared array
		t.refreshImplicit(n)
	}
	for _, e := range edits {
		t.editCol(n, e.c, e.nominal, e.bl, e.ll)
	}
	return nil
}

// editCol replaces node n's quota of column c and carries the change up.
func (t *Tree) editCol(n NodeID, f FlavorID, nominal, bl, ll int64) {
	t.changes++
	x := t.at(n, f)
	dNominal := nominal - t.nominal[x]
	t.served[x] = true
	// The lending limit changes the local quota, hence what n lends and
	// stores upward: apply it as a zero-delta step from n first.
	l0 := t.local(x)
	lent0, stored0 := t.subtree[x]-l0, max(0, t.usage[x]-l0)
	t.borrow[x], t.lend[x] = bl, ll
	t.nominal[x] += dNominal
	t.nominalSum[f] += dNominal
	t.subtree[x] += dNominal
	l1 := t.local(x)
	if p := t.s.parent[n]; p != None {
		t.reflow(p, f, t.subtree[x]-l1-lent0, max(0, t.usage[x]-l1)-stored0)
	}
}

// rawAvailable is Kueue's available(): at a root, subtree quota minus usage;
// elsewhere the unused local quota plus what the parent can give, capped by
// the borrowing limit. It can be negative after an edit shrank quota below
// usage. It also reports which node's limit bound the result: the node whose
// borrowing limit was the smaller term, else the root whose quota ran out.
func (t *Tree) rawAvailable(n NodeID, f FlavorID) (avail int64, bite NodeID, kind ReasonKind, limit int64) {
	x := t.at(n, f)
	p := t.s.parent[n]
	if p == None {
		return t.subtree[x] - t.usage[x], n, ReasonQuota, t.subtree[x]
	}
	fromParent, bite, kind, limit := t.rawAvailable(p, f)
	l := t.local(x)
	if bl := t.borrow[x]; bl != noLimit {
		stored, used := t.subtree[x]-l, max(0, t.usage[x]-l)
		if capped := stored - used + bl; capped < fromParent {
			fromParent, bite, kind, limit = capped, n, ReasonBorrowingLimit, bl
		}
	}
	return max(0, l-t.usage[x]) + fromParent, bite, kind, limit
}

// Available returns how many more GPUs of flavor f node n could take now,
// borrowing as far as its limits and the tree allow. Never negative.
func (t *Tree) Available(n NodeID, f FlavorID) int64 {
	a, _, _, _ := t.rawAvailable(n, f)
	return max(0, a) / milli
}

// Potential is Kueue's potentialAvailable: what n could take if the whole
// tree were idle. A request above it can never fit, preemption or not.
func (t *Tree) Potential(n NodeID, f FlavorID) int64 { return t.potential(n, f) / milli }

func (t *Tree) potential(n NodeID, f FlavorID) int64 {
	x := t.at(n, f)
	p := t.s.parent[n]
	if p == None {
		return t.subtree[x]
	}
	v := t.local(x) + t.potential(p, f)
	if bl := t.borrow[x]; bl != noLimit {
		v = min(v, t.subtree[x]+bl)
	}
	return v
}

// Mode is how a request fits.
type Mode uint8

const (
	// NoFit: the request exceeds what the queue may take now.
	NoFit Mode = iota
	// FitsNominal: the queue stays within its own quota.
	FitsNominal
	// FitsBorrowing: the queue goes above its quota, borrowing capacity
	// lent by the subtree of Verdict.From.
	FitsBorrowing
)

// String returns the mode's name, as specs and messages spell it.
func (m Mode) String() string {
	switch m {
	case NoFit:
		return "NoFit"
	case FitsNominal:
		return "FitsNominal"
	case FitsBorrowing:
		return "FitsBorrowing"
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// ReasonKind says why a request does not fit.
type ReasonKind uint8

const (
	ReasonNone ReasonKind = iota // fits: nothing is short
	// ReasonBadRequest: not a queue, unknown flavor or negative amount.
	ReasonBadRequest
	// ReasonNotServed: the queue has no quota entry for the flavor.
	ReasonNotServed
	// ReasonBorrowingLimit: Reason.Node's borrowing limit caps what it may
	// take from its parent.
	ReasonBorrowingLimit
	// ReasonQuota: the tree rooted at Reason.Node has no more quota to give.
	ReasonQuota
)

// String returns the reason kind's name, as specs and messages spell it.
func (k ReasonKind) String() string {
	switch k {
	case ReasonNone:
		return "None"
	case ReasonBadRequest:
		return "BadRequest"
	case ReasonNotServed:
		return "NotServed"
	case ReasonBorrowingLimit:
		return "BorrowingLimit"
	case ReasonQuota:
		return "Quota"
	}
	return fmt.Sprintf("ReasonKind(%d)", k)
}

// Reason explains a NoFit verdict as data.
type Reason struct {
	Kind ReasonKind // which rule refused it
	// Node is the node whose limit bites: the nearest one to the queue
	// whose borrowing limit is below what its parent could give, else the
	// root whose subtree quota is exhausted.
	Node NodeID
	// Limit is that node's borrowing limit, or the root's subtree quota.
	Limit int64
	// ShortBy is how many GPUs are missing: GPUs - Verdict.Available.
	ShortBy int64
	// Potential is the most the queue could ever take with the tree idle;
	// a request above it cannot be helped by preemption.
	Potential int64

	nodeName string
}

// Verdict answers Fits. It holds names as well as IDs so that String needs
// no Tree; building it does not allocate.
type Verdict struct {
	Mode   Mode     // how it fits, or NoFit
	Queue  NodeID   // the queue asked
	Flavor FlavorID // the flavor asked
	// Resource is what the verdict is about: GPU for Fits; for
	// FitsRequest the resource that does not fit (GPUs and Available are
	// then in its unit, thousandths of a GPU for GPU).
	Resource  ResourceID
	GPUs      int64
	Available int64 // Available(Queue, Flavor) before the request
	// From is, for FitsBorrowing, the lowest ancestor whose subtree quota
	// holds the queue's usage plus the request (Kueue's "hierarchical
	// advantage" node); Queue for FitsNominal; None for NoFit.
	From NodeID
	// Height is From's height as Kueue counts it for choosing a flavor
	// (FindHeightOfLowestSubtreeThatFits): the edges from From down to the
	// furthest leaf of its subtree, any queue's included, not only this
	// queue's distance to it; 0 within nominal. Lower is better.
	Height int
	Reason Reason // set when Mode is NoFit

	queueName, flavorName, fromName string
	// request: from FitsRequest, whose amounts are in the resource's unit
	// (thousandths for GPUs); resourceName names a named resource.
	request      bool
	resourceName string
}

// Fits reports whether queue q could take gpus more GPUs of flavor f now,
// how (within nominal or by borrowing, and from how high up), and if not,
// why. It costs O(depth) and does not allocate.
func (t *Tree) Fits(q NodeID, f FlavorID, gpus int64) Verdict {
	if f < 0 || int(f) >= len(t.s.flavors) || gpus < 0 || gpus > MaxAmount {
		return Verdict{Queue: q, Flavor: f, GPUs: gpus, From: None,
			Reason: Reason{Kind: ReasonBadRequest, Node: None, ShortBy: gpus}}
	}
	v := t.fitsCol(q, f, gpus*milli)
	v.GPUs = gpus
	v.Available /= milli
	if v.Mode == NoFit {
		v.Reason.Limit /= milli
		v.Reason.Potential /= milli
		v.Reason.ShortBy = gpus - v.Available
	}
	return v
}

// fitsCol is Fits for one column in its own unit (thousandths of GPU for
// GPU columns).
func (t *Tree) fitsCol(q NodeID, f FlavorID, gpus int64) Verdict {
	v := Verdict{Queue: q, Flavor: f, GPUs: gpus, From: None}
	if q < 0 || int(q) >= len(t.s.names) || f < 0 || int(f) >= t.s.cols || t.s.kind[q] != Queue || gpus < 0 {
		v.Reason = Reason{Kind: ReasonBadRequest, Node: None, ShortBy: gpus}
		return v
	}
	v.queueName, v.flavorName = t.s.names[q], t.s.flavors[int(f)%len(t.s.flavors)]
	x := t.at(q, f)
	if !t.served[x] {
		v.Reason = Reason{Kind: ReasonNotServed, Node: q, ShortBy: gpus, nodeName: v.queueName}
		return v
	}
	raw, bite, kind, limit := t.rawAvailable(q, f)
	v.Available = max(0, raw)
	if gpus > v.Available {
		v.Reason = Reason{Kind: kind, Node: bite, Limit: limit, ShortBy: gpus - v.Available,
			Potential: t.potential(q, f), nodeName: t.s.names[bite]}
		return v
	}
	// A root has nobody to borrow from: what fits there fits in its own
	// quota (Kueue gives it height 0 too).
	if t.usage[x]+gpus <= t.subtree[x] || t.s.parent[q] == None {
		v.Mode, v.From, v.fromName = FitsNominal, q, v.queueName
		return v
	}
	// Kueue's FindHeightOfLowestSubtreeThatFits: walk up with what the
	// unused local quota of each node does not cover.
	v.Mode = FitsBorrowing
	rest := gpus - max(0, t.local(x)-t.usage[x])
	for a := t.s.parent[q]; a != None; a = t.s.parent[a] {
		v.From, v.Height = a, int(t.s.height[a])
		y := t.at(a, f)
		if t.usage[y]+rest <= t.subtree[y] {
			break
		}
		rest -= max(0, t.local(y)-t.usage[y])
	}
	v.fromName = t.s.names[v.From]
	return v
}

// Fits reports whether the request fits, in either mode.
func (v Verdict) Fits() bool { return v.Mode != NoFit }

// Borrowing reports whether admitting the request makes the queue borrow.
func (v Verdict) Borrowing() bool { return v.Mode == FitsBorrowing }

// String renders the verdict as one sentence for people.
func (v Verdict) String() string {
	var b strings.Builder
	switch v.Mode {
	case FitsNominal:
		fmt.Fprintf(&b, "queue %q: %s fit within its nominal quota", v.queueName, v.what(v.GPUs))
	case FitsBorrowing:
		fmt.Fprintf(&b, "queue %q: %s fit by borrowing from cohort %q, %d level(s) up", v.queueName, v.what(v.GPUs), v.fromName, v.Height)
	default:
		r := v.Reason
		switch r.Kind {
		case ReasonBadRequest:
			fmt.Fprintf(&b, "bad request: node %d, flavor %d, %d GPUs", v.Queue, v.Flavor, v.GPUs)
		case ReasonNotServed:
			fmt.Fprintf(&b, "queue %q does not serve %s GPUs", v.queueName, v.flavorName)
		case ReasonBorrowingLimit:
			fmt.Fprintf(&b, "queue %q: %s do not fit, %s available: the borrowing limit %s of %q bites, short by %s",
				v.queueName, v.what(v.GPUs), v.num(v.Available), v.num(r.Limit), r.nodeName, v.num(r.ShortBy))
		default:
			fmt.Fprintf(&b, "queue %q: %s do not fit, %s available: the quota of %q (%s) is used up, short by %s",
				v.queueName, v.what(v.GPUs), v.num(v.Available), r.nodeName, v.num(r.Limit), v.num(r.ShortBy))
		}
		if r.Kind >= ReasonBorrowingLimit && v.GPUs > r.Potential {
			fmt.Fprintf(&b, " (never fits: at most %s even with the tree idle)", v.num(r.Potential))
		}
	}
	return b.String()
}

// what names an amount of the verdict's resource: "8 H100 GPUs", "0.5
// H100 GPUs" for a request in thousandths, "4000 cpu of H100".
func (v Verdict) what(x int64) string {
	if v.resourceName != "" {
		return fmt.Sprintf("%d %s of %s", x, v.resourceName, v.flavorName)
	}
	return fmt.Sprintf("%s %s GPUs", v.num(x), v.flavorName)
}

// num renders an amount in the unit people read: whole GPUs, or GPUs
// with up to three decimals for a request's thousandths.
func (v Verdict) num(x int64) string {
	if v.request && v.resourceName == "" {
		return strconv.FormatFloat(float64(x)/float64(milli), 'f', -1, 64)
	}
	return strconv.FormatInt(x, 10)
}
