package quota

import (
	"fmt"
	"slices"
)

// NoFlavor is the FlavorID of "no flavor": a pod set that asks nothing of
// a resource group gets none there, and neither does one that fits in none
// of its flavors.
const NoFlavor FlavorID = -1

// PodSetRequest is what one pod set asks of quota, over all its pods.
// Its slices belong to the caller; Assign keeps none of them.
type PodSetRequest struct {
	// MilliGPUs is its GPUs in thousandths; 0 asks for none.
	MilliGPUs int64
	// Resources lists its named resources, each once. An entry of 0
	// still asks for a flavor of the resource's group, as a request of 0
	// does in Kueue.
	Resources []Amount
	// GPUFlavors, when not nil, lists the flavors of the GPU group the
	// pod set may use: the GPU models it accepts, as a Kueue pod's node
	// selector admits only the flavors whose nodeLabels it matches. The
	// flavors of other groups carry no node labels fleet's workloads can
	// select, so every pod set may use them. nil: any flavor.
	GPUFlavors []FlavorID
}

// AssignMode says how an assignment, or one flavor of it, fits: Kueue's
// FlavorAssignmentMode, ordered from worst to best.
type AssignMode uint8

const (
	// AssignNoFit: not even preemption makes room.
	AssignNoFit AssignMode = iota
	// AssignPreempt: quota would make room if others were preempted (a
	// victim search decides whether any can be).
	AssignPreempt
	// AssignFit: it fits in unused quota now, perhaps by borrowing.
	AssignFit
)

// String returns the mode's name, as Kueue spells it.
func (m AssignMode) String() string {
	switch m {
	case AssignNoFit:
		return "NoFit"
	case AssignPreempt:
		return "Preempt"
	case AssignFit:
		return "Fit"
	}
	return fmt.Sprintf("AssignMode(%d)", m)
}

// GroupAssignment is the flavor one pod set got in one resource group.
type GroupAssignment struct {
	// Flavor is the flavor chosen; NoFlavor when the pod set asks nothing
	// of the group, or when no flavor of it fits.
	Flavor FlavorID
	// Mode is the worst mode over the group's resources in that flavor.
	Mode AssignMode
	// Height is Kueue's borrowing level of the choice: 0 within the
	// queue's own quota, else the height of the lowest cohort whose
	// subtree holds it (see Verdict.Height).
	Height int
}

// Charge is an amount of one resource charged to one flavor, in the
// resource's unit (thousandths of a GPU for GPU).
type Charge struct {
	Flavor   FlavorID   // the flavor charged
	Resource ResourceID // the resource
	Value    int64      // how much
}

// Assignment is Assign's answer: a flavor per pod set and resource group,
// how it fits, and what it charges.
type Assignment struct {
	// Mode is the worst mode over every pod set and group: Fit only when
	// every one fits now. NoFit when a pod set got no flavor in a group
	// it asks of; the pod sets after it are not assigned.
	Mode AssignMode
	// Height is the largest borrowing level of the choices; Borrowing is
	// Height > 0, when Mode is Fit.
	Height int
	// PodSets has, per pod set, a GroupAssignment per resource group of
	// the queue (Tree.NumGroups), in the groups' order.
	PodSets [][]GroupAssignment
	// Charges is what the assigned pod sets ask, summed per flavor and
	// resource, ordered by flavor then resource: every amount lands on
	// the flavor its pod set got in that resource's group. Admitting the
	// workload is AddCharges with it.
	Charges []Charge
	// Failed is the pod set that got no flavor in group FailedGroup, or
	// -1 when every pod set got one; Why is then the verdict on the
	// group's first flavor the pod set may use (Reason says which limit
	// bites), or a NotServed verdict when it may use none. FailedGroup is
	// -1 when the pod set asks for a resource no group of the queue
	// covers.
	Failed, FailedGroup int
	Why                 Verdict
}

// Borrowing reports whether the assignment borrows.
func (a *Assignment) Borrowing() bool { return a.Height > 0 }

// charged returns what a already charges of (f, r).
func (a *Assignment) charged(f FlavorID, r ResourceID) int64 {
	for _, c := range a.Charges {
		if c.Flavor == f && c.Resource == r {
			return c.Value
		}
	}
	return 0
}

func (a *Assignment) charge(f FlavorID, r ResourceID, v int64) {
	for i := range a.Charges {
		if a.Charges[i].Flavor == f && a.Charges[i].Resource == r {
			a.Charges[i].Value += v
			return
		}
	}
	a.Charges = append(a.Charges, Charge{Flavor: f, Resource: r, Value: v})
}

