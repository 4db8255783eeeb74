package fleet

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// reservation holds a domain for the highest-priority blocked gang, so a
// stream of small jobs cannot starve it.
type reservation struct {
	id       string
	priority int32
	group    topology.GroupID
	domain   topology.DomainID
	// start is when the domain's running work is expected to end; zero
	// when open-ended work there makes it unknown.
	start time.Time
}

// Schedule runs one cycle at now and returns what the host must do. It
// never fails: a now earlier than a previous call's is treated as that
// call's now.
//
// The cycle, in order:
//
//  1. Victims past their drain deadline are listed in Kill.
//  2. Beneficiaries whose victims are all gone are admitted onto the GPUs
//     nominated for them.
//  3. Pending workloads are visited in admission order (see order): each
//     that fits in quota and on the fleet is admitted at once, so many
//     are admitted per cycle, not one per queue. StrictFIFO queues stop at
//     their first workload that does not fit; BestEffortFIFO queues let
//     later, smaller work pass.
//  4. A workload that does not fit asks for a preemption plan; an accepted
//     plan drains its victims and nominates their GPUs for it at once. A
//     run of identical replicas (an inference spike) shares one victim
//     search; a class of workloads whose search found nothing is not
//     searched again for larger members in the same cycle. Victims of one
//     cycle's plans are disjoint.
//  5. The highest-priority gang that can neither start nor preempt gets a
//     reservation (see reserveFor): one domain is held for it, and
//     lower-priority work may use it only if the gang can evict it or it
//     is expected to end before the planned start (backfill).
func (s *Scheduler) Schedule(now time.Time) Decisions {
	if now.Before(s.now) {
		now = s.now
	}
	s.now = now
	var d Decisions
	s.kills(now, &d)
	s.admitReady(now, &d)

	pending := s.pending()
	s.order(pending)
	s.reserve = nil
	blocked := map[quota.NodeID]bool{}
	taken := map[string]bool{}
	failed := map[failKey]int{}
	for i, e := range pending {
		if blocked[e.queue] {
			continue
		}
		if _, nominated := s.targets[e.w.ID]; nominated {
			continue // nominated with replicas of an earlier workload
		}
		switch s.tryAdmit(now, e, &d) {
		case admitted:
			continue
		case reserved:
			// It fits, but only in the held domain: it waits, and does not
			// preempt its way around the reservation either.
		default:
			if s.tryPreempt(now, replicas(pending[i:]), taken, failed, &d) {
				continue
			}
		}
		if s.reserve == nil && !s.cfg.Policy.NoReservation {
			s.reserveFor(e)
		}
		if s.tree.Strategy(e.queue) == quota.StrictFIFO {
			blocked[e.queue] = true
		}
	}
	clear(pending) // the buffer must not keep ended workloads alive
	s.lastEvents = len(s.events)
	d.Events, s.events = s.events, nil
	return d
}

func (s *Scheduler) kills(now time.Time, d *Decisions) {
	if len(s.draining) == 0 {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(s.draining)) {
		e := s.draining[id]
		if !e.killAsked && !now.Before(e.deadline) {
			e.killAsked = true
			d.Kill = append(d.Kill, Kill{ID: id, Deadline: e.deadline})
			ev := s.event(EventKilled, now, e)
			ev.Deadline, ev.Reason, ev.Beneficiary = e.deadline, e.reason, e.beneficiary
			s.emit(ev)
		}
	}
}

func (s *Scheduler) admitReady(now time.Time, d *Decisions) {
	if len(s.targets) == 0 {
		return
	}
	for _, b := range s.drains.Nominations() {
		if !s.drains.Ready(b) {
			continue
		}
		a, err := s.drains.Complete(b)
		if err != nil {
			panic(fmt.Sprintf("fleet: completing a ready nomination: %v", err))
		}
		e := s.work[b]
		delete(s.targets, b)
		// Quota was charged and GPUs allocated as the victims left.
		e.borrowing = s.tree.Borrowed(e.queue, e.flavor) > 0
		e.assign, e.nodes, e.state, e.started = a, a.NodeGPUs(), gang.Admitted, now
		delete(s.queued, b)
		s.startedRunning(e)
		s.admitted(now, e, d)
	}
}

