package fleet

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// reservation holds a domain for the highest-priority blocked gang, so a
// stream of small jobs cannot starve it.
type reservation struct {
	id       string
	priority int32
	level    topology.Level
	group    topology.GroupID
	domain   topology.DomainID
	// carried marks the last cycle's reservation, in force from the start
	// of this one until its gang is visited: it steers higher-priority
	// work visited first around the domain when it fits elsewhere, and
	// bars nobody.
	carried bool
	// start is when the domain's running work is expected to end; zero
	// when open-ended work there makes it unknown.
	start time.Time
}

// Schedule runs one cycle at now and returns what the host must do. It
// never fails: a now earlier than a previous call's is treated as that
// call's now, and so is one past what RFC 3339 holds (year 9999), which
// every other call refuses, so that a snapshot can always be persisted.
//
// The cycle, in order:
//
//  1. Victims past their drain deadline are listed in Kill, every cycle
//     until they exit, with how overdue they are.
//  2. Beneficiaries whose own victims are gone are admitted onto the GPUs
//     nominated for them: a replica starts as soon as the victims on its
//     nodes have exited, whatever the other replicas of its run wait for.
//  3. Pending workloads are visited in admission order (higher priority
//     first; under fair sharing the queue with the lower dominant share;
//     a host's Policy.Order replaces both; then submission, then ID): each
//     that fits in quota and on the fleet is admitted at once, so many
//     are admitted per cycle, not one per queue. StrictFIFO queues stop at
//     their first workload that does not fit; BestEffortFIFO queues let
//     later, smaller work pass.
//  4. A workload that does not fit asks for a preemption plan; an accepted
//     plan drains its victims and nominates their GPUs for it at once. A
//     run of identical replicas (an inference spike) shares one victim
//     search; a class of workloads whose search found nothing is not
//     searched again for larger members in the same cycle. Victims of one
//     cycle's plans are disjoint. Work with GPU shares, MIG slices or
//     named resources, and whole-GPU work no plan was found for while
//     such holders run, reclaim them instead: their victims drain for it
//     without a nomination, and it is admitted once they have exited
//     (see PendingView.Reclaiming).
//  5. The highest-priority gang that can neither start nor preempt gets a
//     reservation: the domain of its required level with the fewest GPUs
//     held by open-ended work it cannot evict, then the earliest expected
//     end of the rest, then the most free nodes, is held for it, and
//     lower-priority work may use it only if the gang can evict it or it
//     is expected to end before the planned start (backfill). The hold
//     is carried into the next cycle while the gang waits: from the
//     cycle's start higher-priority work goes around it when the rest of
//     the fleet has room, and the gang keeps its domain unless another
//     holds less work it cannot evict (a hold that moved with every
//     change of expected ends would never empty).
func (s *Scheduler) Schedule(now time.Time) Decisions {
	// Under -tags fleetverify, a cycle NextChange vouches for is checked.
	vouched, prior := false, s.quiet
	if verifyNextChange && inRFC3339(now) {
		next := s.NextChange(now)
		vouched = next.IsZero() || next.After(now)
	}
	if inRFC3339(now) {
		s.advance(now)
	}
	now = s.now
	s.cycles++
	emitted, before := s.emitted, s.stamp()
	if s.adoptedDrains {
		s.books.DropUnknownLive()
		s.adoptedDrains = false
	}
	s.applySchedule(now)
	var d Decisions
	s.kills(now, &d)
	s.loadHolds(now)
	s.drainBooked(now, &d)
	s.reclaimIdle(now, &d)
	s.hotSwaps(now, &d)
	s.admitReady(now, &d)

	pending := s.pending()
	s.order(pending)
	s.reserve = s.carryReservation(now)
	carried := s.reserve
	blocked := map[quota.NodeID]string{} // StrictFIFO queue -> its blocked head
	taken := map[string]bool{}
	failed := &s.failed
	failed.reset()
	clear(s.refused)
	clear(s.unreclaimable)
	s.avoidSets = s.avoidSets[:0]
	// The run of identical replicas the current workload belongs to is
	// found once (runEnd), and a run that found no joint plan asks for
	// its members one by one: a spike costs one scan and one search.
	runEnd, joint := 0, false
	for i, e := range pending {
		e.wait = waitVerdict{cycle: s.cycles, at: now}
		if head, ok := blocked[e.queue]; ok {
			e.wait.reason, e.wait.behind = WaitHeadOfQueue, head
			continue
		}
		if _, nominated := s.books.Nomination(e.w.ID); nominated {
			continue // nominated with replicas of an earlier workload
		}
		switch s.tryAdmit(now, e, &d) {
		case admitted:
			s.dropReservationOf(e)
			continue
		case reserved:
			// It fits, but only in the held domain: it waits, and does not
			// preempt its way around the reservation either.
			e.wait.reason, e.wait.behind = WaitReservation, s.reserve.id
		default:
			if e.w.Booking != "" {
				// A booking's work runs in its blocks only: it waits there
				// (its blocks drain for it), it preempts nothing elsewhere.
				continue
			}
			if i >= runEnd {
				runEnd = i + len(replicas(pending[i:]))
				joint = runEnd-i > 1
			}
			run := pending[i:runEnd]
			if !joint {
				run = run[:1]
			}
			ok, jointFailed := s.tryPreempt(now, run, taken, failed, &d)
			if jointFailed {
				joint = false
			}
			if ok || s.defragFor(now, e, &d) {
				s.dropReservationOf(e)
				continue
			}
		}
		if (s.reserve == nil || s.reserve.carried) && !s.cfg.Policy.NoReservation {
			s.reserveFor(e)
		}
		if s.tree.Strategy(e.queue) == quota.StrictFIFO {
			blocked[e.queue] = e.w.ID
		}
	}
	// A workload whose victims a later plan took searches again, once
	// (a search may in turn take another's: each gets one more try).
	for i := 0; i < len(s.displaced) && i < len(pending); i++ {
		e := s.displaced[i]
		if _, nominated := s.books.Nomination(e.w.ID); nominated || e.rec.State != gang.Pending {
			continue
		}
		s.tryPreempt(now, []*entry{e}, taken, failed, &d)
	}
	clear(s.displaced)
	s.displaced = s.displaced[:0]
	if s.books.NumShrunk() > 0 {
		top, waiting := waitingPriority(pending, s.books)
		s.grow(now, top, waiting, &d)
	}
	clear(pending) // the buffer must not keep ended workloads alive
	s.lastReserve = nil
	if s.reserve != nil && !s.reserve.carried {
		s.lastReserve = s.reserve
	}
	s.overflow(now, &d)
	d.Broken = s.cal.Offers(now)
	s.noteQuiet(now, &d, int(s.emitted-emitted), before, carried)
	if vouched {
		checkNextChange(s, prior, &d)
	}
	s.lastEvents = len(s.events)
	d.Events, s.events = s.events, nil
	d.EventsDropped, s.dropped = s.dropped, 0
	return d
}