// AssignOptions are the scheduler-wide settings the assigner reads.
type AssignOptions struct {
	// FairSharing says whether fair sharing is on: then a queue whose
	// reclaimWithinCohort is not Never may preempt while borrowing, as
	// in Kueue.
	FairSharing bool
}

// grade is a flavor's mode with its borrowing level, ordered as Kueue's
// assigner orders them by default (borrowing over preemption): a better
// mode first, then less borrowing.
type grade struct {
	mode AssignMode
	// reclaim, for AssignPreempt: the queue stays within its nominal
	// quota, so the room can come from other queues borrowing it, which
	// Kueue ranks above preempting within the queue.
	reclaim bool
	height  int
}

// better reports whether a is preferred to b.
func (a grade) better(b grade) bool {
	switch {
	case a.mode == AssignNoFit:
		return false
	case b.mode == AssignNoFit:
		return true
	case a.mode != b.mode:
		return a.mode > b.mode
	case a.reclaim != b.reclaim:
		return a.reclaim
	}
	return a.height < b.height
}

// tryNext reports whether the search goes on past a flavor of grade g
// (Kueue's shouldTryNextFlavor).
func (f Fungibility) tryNext(g grade) bool {
	switch {
	case g.mode == AssignNoFit:
		return true
	case g.mode == AssignPreempt && f.WhenCanPreempt == PreemptTryNextFlavor:
		return true
	}
	return g.height > 0 && f.WhenCanBorrow == TryNextFlavor
}

