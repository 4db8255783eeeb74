package ledger

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Plan is an accepted preemption: victims to drain and the targets of the
// beneficiaries they make room for (one, or a run of replicas sharing
// the victims).
type Plan struct {
	Victims []Victim
	Targets []Target
}

// Victim is one workload of a plan to drain.
type Victim struct {
	ID       string
	Deadline time.Time // used only if it is not draining already
	Reason   gang.DrainReason
}

// Target is where a beneficiary will run.
type Target struct {
	Beneficiary string
	Assign      placement.Assignment
}

// Nominated is what accepting a plan changed.
type Nominated struct {
	// Drained lists the victims newly asked to drain, in plan order; a
	// victim already draining keeps its deadline and is not listed.
	Drained []*Record
}

// Nominate accepts plan at now: every beneficiary's quota is charged and
// its target GPUs nominated for it at once. A target node's GPUs come
// first from the plan's victims there (in plan order), then from GPUs of
// victims of earlier plans that no nomination claims (in ID order), and
// the rest from free GPUs, which are allocated on the fleet now so that
// nobody else takes them. Each beneficiary waits only on the victims whose
// GPUs it claims, so a replica starts as soon as its own GPUs are free.
// The plan is refused whole, changing nothing, when a beneficiary is not
// pending or already nominated, a victim holds no GPUs or is already
// promised, a name repeats, or the target GPUs cannot be covered.
func (l *Ledger) Nominate(now time.Time, plan Plan) (Nominated, error) {
	l.version++
	if err := l.checkPlan(plan); err != nil {
		return Nominated{}, err
	}
	charged := 0
	for _, t := range plan.Targets {
		r := l.recs[t.Beneficiary]
		size, _ := SizeOf(r.W, t.Assign.Pods)
		l.setSize(r, size)
		if err := l.tree.AddUsage(r.Queue, r.Flavor, int64(r.GPUs())); err != nil {
			l.setSize(r, nil)
			for _, u := range plan.Targets[:charged] {
				x := l.recs[u.Beneficiary]
				if uerr := l.tree.RemoveUsage(x.Queue, x.Flavor, int64(x.GPUs())); uerr != nil {
					panic("ledger: undoing a nomination's quota: " + uerr.Error())
				}
				l.setSize(x, nil)
			}
			return Nominated{}, fmt.Errorf("ledger: nominate %q: %w", t.Beneficiary, err)
		}
		charged++
	}
	var out Nominated
	victims := make([]*Record, len(plan.Victims))
	wasDraining := make([]bool, len(plan.Victims))
	for j, v := range plan.Victims {
		r := l.recs[v.ID]
		victims[j] = r
		wasDraining[j] = r.State == gang.Draining
		if r.State == gang.Admitted {
			l.move(r, gang.Draining)
			r.Drain = &Drain{Since: now, Deadline: v.Deadline, Reason: v.Reason}
			l.draining[v.ID] = r
			// A promised victim is gone for every search (Promised), so
			// the index need not learn it drains until it is no longer
			// promised: a spike's hundreds of victims cost no index work.
			out.Drained = append(out.Drained, r)
		}
	}
	// Each target claims the GPUs of the victims on its own nodes, in
	// the plan's order: listed per node once, a spike's targets read only
	// their own nodes' victims, not every victim of the plan.
	onNode := map[topology.NodeID][]*Record{}
	for _, r := range victims {
		for i, x := range r.Nodes {
			if i == 0 || r.Nodes[i-1].Node != x.Node {
				onNode[x.Node] = append(onNode[x.Node], r)
			}
		}
	}
	for _, t := range plan.Targets {
		l.nominate(now, t, onNode)
	}
	// A victim none of the targets claims frees quota only: it serves
	// every beneficiary of the plan.
	for j, r := range victims {
		if len(r.Drain.Live) == 0 {
			for _, t := range plan.Targets {
				r.Drain.serve(t.Beneficiary)
			}
		}
		l.listPromised(r)
		if wasDraining[j] {
			l.indexUpdate(r) // promised now: hidden from the search
		}
	}
	return out, nil
}