// pending lists the pending workloads without a nomination, in a buffer
// reused from cycle to cycle.
func (s *Scheduler) pending() []*entry {
	out := s.pendingBuf[:0]
	for _, e := range s.queued {
		if _, nominated := s.targets[e.w.ID]; !nominated {
			out = append(out, e)
		}
	}
	s.pendingBuf = out
	return out
}

type admitResult uint8

const (
	notAdmitted admitResult = iota
	admitted
	reserved // it fits, but only in a domain held for another gang
)

// tryAdmit admits e now if its quota and a placement allow.
func (s *Scheduler) tryAdmit(now time.Time, e *entry, d *Decisions) admitResult {
	if !s.tree.Fits(e.queue, e.flavor, int64(e.gpus())).Fits() {
		return notAdmitted
	}
	a, err := s.placer.Place(s.fleet, &e.w)
	if err != nil {
		return notAdmitted
	}
	if s.blockedByReservation(now, e, a) {
		return reserved
	}
	a = a.Clone()
	if err := placement.Apply(s.fleet, a); err != nil {
		panic(fmt.Sprintf("fleet: applying a fresh placement: %v", err))
	}
	s.mirror(placement.Apply(s.scratch, a))
	e.started = now
	s.admitEntry(e, a)
	s.admitted(now, e, d)
	return admitted
}

// admitted reports an admission to the host and the event stream.
func (s *Scheduler) admitted(now time.Time, e *entry, d *Decisions) {
	a := e.assign
	adm := Admission{ID: e.w.ID, Queue: e.w.Queue, Wait: now.Sub(e.submitted), Span: s.fleet.LevelName(a.Span), Borrowing: e.borrowing}
	for _, p := range a.Pods {
		adm.Pods = append(adm.Pods, PodAssignment{PodSet: e.w.PodSets[p.PodSet].Name, Index: p.Index, Node: s.fleet.NodeName(p.Node), GPUs: p.GPUs})
	}
	d.Admit = append(d.Admit, adm)
	ev := s.event(EventAdmitted, now, e)
	ev.Wait, ev.Span, ev.Borrowing = adm.Wait, adm.Span, e.borrowing
	ev.BorrowedGPUs = int(min(s.tree.Borrowed(e.queue, e.flavor), int64(e.gpus())))
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
	if e.w.Topology.Required == "" || e.w.Pods() < 2 {
		return
	}
	l, ok := s.fleet.Level(e.w.Topology.Required)
	if !ok || l == 0 {
		return
	}
	g, ok := s.groupOf(e)
	if !ok {
		return
	}
	lo, hi := s.fleet.DomainsAt(l)
	type outlook struct {
		blocked int       // GPUs of open-ended work the gang cannot evict
		end     time.Time // latest expected end of the other work
	}
	view := make([]outlook, hi-lo)
	// Sums and maxima do not depend on the map's order.
	for _, x := range s.work {
		if !x.state.HoldsGPUs() {
			continue
		}
		evictable := x.w.Drain.Preemptible && x.priority < e.priority
		for _, ng := range x.nodes {
			o := &view[s.fleet.DomainOf(ng.Node, l)-lo]
			switch end := x.started.Add(x.w.ExpectedRuntime); {
			case x.w.ExpectedRuntime > 0:
				if end.After(o.end) {
					o.end = end
				}
			case !evictable:
				o.blocked += ng.GPUs
			}
		}
	}
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
	r := &reservation{id: e.w.ID, priority: e.priority, group: g, domain: best}
	if view[best-lo].blocked == 0 {
		r.start = view[best-lo].end
	}
	s.reserve = r
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
	r := s.reserve
	if r == nil || e.w.ID == r.id || e.priority > r.priority || e.w.Drain.Preemptible && e.priority < r.priority {
		return false
	}
	if !r.start.IsZero() && e.w.ExpectedRuntime > 0 && !now.Add(e.w.ExpectedRuntime).After(r.start) {
		return false
	}
	lo, hi := s.fleet.Nodes(r.domain)
	for _, p := range a.Pods {
		if p.Node >= lo && p.Node < hi {
			return true
		}
	}
	return false
}