// Assign chooses, as Kueue's flavor assigner does, a flavor for every pod
// set in every resource group of queue q: pod sets in order, and for each
// group the first of the group's flavors, in order, that fits all the
// pod set's resources of the group, on top of what the earlier pod sets
// of the workload were assigned. The queue's flavor fungibility decides
// what "fits" stops the search: a flavor that fits in unused quota
// without borrowing always does; one that fits by borrowing does unless
// WhenCanBorrow is TryNextFlavor; one that fits only by preempting does
// when WhenCanPreempt is Preempt. When the search goes past every flavor,
// the best one seen is taken: fit before preempt, a preemption that
// reclaims the queue's own quota from borrowers before one within the
// queue, then the least borrowing, then the earliest.
//
// A resource fits a flavor when the amount (with the earlier pod sets')
// is at most the queue's Available; it fits by preempting when it is at
// most its Potential and preemption could free it: the amount is within
// the queue's nominal quota, or the lowest subtree that holds it is
// below the root (reclaiming in the cohort), or the queue may preempt
// while borrowing (BorrowWithinCohort, or reclaimWithinCohort with fair
// sharing); otherwise it does not fit. Whether victims exist is left to
// package preempt. Assign does not change the tree; it costs
// O(pod sets x flavors x resources x depth).
func (t *Tree) Assign(q NodeID, sets []PodSetRequest, opts AssignOptions) Assignment {
	a := Assignment{Mode: AssignFit, Failed: -1, FailedGroup: -1}
	if q < 0 || int(q) >= len(t.s.names) || t.s.kind[q] != Queue {
		a.Mode, a.Failed, a.FailedGroup = AssignNoFit, 0, 0
		a.Why = Verdict{Queue: q, From: None, Reason: Reason{Kind: ReasonBadRequest, Node: None}}
		return a
	}
	groups := t.groupsOf(q)
	fung := t.fungibility[q]
	rules := t.rules[q]
	whileBorrowing := rules.BorrowWithinCohort.Policy != BorrowNever ||
		opts.FairSharing && rules.ReclaimWithinCohort != ReclaimNever
	a.PodSets = make([][]GroupAssignment, 0, len(sets))
	var asks []Amount
	for i, ps := range sets {
		row := make([]GroupAssignment, len(groups))
		// As in Kueue, a resource the queue's groups do not cover is not
		// admitted, unless the pod set asks 0 of it.
		for _, r := range ps.Resources {
			if r.Value != 0 && !slices.ContainsFunc(groups, func(g group) bool { return g.covers(r.Resource) }) {
				a.PodSets = append(a.PodSets, row)
				a.Mode, a.Failed, a.FailedGroup = AssignNoFit, i, -1
				a.Why = Verdict{Queue: q, Resource: r.Resource, GPUs: r.Value, From: None, queueName: t.s.names[q], request: true,
					Reason: Reason{Kind: ReasonNotServed, Node: q, ShortBy: r.Value, nodeName: t.s.names[q]}}
				return a
			}
		}
		if ps.MilliGPUs != 0 && !slices.ContainsFunc(groups, func(g group) bool { return g.gpus }) {
			a.PodSets = append(a.PodSets, row)
			a.Mode, a.Failed, a.FailedGroup = AssignNoFit, i, -1
			a.Why = Verdict{Queue: q, Resource: GPU, GPUs: ps.MilliGPUs, From: None, queueName: t.s.names[q], request: true,
				Reason: Reason{Kind: ReasonNotServed, Node: q, ShortBy: ps.MilliGPUs, nodeName: t.s.names[q]}}
			return a
		}
		for gi, g := range groups {
			row[gi] = GroupAssignment{Flavor: NoFlavor, Mode: AssignFit}
			asks = asks[:0]
			if ps.MilliGPUs != 0 && g.gpus {
				asks = append(asks, Amount{Resource: GPU, Value: ps.MilliGPUs})
			}
			for _, r := range ps.Resources {
				if r.Resource != GPU && g.covers(r.Resource) {
					asks = append(asks, Amount{Resource: r.Resource, Value: r.Value})
				}
			}
			if len(asks) == 0 {
				continue
			}
			best, bestGrade := NoFlavor, grade{mode: AssignNoFit}
			var why Verdict
			asked := false
			for _, f := range g.flavors {
				if g.gpus && ps.GPUFlavors != nil && !slices.Contains(ps.GPUFlavors, f) {
					continue
				}
				gr := grade{mode: AssignFit}
				for _, ask := range asks {
					c := t.s.col(int(f), ask.Resource)
					m, h, rc := t.fitColumn(q, c, a.charged(f, ask.Resource)+ask.Value, whileBorrowing, rules.ReclaimWithinCohort != ReclaimNever)
					if x := (grade{m, rc, h}); gr.better(x) {
						gr = x
					}
					if m == AssignNoFit {
						if !asked {
							why = t.fitsCol(q, c, a.charged(f, ask.Resource)+ask.Value)
							why.Resource, why.request = ask.Resource, true
							if ask.Resource != GPU {
								why.resourceName = t.s.resources[ask.Resource-1]
							}
						}
						break
					}
				}
				asked = true
				if !fung.tryNext(gr) {
					best, bestGrade = f, gr
					break
				}
				if gr.better(bestGrade) {
					best, bestGrade = f, gr
				}
			}
			if best == NoFlavor {
				if !asked {
					why = Verdict{Queue: q, From: None, Reason: Reason{Kind: ReasonNotServed, Node: q, nodeName: t.s.names[q]}, queueName: t.s.names[q]}
				}
				row[gi].Mode = AssignNoFit
				a.PodSets = append(a.PodSets, row)
				a.Mode, a.Failed, a.FailedGroup, a.Why = AssignNoFit, i, gi, why
				return a
			}
			row[gi] = GroupAssignment{Flavor: best, Mode: bestGrade.mode, Height: bestGrade.height}
			a.Mode = min(a.Mode, bestGrade.mode)
			a.Height = max(a.Height, bestGrade.height)
			for _, ask := range asks {
				a.charge(best, ask.Resource, ask.Value)
			}
		}
		a.PodSets = append(a.PodSets, row)
	}
	slices.SortFunc(a.Charges, func(x, y Charge) int {
		if x.Flavor != y.Flavor {
			return int(x.Flavor) - int(y.Flavor)
		}
		return int(x.Resource) - int(y.Resource)
	})
	return a
}

// fitColumn is Kueue's fitsResourceQuota for val of column c (the
// workload's amount with what its earlier pod sets were assigned): the
// mode, the borrowing level, and for AssignPreempt whether the room is
// the queue's own quota lent to others (reclaimable when the queue's
// rules let it reclaim), which Kueue's preemption oracle reports as a
// reclaim.
func (t *Tree) fitColumn(q NodeID, c FlavorID, val int64, whileBorrowing, mayReclaim bool) (AssignMode, int, bool) {
	x := t.at(q, c)
	if !t.served[x] || val < 0 || val > t.potential(q, c) {
		return AssignNoFit, 0, false
	}
	h, inHierarchy := t.lowestSubtree(q, c, val)
	if raw, _, _, _ := t.rawAvailable(q, c); val <= max(0, raw) {
		return AssignFit, h, false
	}
	if t.nominal[x] >= val || inHierarchy || whileBorrowing {
		return AssignPreempt, h, mayReclaim && t.usage[x]+val <= t.nominal[x]
	}
	return AssignNoFit, h, false
}