// nominate claims t's GPUs and opens its nomination.
func (l *Ledger) nominate(now time.Time, t Target, victims map[topology.NodeID][]*Record) {
	b := t.Beneficiary
	l.recs[b].servedBy = true
	l.nomSeq++
	n := &Nomination{Beneficiary: b, Target: t.Assign.Clone(), ReadyBy: now, Seq: l.nomSeq}
	wait := func(r *Record, node topology.NodeID, g int) {
		r.Drain.claims = append(r.Drain.claims, claim{b, node, g})
		r.Drain.serve(b)
		if !slices.Contains(n.WaitOn, r.W.ID) {
			n.WaitOn = append(n.WaitOn, r.W.ID)
			if r.Drain.Deadline.After(n.ReadyBy) {
				n.ReadyBy = r.Drain.Deadline
			}
		}
	}
	for _, x := range t.Assign.NodeGPUs() {
		need := x.GPUs
		for _, r := range victims[x.Node] {
			if need == 0 {
				break
			}
			if g := min(need, r.unclaimedOn(x.Node)); g > 0 {
				wait(r, x.Node, g)
				need -= g
			}
		}
		for _, id := range l.onNode[x.Node] {
			if need == 0 {
				break
			}
			r := l.recs[id]
			if g := min(need, r.unclaimedOn(x.Node)); g > 0 {
				wait(r, x.Node, g)
				need -= g
			}
		}
		if need > 0 {
			if err := l.allocate(x.Node, need); err != nil {
				panic(fmt.Sprintf("ledger: reserving GPUs checked free for %q: %v", b, err))
			}
			n.reserved = append(n.reserved, placement.NodeGPUs{Node: x.Node, GPUs: need})
			l.reserved[x.Node] += need
		}
	}
	slices.Sort(n.WaitOn)
	l.noms[b] = n
}

func (d *Drain) serve(b string) {
	if !slices.Contains(d.Beneficiaries, b) {
		d.Beneficiaries = append(d.Beneficiaries, b)
	}
	if !slices.Contains(d.Live, b) {
		d.Live = append(d.Live, b)
	}
}

// checkPlan validates a plan against the books without changing them.
func (l *Ledger) checkPlan(plan Plan) error {
	if len(plan.Targets) == 0 {
		return fmt.Errorf("ledger: a plan without beneficiary")
	}
	names := make(map[string]bool, len(plan.Victims)+len(plan.Targets))
	for _, t := range plan.Targets {
		r, ok := l.recs[t.Beneficiary]
		switch {
		case !ok || r.State != gang.Pending:
			return fmt.Errorf("ledger: nominate %q: not a pending workload", t.Beneficiary)
		case names[t.Beneficiary]:
			return fmt.Errorf("ledger: nominate %q: named twice", t.Beneficiary)
		case l.noms[t.Beneficiary] != nil:
			return fmt.Errorf("ledger: nominate %q: already nominated", t.Beneficiary)
		case r.HasClaims():
			return fmt.Errorf("ledger: nominate %q: GPU shares, MIG slices and named resources are not nominated", t.Beneficiary)
		}
		if _, ok := SizeOf(r.W, t.Assign.Pods); !ok {
			return fmt.Errorf("ledger: nominate %q: target has %d pods, not a size its pod sets allow", t.Beneficiary, len(t.Assign.Pods))
		}
		names[t.Beneficiary] = true
	}
	// GPUs each target node can get: free, plus what victims there do not
	// already promise.
	avail := map[topology.NodeID]int{}
	for _, v := range plan.Victims {
		r, ok := l.recs[v.ID]
		switch {
		case !ok || !r.State.HoldsGPUs():
			return fmt.Errorf("ledger: drain %q: it holds no GPUs", v.ID)
		case names[v.ID]:
			return fmt.Errorf("ledger: drain %q: named twice", v.ID)
		case r.Drain != nil && r.Drain.Promised():
			return fmt.Errorf("ledger: drain %q: already promised to %v", v.ID, r.Drain.Live)
		case r.State == gang.Admitted && !v.Reason.Valid():
			return fmt.Errorf("ledger: drain %q: unknown reason %d", v.ID, v.Reason)
		}
		names[v.ID] = true
		for _, x := range r.Nodes {
			avail[x.Node] += x.GPUs
		}
	}
	need := map[topology.NodeID]int{}
	for _, t := range plan.Targets {
		for _, x := range t.Assign.NodeGPUs() {
			need[x.Node] += x.GPUs
		}
	}
	for n, g := range need {
		if int(n) < 0 || int(n) >= l.fleet.NumNodes() {
			return fmt.Errorf("ledger: target node %d unknown", n)
		}
		have := avail[n]
		for _, id := range l.onNode[n] {
			have += l.recs[id].unclaimedOn(n)
		}
		if !l.fleet.Health(n).Gone() {
			have += l.fleet.Free(n)
		}
		if g > have {
			return fmt.Errorf("ledger: target needs %d GPUs of %s, %d can be had", g, l.fleet.NodeName(n), have)
		}
	}
	return nil
}