// kills asks the host to kill every victim past its deadline, every cycle
// until it exits, saying how overdue it is. The event is recorded once.
func (s *Scheduler) kills(now time.Time, d *Decisions) {
	if s.books.NumDraining() == 0 {
		return
	}
	for _, o := range s.books.Due(now) {
		r := o.Record
		k := Kill{ID: r.W.ID, Deadline: r.Drain.Deadline, Overdue: o.By, Reason: r.Drain.Reason}
		if sp := s.work[r.W.ID].split; sp != nil {
			k.Of, k.Pod = sp.of, sp.pod
		}
		d.Kill = append(d.Kill, k)
		if o.First {
			ev := s.event(EventKilled, now, s.work[r.W.ID])
			ev.Deadline, ev.Reason, ev.Beneficiaries = r.Drain.Deadline, r.Drain.Reason.String(), slices.Clone(r.Drain.Beneficiaries)
			s.emit(ev)
		}
	}
}

// hotSwaps finds replacement nodes for the lost pods of gangs that
// survive the loss of a node: the healthy node of the gang's group with
// the fewest free GPUs that holds the pod, inside the domain of its
// required level that holds its other pods (anywhere without one), so the
// gang keeps its topology request. A gang whose pods wait longer than
// Policy.HotSwapWait fails whole. When no free node has room, lower-
// priority work drains to make some (swapPreempt).
func (s *Scheduler) hotSwaps(now time.Time, d *Decisions) {
	wait := s.cfg.Policy.HotSwapWait
	if wait == 0 {
		wait = DefaultHotSwapWait
	}
	for _, r := range s.books.Degraded() {
		if r.State == gang.Draining {
			// It is being stopped (and may be killed in this very cycle):
			// a replacement would start a pod of work that ends, and its
			// lost pods hold nothing the drain must give back.
			continue
		}
		e := s.work[r.W.ID]
		replaced := len(d.Replace)
		for _, lp := range slices.Clone(r.Lost) {
			n, ok := s.replacementNode(now, e, lp.Pod)
			if !ok {
				continue
			}
			p, err := s.books.Replace(r.W.ID, lp.Pod, n)
			if err != nil {
				panic("fleet: a replacement checked free was refused: " + err.Error())
			}
			d.Replace = append(d.Replace, Replacement{ID: r.W.ID, PodSet: e.w.PodSets[p.PodSet].Name, Index: p.Index,
				OldNode: s.fleet.NodeName(lp.Pod.Node), NewNode: s.fleet.NodeName(n), GPUs: p.GPUs, Wait: now.Sub(lp.Since)})
		}
		if len(r.Lost) > 0 && !now.Before(r.Lost[0].Since.Add(wait)) {
			// Pods still lost past the wait: the gang fails whole, and the
			// pods replaced in this cycle are never started (finish gives
			// their GPUs back with the rest).
			d.Replace = d.Replace[:replaced]
		}
		for _, x := range d.Replace[replaced:] {
			ev := s.event(EventReplaced, now, e)
			ev.Node, ev.NewNode, ev.Wait, ev.GPUs = x.OldNode, x.NewNode, x.Wait, x.GPUs
			s.emit(ev)
		}
		if len(r.Lost) > 0 && now.Before(r.Lost[0].Since.Add(wait)) {
			s.swapPreempt(now, e, d)
		}
		if len(r.Lost) > 0 && !now.Before(r.Lost[0].Since.Add(wait)) {
			d.Failed = append(d.Failed, r.W.ID)
			ev := s.event(EventExited, now, e)
			ev.Exit, ev.Runtime, ev.Node = gang.ExitNodeLost, now.Sub(r.Started), s.fleet.NodeName(r.Lost[0].Pod.Node)
			s.finish(now, e, gang.ExitNodeLost)
			s.emit(ev)
		}
	}
}