// lowestSubtree is Kueue's FindHeightOfLowestSubtreeThatFits: the height
// of the lowest subtree (the queue, 0, or a cohort above it) whose quota
// holds the queue's usage plus val, and whether that subtree is below the
// root, where preemption may reclaim lent quota. When no subtree holds
// it, the root's height and false.
func (t *Tree) lowestSubtree(q NodeID, c FlavorID, val int64) (int, bool) {
	x := t.at(q, c)
	p := t.s.parent[q]
	if p == None || t.usage[x]+val <= t.subtree[x] {
		return 0, p != None
	}
	rest := val - max(0, t.local(x)-t.usage[x])
	a := p
	for ; ; a = t.s.parent[a] {
		y := t.at(a, c)
		if t.usage[y]+rest <= t.subtree[y] {
			return int(t.s.height[a]), t.s.parent[a] != None
		}
		rest -= max(0, t.local(y)-t.usage[y])
		if t.s.parent[a] == None {
			return int(t.s.height[a]), false
		}
	}
}

// FitsCharges is FitsRequest for every flavor charges land on, the
// charges ordered by flavor as an Assignment's are: it fits when each flavor's share does; it
// borrows when any does (From and Height those of the highest
// borrowing); otherwise the verdict is that of the first flavor, in
// order, that does not fit. No charge fits within nominal. It costs
// O(charges x depth) and allocates only for more than one resource per
// flavor.
func (t *Tree) FitsCharges(q NodeID, charges []Charge) Verdict {
	if q < 0 || int(q) >= len(t.s.names) || t.s.kind[q] != Queue {
		return Verdict{Queue: q, Flavor: NoFlavor, From: None, Reason: Reason{Kind: ReasonBadRequest, Node: None}}
	}
	out := Verdict{Mode: FitsNominal, Queue: q, Flavor: NoFlavor, From: q, request: true,
		queueName: t.s.names[q], fromName: t.s.names[q]}
	var req Request
	for i := 0; i < len(charges); {
		f := charges[i].Flavor
		req.MilliGPUs, req.Resources = 0, req.Resources[:0]
		for ; i < len(charges) && charges[i].Flavor == f; i++ {
			if c := charges[i]; c.Resource == GPU {
				req.MilliGPUs += c.Value
			} else {
				req.Resources = append(req.Resources, Amount{Resource: c.Resource, Value: c.Value})
			}
		}
		v := t.FitsRequest(q, f, req)
		if !v.Fits() {
			return v
		}
		if v.Mode == FitsBorrowing && (out.Mode == FitsNominal || v.Height > out.Height) {
			out = v
		}
	}
	return out
}

// AddCharges records that queue q now holds charges (an Assignment's
// Charges), all or nothing: it refuses, leaving the tree unchanged, a
// charge AddRequest would refuse. It does not allocate unless it refuses.
func (t *Tree) AddCharges(q NodeID, charges []Charge) error { return t.charges(q, charges, 1) }

// RemoveCharges undoes AddCharges, all or nothing.
func (t *Tree) RemoveCharges(q NodeID, charges []Charge) error { return t.charges(q, charges, -1) }

func (t *Tree) charges(q NodeID, charges []Charge, sign int64) error {
	for i, c := range charges {
		if err := t.checkUsage(q, c.Flavor, 0); err != nil {
			return err
		}
		if c.Resource < 0 || int(c.Resource) > len(t.s.resources) {
			return &UsageError{Queue: q, Flavor: c.Flavor, GPUs: c.Value, Err: ErrUnknownResource, Detail: fmt.Sprintf("resource #%d", c.Resource)}
		}
		col := t.s.col(int(c.Flavor), c.Resource)
		x := t.at(q, col)
		sum := c.Value
		for _, d := range charges[i+1:] {
			if d.Flavor == c.Flavor && d.Resource == c.Resource {
				sum += d.Value
			}
		}
		name := t.s.resourceName(c.Resource)
		switch {
		case !t.served[x]:
			return t.usageError(q, c.Flavor, c.Value, ErrFlavorNotServed, "queue %q has no quota of %s for %s", t.s.names[q], name, t.s.flavors[c.Flavor])
		case c.Value < 0 || c.Value > maxBase:
			return t.usageError(q, c.Flavor, c.Value, ErrNegativeAmount, "%d %s", c.Value, name)
		case sign > 0 && sum > maxBase-t.inUseSum[col]:
			return t.usageError(q, c.Flavor, c.Value, ErrAmountTooLarge, "usage of %s would exceed its bound", name)
		case sign < 0 && sum > t.usage[x]:
			return t.usageError(q, c.Flavor, sum, ErrUsageUnderflow, "queue %q holds %d of %s in %s, cannot release %d", t.s.names[q], t.usage[x], name, t.s.flavors[c.Flavor], sum)
		}
	}
	for _, c := range charges {
		t.shift(q, t.s.col(int(c.Flavor), c.Resource), sign*c.Value)
	}
	return nil
}