// unclaimedOn is r's GPUs on node n that no nomination claims.
func (r *Record) unclaimedOn(n topology.NodeID) int {
	g := 0
	for _, x := range r.Nodes {
		if x.Node == n {
			g += x.GPUs
		}
	}
	if r.Drain != nil {
		for _, c := range r.Drain.claims {
			if c.node == n {
				g -= c.gpus
			}
		}
	}
	return g
}

// listPromised lists a promised victim under its nodes (once each), so later
// plans can claim what it frees; an unpromised one is removed.
func (l *Ledger) listPromised(r *Record) {
	l.version++
	l.unlistPromised(r)
	if r.Drain == nil || !r.Drain.Promised() {
		return
	}
	l.promised.add(r)
	for j, x := range r.Nodes {
		if slices.ContainsFunc(r.Nodes[:j], func(y placement.NodeGPUs) bool { return y.Node == x.Node }) {
			continue
		}
		list := l.onNode[x.Node]
		i, _ := slices.BinarySearch(list, r.W.ID)
		l.onNode[x.Node] = slices.Insert(list, i, r.W.ID)
	}
}

func (l *Ledger) unlistPromised(r *Record) {
	l.version++
	l.promised.remove(r.W.ID)
	for _, x := range r.Nodes {
		list := l.onNode[x.Node]
		i, found := slices.BinarySearch(list, r.W.ID)
		if !found {
			continue
		}
		if list = slices.Delete(list, i, i+1); len(list) == 0 {
			delete(l.onNode, x.Node)
		} else {
			l.onNode[x.Node] = list
		}
	}
}

// victimGone hands a leaving victim's claims to their nominations: the
// claimed GPUs stay allocated, now reserved for them.
func (l *Ledger) victimGone(r *Record) {
	id := r.W.ID
	for _, c := range r.Drain.claims {
		n := l.noms[c.beneficiary]
		n.reserved = addGPUs(n.reserved, c.node, c.gpus)
		l.reserved[c.node] += c.gpus
		n.WaitOn = slices.DeleteFunc(n.WaitOn, func(v string) bool { return v == id })
	}
	l.unlistPromised(r)
	delete(l.draining, id)
}

// addGPUs adds g GPUs of node n to a list kept in node order.
func addGPUs(list []placement.NodeGPUs, n topology.NodeID, g int) []placement.NodeGPUs {
	i, found := slices.BinarySearchFunc(list, n, func(x placement.NodeGPUs, n topology.NodeID) int { return int(x.Node) - int(n) })
	if found {
		list[i].GPUs += g
		return list
	}
	return slices.Insert(list, i, placement.NodeGPUs{Node: n, GPUs: g})
}

// Ready lists, in acceptance order, the beneficiaries whose victims are
// all gone: their whole target is allocated on their behalf.
func (l *Ledger) Ready() []string {
	var out []*Nomination
	for _, n := range l.noms {
		if len(n.WaitOn) == 0 {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *Nomination) int { return compareUint(a.Seq, b.Seq) })
	ids := make([]string, len(out))
	for i, n := range out {
		ids[i] = n.Beneficiary
	}
	return ids
}

// Start runs a ready beneficiary on its target, whose GPUs and quota are
// already its own.
func (l *Ledger) Start(b string, now time.Time) (*Record, error) {
	l.version++
	n, ok := l.noms[b]
	if !ok || len(n.WaitOn) > 0 {
		return nil, fmt.Errorf("ledger: start %q: not nominated or not ready", b)
	}
	for _, x := range n.reserved {
		l.dec(x.Node, x.GPUs)
	}
	delete(l.noms, b)
	r := l.recs[b]
	r.charged = wholeRequest(r.GPUs()) // what Nominate charged
	l.hold(r, n.Target, n.Target.NodeGPUs(), now)
	return r, nil
}