// replacementNode is where a lost pod of e goes: best fit by free GPUs
// among healthy nodes of its group inside the domain its topology request
// keeps it in, outside the blocks held against it.
func (s *Scheduler) replacementNode(now time.Time, e *entry, pod placement.Pod) (topology.NodeID, bool) {
	f := s.fleet
	lo, hi, g := s.swapRange(e, pod)
	held := s.holdsAgainst(now, e)
	best, found := topology.NodeID(0), false
	f.AscendNodesByFree(g, pod.GPUs, func(n topology.NodeID, free int) bool {
		if n >= lo && n < hi && f.Health(n) == topology.Healthy && !inDomains(f, n, held) {
			best, found = n, true
			return false
		}
		return true
	})
	return best, found
}

// admitReady starts every beneficiary whose own victims are gone: the
// GPUs of its target are already its own. They start in queue order
// (queueLess), which a host that rebuilds the scheduler by adoption
// restores, rather than in the order their nominations were accepted.
func (s *Scheduler) admitReady(now time.Time, d *Decisions) {
	if s.books.NumNominations() == 0 {
		return
	}
	ready := s.books.Ready()
	slices.SortFunc(ready, func(a, b string) int { return compareQueue(s.work[a], s.work[b]) })
	for _, b := range ready {
		// A target planned before a booked block began to close may lie
		// in it now: starting there would break the booking's promise.
		if n, ok := s.books.Nomination(b); ok && s.touches(n.Target, s.holdsAgainst(now, s.work[b])) {
			s.dissolve(now, b, "target in a booked block that is closing")
			continue
		}
		if _, err := s.books.Start(b, now); err != nil {
			panic(fmt.Sprintf("fleet: starting a ready nomination: %v", err))
		}
		e := s.work[b]
		s.dequeue(e)
		s.admitted(now, e, d)
	}
}

