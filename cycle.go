package fleet

import (
	"fmt"
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
	// when some of it has no expected runtime.
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
//     plan drains its victims and nominates their GPUs for it.
//  5. The highest-priority gang that can neither start nor preempt gets a
//     reservation: the domain where it fits soonest is held, and later,
//     lower-priority work may use it only if it is preemptible filler or
//     expected to end before the domain frees up (backfill).
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
	for _, e := range pending {
		if blocked[e.queue] {
			continue
		}
		if s.tryAdmit(now, e, &d) {
			continue
		}
		if !s.cfg.Policy.NoPreemption && s.tryPreempt(now, e, taken, &d) {
			continue
		}
		if s.reserve == nil && !s.cfg.Policy.NoReservation {
			s.reserveFor(now, e)
		}
		if s.tree.Strategy(e.queue) == quota.StrictFIFO {
			blocked[e.queue] = true
		}
	}
	d.Events, s.events = s.events, nil
	return d
}

func (s *Scheduler) kills(now time.Time, d *Decisions) {
	for _, id := range slices.Sorted(mapKeys(s.draining)) {
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
	for _, b := range slices.Sorted(mapKeys(s.noms)) {
		n := s.noms[b]
		if !n.ready() {
			continue
		}
		e := s.work[b]
		delete(s.noms, b)
		// Quota was charged when the plan was accepted.
		e.borrowing = s.tree.Borrowed(e.queue, e.flavor) > 0
		e.assign, e.state, e.started = n.target, gang.Admitted, now
		delete(s.queued, b)
		s.admitted(now, e, d)
	}
}

func (s *Scheduler) pending() []*entry {
	out := make([]*entry, 0, len(s.queued))
	for _, e := range s.queued {
		if _, nominated := s.noms[e.w.ID]; !nominated {
			out = append(out, e)
		}
	}
	return out
}

// tryAdmit admits e now if its quota and a placement allow.
func (s *Scheduler) tryAdmit(now time.Time, e *entry, d *Decisions) bool {
	if !s.tree.Fits(e.queue, e.flavor, int64(e.gpus())).Fits() {
		return false
	}
	a, err := s.placer.Place(s.fleet, &e.w)
	if err != nil {
		return false
	}
	if s.blockedByReservation(now, e, a) {
		return false
	}
	a = a.Clone()
	if err := placement.Apply(s.fleet, a); err != nil {
		panic(fmt.Sprintf("fleet: applying a fresh placement: %v", err))
	}
	e.started = now
	s.admitEntry(e, a)
	s.admitted(now, e, d)
	return true
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

// reserveFor holds, for a blocked multi-node gang with a required level,
// the domain of that level with the most free whole nodes.
func (s *Scheduler) reserveFor(now time.Time, e *entry) {
	if e.w.Topology.Required == "" || e.w.Pods() < 2 {
		return
	}
	l, ok := s.fleet.Level(e.w.Topology.Required)
	if !ok || l == 0 {
		return
	}
	for g := range topology.GroupID(s.fleet.NumGroups()) {
		if s.fleet.GroupFlavor(g) != e.w.Flavor || (len(e.w.Pools) > 0 && !slices.Contains(e.w.Pools, s.fleet.GroupPool(g))) {
			continue
		}
		_, dom := s.fleet.LargestFreeBlock(l, g)
		r := &reservation{id: e.w.ID, priority: e.priority, group: g, domain: dom}
		lo, hi := s.fleet.Nodes(dom)
		known := true
		// The planned start is the latest expected end of the work in the
		// domain: a maximum, so the map's order does not matter.
		for _, x := range s.work {
			if !x.state.HoldsGPUs() || !x.inNodes(lo, hi) {
				continue
			}
			if x.w.ExpectedRuntime <= 0 {
				known = false
				break
			}
			if end := x.started.Add(x.w.ExpectedRuntime); end.After(r.start) {
				r.start = end
			}
		}
		if !known {
			r.start = time.Time{}
		}
		s.reserve = r
		return
	}
}

func (e *entry) inNodes(lo, hi topology.NodeID) bool {
	for _, p := range e.assign.Pods {
		if p.Node >= lo && p.Node < hi {
			return true
		}
	}
	return false
}

// blockedByReservation: lower-priority work may use the reserved domain
// only if it is preemptible filler, or expected to end before the
// domain's running work does (so it cannot delay the reserved gang).
func (s *Scheduler) blockedByReservation(now time.Time, e *entry, a placement.Assignment) bool {
	r := s.reserve
	if r == nil || e.w.ID == r.id || e.priority > r.priority || e.w.Drain.Preemptible {
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