// Dissolve cancels beneficiary b's nomination: its reserved GPUs are freed
// and its quota returned. Its victims go on draining; their GPUs are freed
// when they exit, and a victim no beneficiary counts on any more becomes
// an ordinary draining candidate. It returns the GPUs freed.
func (l *Ledger) Dissolve(b string) int {
	l.version++
	n, ok := l.noms[b]
	if !ok {
		return 0
	}
	freed := 0
	for _, x := range n.reserved {
		if err := l.release(x.Node, x.GPUs); err != nil {
			panic(fmt.Sprintf("ledger: releasing nominated GPUs: %v", err))
		}
		l.dec(x.Node, x.GPUs)
		freed += x.GPUs
	}
	r := l.recs[b]
	if err := l.tree.RemoveUsage(r.Queue, r.Flavor, int64(r.GPUs())); err != nil {
		panic(fmt.Sprintf("ledger: quota of a dissolved nomination: %v", err))
	}
	l.setSize(r, nil)
	delete(l.noms, b)
	for _, v := range l.draining {
		d := v.Drain
		before := len(d.Live)
		d.claims = slices.DeleteFunc(d.claims, func(c claim) bool { return c.beneficiary == b })
		d.Live = slices.DeleteFunc(d.Live, func(x string) bool { return x == b })
		if len(d.Live) != before && !d.Promised() {
			l.unlistPromised(v)
			l.indexUpdate(v) // no longer hidden: the index learns it drains
			l.unpromised++
		}
	}
	return freed
}

// Unserve forgets that a started beneficiary counted on its victims: once
// it runs it no longer needs the ones that free quota only. Victims nobody
// counts on become ordinary draining candidates.
func (l *Ledger) Unserve(b string) {
	l.version++
	for _, v := range l.draining {
		d := v.Drain
		if slices.Contains(d.Live, b) {
			d.Live = slices.DeleteFunc(d.Live, func(x string) bool { return x == b })
			if !d.Promised() {
				l.unlistPromised(v)
				l.indexUpdate(v) // no longer hidden: the index learns it drains
				l.unpromised++
			}
		}
	}
}

func (l *Ledger) dec(n topology.NodeID, g int) {
	l.version++
	l.reserved[n] -= g
	switch {
	case l.reserved[n] == 0:
		delete(l.reserved, n)
	case l.reserved[n] < 0:
		panic("ledger: reserved GPUs below zero")
	}
}

// Overdue is a victim past its deadline.
type Overdue struct {
	Record *Record
	By     time.Duration // how far past its deadline
	First  bool          // the first time it is reported
}

// Due lists the draining victims whose deadline has passed at now, by
// deadline then ID, every time it is called until they exit: the host must
// kill them, and is asked again while they linger.
func (l *Ledger) Due(now time.Time) []Overdue {
	var out []Overdue
	for _, r := range l.draining {
		if !r.Drain.Deadline.After(now) {
			o := Overdue{Record: r, By: now.Sub(r.Drain.Deadline), First: r.Drain.KillAsked.IsZero()}
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b Overdue) int {
		if c := a.Record.Drain.Deadline.Compare(b.Record.Drain.Deadline); c != 0 {
			return c
		}
		return compareString(a.Record.W.ID, b.Record.W.ID)
	})
	for _, o := range out {
		if o.First {
			o.Record.Drain.KillAsked = now
		}
	}
	return out
}

// Tracked reports whether a victim's GPUs and quota are promised to a
// beneficiary: a search must count it as gone, never as a candidate.
func (l *Ledger) Tracked(id string) bool {
	r, ok := l.draining[id]
	return ok && r.Drain.Promised()
}

// Unclaimed is how many of gpus GPUs that victim id holds on node n no
// nomination claims.
func (l *Ledger) Unclaimed(id string, n topology.NodeID, gpus int) int {
	r, ok := l.draining[id]
	if !ok {
		return gpus
	}
	g := gpus
	for _, c := range r.Drain.claims {
		if c.node == n {
			g -= c.gpus
		}
	}
	return max(0, g)
}

// Reserved is the GPUs of node n allocated on behalf of nominations.
func (l *Ledger) Reserved(n topology.NodeID) int { return l.reserved[n] }