// pending lists the pending workloads without a nomination, in the
// default admission order (see order), in a buffer reused from cycle to
// cycle. Nominated ones record that they wait for their victims.
func (s *Scheduler) pending() []*entry {
	out := s.pendingBuf[:0]
	s.ordered.Ascend(func(e *entry) bool {
		if _, nominated := s.books.Nomination(e.w.ID); nominated {
			e.wait = waitVerdict{cycle: s.cycles, at: s.now, reason: WaitVictims}
			return true
		}
		out = append(out, e)
		return true
	})
	s.pendingBuf = out
	return out
}

type admitResult uint8

const (
	notAdmitted admitResult = iota
	admitted
	reserved // it fits, but only in a domain held for another gang
)

// tryAdmit admits e now if its quota and a placement allow, and records
// the verdicts in e.wait otherwise.
func (s *Scheduler) tryAdmit(now time.Time, e *entry, d *Decisions) admitResult {
	if e.w.Booking != "" {
		return s.admitBooked(now, e, d)
	}
	if e.sharing() {
		return s.tryAdmitShared(now, e, d)
	}
	if m := &e.unfit; m.valid && m.fleet == s.fleet.Changes() && m.tree == s.tree.Changes() {
		// Nothing quota or placement read has changed since: the same
		// verdict.
		e.wait.quota, e.wait.reason, e.wait.noFit = m.quota, m.reason, m.noFit
		return notAdmitted
	}
	// An elastic workload that does not fit whole starts at the largest
	// size that fits.
	w := s.elasticSize(e)
	v := s.quotaFits(e.queue, e.flavor, int64(w.GPUs()))
	e.wait.quota = v
	if !v.Fits() {
		e.wait.reason = WaitQuota
		s.keepUnfit(e)
		return notAdmitted
	}
	a, err := s.placer.Place(s.fleet, w)
	if err != nil {
		e.wait.reason = WaitTopology
		var nf *placement.NoFit
		if _, xerr := s.explainer.Place(s.fleet, &e.w); errors.As(xerr, &nf) {
			c := *nf
			e.wait.noFit = &c
		}
		s.keepUnfit(e)
		return notAdmitted
	}
	// The placer reuses its buffers on the next call: keep this answer.
	a = a.Clone()
	if booked := s.holdsAgainst(now, e); s.touches(a, booked) || s.intoHold(now, e, a) {
		// Place it around the held domains when the rest of the fleet has
		// room. Failing that, booked blocks stay closed whatever its
		// priority; a domain reserved for a blocked gang admits work of
		// higher priority than the gang.
		held := booked
		if s.barredFromReservation(now, e) {
			held = s.withReserve(booked)
		}
		b, err := s.placer.PlaceAvoiding(s.fleet, w, held...)
		if err != nil && len(held) > len(booked) && e.priority > s.reserve.priority {
			b, err = s.placer.PlaceAvoiding(s.fleet, w, booked...)
		}
		switch {
		case err == nil:
			a = b.Clone()
		case s.touches(a, booked):
			e.wait.reason, e.wait.behind = WaitBooking, s.bookingAt(a, booked)
			return notAdmitted
		case s.reserve != nil && e.priority <= s.reserve.priority:
			return reserved
		}
	}
	if err := s.books.Admit(e.w.ID, a, now); err != nil {
		panic(fmt.Sprintf("fleet: admitting a fresh placement: %v", err))
	}
	s.dequeue(e)
	s.admitted(now, e, d)
	return admitted
}

// fitsQuota is quota's verdict by fits, which asks the live tree: when
// the tree refuses while victims drain for nominations, the verdict once
// they are gone. Their beneficiaries are charged from the plan on, so the
// tree counts their room twice until they exit; the victim searches
// count them as gone, and so must admission, or a queue under its
// guarantee is kept out with no victim left to drain for it. (Kueue
// charges a preemptor only once it is admitted: it sees the same room.)
// The room is only quota's: placement still needs free GPUs.
func (s *Scheduler) fitsQuota(fits func() quota.Verdict) quota.Verdict {
	v := fits()
	if !v.Fits() && s.books.NumDraining() > 0 {
		s.books.PromisedGone(func() { v = fits() })
	}
	return v
}

// unfit is tryAdmit's verdict on a workload that did not fit its quota
// or the fleet, kept with the counts of changes to the fleet and the
// quota tree it was found at: sizing, quota and placement read nothing
// else, so while neither changes the verdict stands.
type unfit struct {
	valid       bool
	fleet, tree uint64
	quota       quota.Verdict
	reason      WaitReason
	noFit       *placement.NoFit
}

// keepUnfit keeps e's verdict as tryAdmit just found it.
func (s *Scheduler) keepUnfit(e *entry) {
	e.unfit = unfit{valid: true, fleet: s.fleet.Changes(), tree: s.tree.Changes(),
		quota: e.wait.quota, reason: e.wait.reason, noFit: e.wait.noFit}
}

// admitted reports an admission to the host and the event stream.
func (s *Scheduler) admitted(now time.Time, e *entry, d *Decisions) {
	e.wait = waitVerdict{}
	r := e.rec
	a := r.Assign
	adm := Admission{ID: e.w.ID, Queue: e.w.Queue, Wait: now.Sub(e.submitted), Span: s.fleet.LevelName(a.Span), Borrowing: r.Borrowing,
		Flavors: s.flavorViews(r.Flavors())}
	for _, p := range a.Pods {
		adm.Pods = append(adm.Pods, s.podView(e, p))
	}
	d.Admit = append(d.Admit, adm)
	ev := s.event(EventAdmitted, now, e)
	ev.Wait, ev.Span, ev.Borrowing = adm.Wait, adm.Span, r.Borrowing
	ev.BorrowedGPUs = int(min(s.tree.Borrowed(e.queue, e.flavor), int64(e.gpus())))
	ev.GPUs = e.gpus()
	ev.CrossesSpines = s.fleet.Depth() >= 2 && a.Span == 0
	s.emit(ev)
}

// reserveFor holds a domain for a blocked multi-node gang with a required
// level, chosen among the domains of that level with enough healthy GPUs
// for it:
//
//  1. the fewest GPUs held by open-ended work the gang cannot evict (no
//     expected runtime, and not preemptible filler of lower priority):
//     the domain most likely to empty;
//  2. then the earliest expected end of the rest of its work: the planned
//     start, known only when nothing open-ended blocks it;
//  3. then the most free whole nodes, then the lowest ID.
//
// While held, lower-priority work that cannot be evicted enters the
// domain only if it is expected to end before the planned start.
func (s *Scheduler) reserveFor(e *entry) {
	l, g, ok := s.reservable(e)
	if !ok {
		return
	}
	lo, hi := s.fleet.DomainsAt(l)
	view := s.outlook(l, e.priority)
	best := topology.DomainID(-1)
	for d := lo; d < hi; d++ {
		if s.fleet.Stats(d, g).HealthyGPUs < e.gpus() {
			continue
		}
		if best < 0 {
			best = d
			continue
		}
		o, b := view[d-lo], view[best-lo]
		switch {
		case o.blocked != b.blocked:
			if o.blocked < b.blocked {
				best = d
			}
		case !o.end.Equal(b.end):
			if o.end.Before(b.end) {
				best = d
			}
		case s.fleet.FreeNodes(d, g) > s.fleet.FreeNodes(best, g):
			best = d
		}
	}
	if best < 0 {
		return
	}
	if c := s.reserve; c != nil && c.id == e.w.ID && c.level == l && c.group == g && c.domain != best &&
		s.fleet.Stats(c.domain, g).HealthyGPUs >= e.gpus() && view[c.domain-lo].blocked <= view[best-lo].blocked {
		// The domain held last cycle stays held unless another is held
		// by less work the gang cannot evict: a hold that moves with
		// every change of expected ends never empties.
		best = c.domain
	}
	r := &reservation{id: e.w.ID, priority: e.priority, level: l, group: g, domain: best}
	if view[best-lo].blocked == 0 {
		r.start = view[best-lo].end
	}
	s.reserve = r
}