// Claimed is the GPUs of node n that draining victims still hold and have
// promised to nominations.
func (l *Ledger) Claimed(n topology.NodeID) int {
	g := 0
	for _, id := range l.onNode[n] {
		for _, c := range l.recs[id].Drain.claims {
			if c.node == n {
				g += c.gpus
			}
		}
	}
	return g
}

// DrainFor starts a drain the host asked for (maintenance, an operator):
// the workload keeps its GPUs until it exits or is killed at deadline; no
// beneficiary waits for it, so what it frees goes back to the pool. A
// workload already draining keeps its drain.
func (l *Ledger) DrainFor(id string, now, deadline time.Time, reason gang.DrainReason) (*Record, error) {
	l.version++
	r, ok := l.recs[id]
	switch {
	case !ok || !r.State.HoldsGPUs():
		return nil, fmt.Errorf("ledger: drain %q: it holds no GPUs", id)
	case !reason.Valid():
		return nil, fmt.Errorf("ledger: drain %q: unknown reason %d", id, reason)
	case deadline.Before(now):
		return nil, fmt.Errorf("ledger: drain %q: deadline before now", id)
	case r.State == gang.Draining:
		return r, nil
	}
	l.move(r, gang.Draining)
	r.Drain = &Drain{Since: now, Deadline: deadline, Reason: reason}
	l.draining[id] = r
	l.indexUpdate(r)
	return r, nil
}

// AddPromised adds to set the victims Promised lists, and reports
// whether there were any.
func (l *Ledger) AddPromised(set map[string]bool) bool {
	found := false
	for id, r := range l.draining {
		if r.Drain.Promised() {
			set[id], found = true, true
		}
	}
	return found
}

// Promised lists the victims whose GPUs or quota are promised, in ID
// order: a search must count them as gone (they are not candidates, and
// the index may still show them running).
func (l *Ledger) Promised() []string {
	var out []string
	for id, r := range l.draining {
		if r.Drain.Promised() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// PromisedGone runs fn with the quota charges of the victims promised to
// nominations taken off the tree, and puts them back after. Their
// beneficiaries are charged from the plan on, so while they drain the
// tree counts the same room twice; without them it shows what the cohort
// holds once the drains in progress end, the view every victim search
// takes. fn must not change the books.
//
// The tree's Changes count is the same after as before: the charges come
// back as they were.
func (l *Ledger) PromisedGone(fn func()) {
	l.tree.Undoing(func() {
		l.chargePromised(false)
		defer l.chargePromised(true)
		fn()
	})
}

// promisedSum is the GPUs the promised victims of one queue and flavor
// are charged, when they are charged nothing else.
type promisedSum struct {
	queue  quota.NodeID
	flavor quota.FlavorID
	milli  int64
}

// chargePromised takes the promised victims' charges off the tree, or
// puts them back: one change per queue and flavor for GPU-only charges
// (usage adds up), one per victim for the others.
func (l *Ledger) chargePromised(take bool) {
	l.sums = l.sums[:0]
	for _, r := range l.promised {
		if len(r.charged.Resources) > 0 {
			if err := r.chargeTree(l.tree, take); err != nil {
				panic(fmt.Sprintf("ledger: a promised victim's own charge refused: %v", err))
			}
			continue
		}
		i := slices.IndexFunc(l.sums, func(s promisedSum) bool { return s.queue == r.Queue && s.flavor == r.Flavor })
		if i < 0 {
			i = len(l.sums)
			l.sums = append(l.sums, promisedSum{queue: r.Queue, flavor: r.Flavor})
		}
		l.sums[i].milli += r.charged.MilliGPUs
	}
	for _, s := range l.sums {
		l.charge(take, s.queue, s.flavor, quota.Request{MilliGPUs: s.milli})
	}
}

func (l *Ledger) charge(take bool, q quota.NodeID, fl quota.FlavorID, req quota.Request) {
	var err error
	if take {
		err = l.tree.AddRequest(q, fl, req)
	} else {
		err = l.tree.RemoveRequest(q, fl, req)
	}
	if err != nil {
		panic(fmt.Sprintf("ledger: a promised victim's own charge refused: %v", err))
	}
}

// NextDeadline is the earliest drain deadline after now, and false when
// no victim's deadline lies ahead: the first instant Due lists one more.
func (l *Ledger) NextDeadline(now time.Time) (time.Time, bool) {
	var next time.Time
	for _, r := range l.draining {
		if t := r.Drain.Deadline; t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, !next.IsZero()
}