// reservable reports whether e is a gang a domain can be held for (a
// multi-node gang with a required level, of whole GPUs), with the level
// and the fleet group it would be held at.
func (s *Scheduler) reservable(e *entry) (topology.Level, topology.GroupID, bool) {
	if e.w.Topology.Required == "" || e.w.Pods() < 2 || e.sharing() {
		return 0, 0, false
	}
	l, ok := s.fleet.Level(e.w.Topology.Required)
	if !ok || l == 0 {
		return 0, 0, false
	}
	g, ok := s.groupOf(e)
	return l, g, ok
}

// reservationAt is the reservation of the domain named, held for pending e at
// the end of the last cycle (PendingView.Reserved, Adoption.Reserved):
// carried into the next cycle as if the scheduler had not stopped.
func (s *Scheduler) reservationAt(e *entry, domain string) (*reservation, error) {
	l, g, ok := s.reservable(e)
	if !ok {
		return nil, errors.New("only a multi-node gang with a required level of whole GPUs holds a domain")
	}
	d, ok := s.fleet.Domain(l, domain)
	if !ok {
		return nil, fmt.Errorf("%q is no %s of the fleet", domain, e.w.Topology.Required)
	}
	if r := s.lastReserve; r != nil && r.id != e.w.ID {
		return nil, fmt.Errorf("a domain is held for %q already; one gang holds one at a time", r.id)
	}
	return &reservation{id: e.w.ID, priority: e.priority, level: l, group: g, domain: d}, nil
}

// carryReservation is the last cycle's reservation, carried, while its
// gang still waits unnominated and its domain still has the healthy GPUs
// for it; its planned start is found afresh.
func (s *Scheduler) carryReservation(now time.Time) *reservation {
	r := s.lastReserve
	s.lastReserve = nil
	if r == nil {
		return nil
	}
	e := s.queued[r.id]
	if e == nil || s.fleet.Stats(r.domain, r.group).HealthyGPUs < e.gpus() {
		return nil
	}
	if _, nominated := s.books.Nomination(r.id); nominated {
		return nil
	}
	c := &reservation{id: r.id, priority: r.priority, level: r.level, group: r.group, domain: r.domain, carried: true}
	lo, _ := s.fleet.DomainsAt(r.level)
	if o := s.outlook(r.level, r.priority)[r.domain-lo]; o.blocked == 0 {
		c.start = o.end
	}
	return c
}

// dropReservationOf ends the reservation held for e, which was just
// admitted or got a plan.
func (s *Scheduler) dropReservationOf(e *entry) {
	if s.reserve != nil && s.reserve.id == e.w.ID {
		s.reserve = nil
	}
}

// outlook is what work held in each domain of level l means for a
// reservation.
type outlook struct {
	blocked int       // GPUs of open-ended work the gang cannot evict
	end     time.Time // latest expected end of the other work
}

// outlooks keeps the outlook of every domain of a level for gangs of a
// priority, one view per level and priority asked for, found while the
// holders and their nodes were as Ledger.Placed says.
type outlooks struct {
	placed uint64
	views  []levelOutlook
}

type levelOutlook struct {
	level    topology.Level
	priority int32
	view     []outlook
}

// outlook returns the outlook of every domain of level l (from its first
// domain) for a gang of priority p, reading the holders only when they
// or their nodes changed since it was last found for l and p. The slice
// is kept for later calls: callers must not change it.
func (s *Scheduler) outlook(l topology.Level, p int32) []outlook {
	c := &s.outlooks
	if c.placed != s.books.Placed() {
		c.placed, c.views = s.books.Placed(), c.views[:0]
	}
	for _, v := range c.views {
		if v.level == l && v.priority == p {
			return v.view
		}
	}
	lo, hi := s.fleet.DomainsAt(l)
	view := make([]outlook, hi-lo)
	s.books.Holders(func(r *ledger.Record) bool {
		evictable := r.W.Drain.Preemptible && r.W.Priority < p
		for _, ng := range r.Nodes {
			o := &view[s.fleet.DomainOf(ng.Node, l)-lo]
			switch end := r.Started.Add(r.W.ExpectedRuntime); {
			case r.W.ExpectedRuntime > 0:
				if end.After(o.end) {
					o.end = end
				}
			case !evictable:
				o.blocked += ng.GPUs
			}
		}
		return true
	})
	c.views = append(c.views, levelOutlook{level: l, priority: p, view: view})
	return view
}

// groupOf is the first fleet group of e's flavor and pools.
func (s *Scheduler) groupOf(e *entry) (topology.GroupID, bool) {
	for g := range topology.GroupID(s.fleet.NumGroups()) {
		if s.fleet.GroupFlavor(g) == e.w.Flavor && (len(e.w.Pools) == 0 || slices.Contains(e.w.Pools, s.fleet.GroupPool(g))) {
			return g, true
		}
	}
	return 0, false
}

// blockedByReservation: work of the reserved gang's priority or lower may
// use the reserved domain only if it is preemptible filler of lower
// priority (the gang can evict it when its turn comes), or expected to end
// before the planned start (backfill: it cannot delay the gang).
func (s *Scheduler) blockedByReservation(now time.Time, e *entry, a placement.Assignment) bool {
	return s.intoHold(now, e, a) && e.priority <= s.reserve.priority
}

// intoHold reports whether a puts work the reserved gang could not get rid
// of in time into the held domain.
func (s *Scheduler) intoHold(now time.Time, e *entry, a placement.Assignment) bool {
	return s.barredFromReservation(now, e) && s.touches(a, []topology.DomainID{s.reserve.domain})
}

// barredFromReservation reports whether e is work the reserved gang could
// not get rid of in time: work it cannot evict (not preemptible filler of
// lower priority) that is not expected to end before the planned start.
func (s *Scheduler) barredFromReservation(now time.Time, e *entry) bool {
	r := s.reserve
	if r == nil || e.w.ID == r.id || e.w.Drain.Preemptible && e.priority < r.priority || r.carried && e.priority <= r.priority {
		return false
	}
	return r.start.IsZero() || e.w.ExpectedRuntime <= 0 || now.Add(e.w.ExpectedRuntime).After(r.start)
}

// bookingAt names the booking whose held domain a touches.
func (s *Scheduler) bookingAt(a placement.Assignment, booked []topology.DomainID) string {
	for _, h := range s.held.list {
		if slices.Contains(booked, h.Domain) && s.touches(a, []topology.DomainID{h.Domain}) {
			return h.Booking
		}
	}
	return ""
}

// inDomains reports whether node n lies in one of the domains.
func inDomains(f *topology.Fleet, n topology.NodeID, domains []topology.DomainID) bool {
	for _, d := range domains {
		if lo, hi := f.Nodes(d); n >= lo && n < hi {
			return true
		}
	}
	return false
}
