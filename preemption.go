package fleet

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// replicas returns the run of workloads at the head of pending that are
// replicas of its first one: same queue, priority, flavor, pools, submit
// time, expected runtime, drain contract and model, and one pod set of the same
// size with no topology constraint, so that placing them together is the
// same as placing them one by one and every rule sees them alike. An inference
// spike is such a run, and one victim search then serves all of it.
func replicas(pending []*entry) []*entry {
	e := pending[0]
	if !replicable(e) {
		return pending[:1]
	}
	n := 1
	for n < len(pending) {
		x := pending[n]
		if !replicable(x) || x.queue != e.queue || x.priority != e.priority || x.flavor != e.flavor ||
			x.w.ExpectedRuntime != e.w.ExpectedRuntime || x.w.Drain.Preemptible != e.w.Drain.Preemptible ||
			!x.submitted.Equal(e.submitted) || x.w.Model != e.w.Model ||
			!slices.Equal(x.w.Pools, e.w.Pools) || x.w.PodSets[0].Count != e.w.PodSets[0].Count ||
			x.w.PodSets[0].GPUsPerPod != e.w.PodSets[0].GPUsPerPod {
			break
		}
		n++
	}
	return pending[:n]
}

func replicable(e *entry) bool {
	return len(e.w.PodSets) == 1 && e.w.Topology == (gang.TopologyRequest{}) && e.w.Spread == (gang.Spread{}) && !ledger.Elastic(&e.w)
}

// tryPreempt asks for a plan that makes run[0] fit, together with the rest
// of run (its replicas) when one plan can serve them all, by draining
// victims not already taken this cycle, and accepts it. It falls back to
// run[0] alone.
//
// jointFailed reports that a run of several replicas found no joint plan:
// the caller then asks for its remaining members one by one.
func (s *Scheduler) tryPreempt(now time.Time, run []*entry, taken map[string]bool, failed *failMemo, d *Decisions) (ok, jointFailed bool) {
	if s.cfg.Policy.NoPreemption {
		return false, false
	}
	if e := run[0]; len(e.w.Flavors) > 1 {
		// A model set preempts on one model at a time.
		return s.preemptModels(e, func() bool {
			ok, _ := s.tryPreempt(now, run[:1], taken, failed, d)
			return ok
		}), len(run) > 1
	}
	if run[0].sharing() {
		// Work beyond whole GPUs of one model takes room back without a
		// nomination (reclaim_shared.go).
		return s.reclaimShared(now, run[0], taken, d), false
	}
	// Victims already draining for it without a nomination come first:
	// a whole-GPU search would evict more instead of waiting for them.
	reclaimTried := s.stillReclaiming(run[0])
	if reclaimTried && s.reclaimFor(now, run[0], taken, d) {
		return true, false
	}
	avoid, avoidID := s.avoidSet(now, run[0])
	key, keyed := s.failureKey(run[0], avoidID)
	if keyed {
		// A search kept out of no domain that failed fails kept out of
		// some too.
		open := key
		open.avoid = 0
		pods, ok := failed.get(key)
		if po, oko := failed.get(open); oko && (!ok || po < pods) {
			pods, ok = po, true
		}
		if ok && searchPods(run[0]) >= pods {
			// A no larger gang of its class found no plan this cycle. One
			// that fits only in a booked block still waits behind the
			// booking, as tryAdmit said.
			if run[0].wait.reason != WaitBooking {
				run[0].wait.reason = WaitMemo
			}
			return false, false
		}
		if r, ok := s.refused[key]; ok && r.matches(s, run[0]) {
			// An identical request found a plan this cycle that could not
			// be taken (into a booked block, a held domain, or onto free
			// GPUs it may not use): it would find the same plan again.
			run[0].wait.reason, run[0].wait.behind = r.reason, r.behind
			return false, len(run) > 1
		}
	}
	// A lone request on a state no cycle's plan has changed since its
	// last search found nothing finds nothing again (noplan.go).
	alone := len(run) == 1 && !reclaimTried && len(taken) == 0
	var kept *waitVerdict
	if alone && s.noPlanStands(now, run[0], avoid) {
		if !verifyNoPlans {
			s.replayNoPlan(run[0])
			if keyed {
				failed.fail(key, searchPods(run[0]))
			}
			return false, false
		}
		w := replayedWait(run[0])
		kept = &w
	}
	at := s.stamp()
	if len(run) > 1 {
		if ok, _ := s.preemptFor(now, run, avoid, taken, d); ok {
			return true, false
		}
		jointFailed = true
	}
	ok, found := s.preemptFor(now, run[:1], avoid, taken, d)
	if kept != nil {
		checkNoPlan(run[0].w.ID, *kept, run[0].wait, ok || found)
	}
	if ok {
		return true, jointFailed
	}
	// Holders with shares, slices or resources are no victims of the
	// index search: they are reclaimed without a nomination.
	if !found && !reclaimTried && s.reclaimFor(now, run[0], taken, d) {
		return true, jointFailed
	}
	if alone && !found {
		s.keepNoPlan(now, run[0], avoid, at)
	}
	if keyed && found && run[0].wait.refusedPlan {
		if s.refused == nil {
			s.refused = map[failKey]refusal{}
		}
		s.refused[key] = s.refusalOf(run[0])
	}
	// Only a search that found no plan says anything of larger gangs of
	// the class: a plan refused for a reservation, or one that needs no
	// victim, does not.
	if keyed && !found {
		failed.fail(key, searchPods(run[0]))
	}
	return false, jointFailed
}

// preemptModels makes room for e, a workload that accepts several GPU
// models, as Kueue's flavor assigner tries flavors: each model it accepts
// that its queue serves, in its order of preference, until preempt (a
// victim search on that model alone, with its nomination, or a reclaim)
// makes room there. For each try e is, to the scheduler and the ledger,
// a workload of that one model, charged for it; the model that made room
// stays its model (as for a placement: see tryAdmitShared), and when none
// does, e is back as it was, with the first model's verdict.
//
// Admission tried every model without preemption first, so Kueue's
// whenCanPreempt (Preempt or TryNextFlavor) makes no difference: a model
// is only preempted on once none fits as it is.
func (s *Scheduler) preemptModels(e *entry, preempt func() bool) bool {
	models, flavor, model, class := e.w.Flavors, e.flavor, e.w.Flavor, e.failClass
	var first waitVerdict
	tried := false
	for _, m := range models {
		f, ok := s.tree.Flavor(m)
		if !ok || !s.tree.Serves(e.queue, f) || !s.hasFlavor(m) {
			continue
		}
		if err := s.books.SetFlavor(e.w.ID, f); err != nil {
			panic("fleet: the ledger refused a model its queue serves: " + err.Error())
		}
		e.flavor, e.w.Flavor, e.w.Flavors = f, m, nil
		e.failClass = [2]int32{} // of this model's classes
		ok = preempt()
		e.w.Flavors = models
		if ok {
			return true
		}
		if !tried {
			first, tried = e.wait, true
		}
	}
	if err := s.books.SetFlavor(e.w.ID, flavor); err != nil {
		panic("fleet: the ledger refused a pending workload's own model back: " + err.Error())
	}
	e.flavor, e.w.Flavor, e.failClass = flavor, model, class
	if tried {
		e.wait = first
	}
	return false
}

// refusal is a plan found for a workload but refused, as the cycle
// remembers it for identical requests after it: what besides its failKey
// decides the search and the refusal (its pods, preferred level, expected
// run time, whether it is preemptible, its queue-order time when its
// queue's rules read it, the reservation in force), and the wait verdict
// it left. Pod resources other than GPUs and host scorers are not
// compared: a request they would place elsewhere waits one cycle more.
type refusal struct {
	pods        int
	preferred   string
	runtime     time.Duration
	preemptible bool
	submitted   time.Time
	starved     bool
	reserve     *reservation
	reason      WaitReason
	behind      string
}

func (s *Scheduler) refusalOf(e *entry) refusal {
	r := refusal{pods: searchPods(e), preferred: e.w.Topology.Preferred, runtime: e.w.ExpectedRuntime,
		preemptible: e.w.Drain.Preemptible, reserve: s.reserve, reason: e.wait.reason, behind: e.wait.behind}
	if s.tree.Rules(e.queue).WithinQueue == quota.WithinQueueLowerOrNewerEqualPriority {
		r.submitted, r.starved = e.submitted, s.starved(e)
	}
	return r
}

// matches reports whether e is a request identical to the refused one
// for the search and the refusal.
func (r refusal) matches(s *Scheduler, e *entry) bool {
	x := s.refusalOf(e)
	x.reason, x.behind = r.reason, r.behind
	return x == r
}

// failKey is a class of pending workloads for which a failed victim search
// is monotonic within a cycle: same queue, priority, flavor, pools,
// required level and pod size (its failClass), and the same domains to
// avoid. An elastic workload searches for its minimum
// (Scheduler.minimumSpec), a gang of its minimum count: it is of the
// class of that gang. Victims are chosen by the queue's rules and the
// priority, so the candidates are the same (or fewer, for a later
// submission); if n pods of this size found no plan, more pods cannot.
type failKey struct {
	// class is the workload's failClass, as its index in the scheduler's
	// failClasses plus one.
	class int32
	// avoid is the list of domains its plans may not use (avoidSet), as
	// its index in the cycle's avoidSets plus one (0: none).
	avoid int
}

// failMemo holds a cycle's failed victim searches: for each failKey, the
// fewest pods a search of it found no plan for. Keys are small dense
// numbers, so it is a table, read once or twice for every pending
// workload that does not fit.
type failMemo struct {
	rows [][]int // rows[class-1][avoid]: pods plus one, 0 for none
}

func (m *failMemo) get(k failKey) (int, bool) {
	if int(k.class) > len(m.rows) {
		return 0, false
	}
	if r := m.rows[k.class-1]; k.avoid < len(r) && r[k.avoid] > 0 {
		return r[k.avoid] - 1, true
	}
	return 0, false
}

func (m *failMemo) put(k failKey, pods int) {
	if n := int(k.class); n > len(m.rows) {
		m.rows = append(m.rows, make([][]int, n-len(m.rows))...)
	}
	r := m.rows[k.class-1]
	if k.avoid >= len(r) {
		r = append(r, make([]int, k.avoid+1-len(r))...)
		m.rows[k.class-1] = r
	}
	r[k.avoid] = pods + 1
}

// fail records that a search of k for pods found no plan.
func (m *failMemo) fail(k failKey, pods int) {
	if p, ok := m.get(k); !ok || pods < p {
		m.put(k, pods)
	}
}

// reset forgets every failure, keeping the memory.
func (m *failMemo) reset() {
	for _, r := range m.rows {
		clear(r)
	}
}

// failClass is what of a workload puts it in a failKey besides the
// domains it avoids: fixed for the workload but for whether it is
// starved (Policy.WaitLimit), which turns true once, so found once per
// value and kept as a number (entry.failClass). A starved workload may
// evict more than one that is not: the two never share a class.
type failClass struct {
	queue    quota.NodeID
	priority int32
	flavor   quota.FlavorID
	required string
	pools    string
	gpus     int
	starved  bool
}

// failureKey is e's failKey with the given avoid set, false for work no
// class holds (several pod sets, segments or spread).
func (s *Scheduler) failureKey(e *entry, avoid int) (failKey, bool) {
	starved := s.starved(e)
	c := &e.failClass[0]
	if starved {
		c = &e.failClass[1]
	}
	if *c == 0 {
		*c = s.internFailClass(e, starved)
	}
	if *c < 0 {
		return failKey{}, false
	}
	return failKey{class: *c, avoid: avoid}, true
}

// starved reports whether e has waited Policy.WaitLimit or longer at the
// cycle's now.
func (s *Scheduler) starved(e *entry) bool {
	l := s.cfg.Policy.WaitLimit
	return l > 0 && s.now.Sub(e.submitted) >= l
}

// internFailClass returns e's failClass's index plus one in
// failClasses, adding it when it is new, or -1 for work of no class.
func (s *Scheduler) internFailClass(e *entry, starved bool) int32 {
	if len(e.w.PodSets) != 1 || e.w.Topology.Segment.Size > 0 || e.w.Spread != (gang.Spread{}) {
		return -1
	}
	c := failClass{queue: e.queue, priority: e.priority, flavor: e.flavor, required: e.w.Topology.Required,
		pools: strings.Join(e.w.Pools, ","), gpus: e.w.PodSets[0].GPUsPerPod, starved: starved}
	id, ok := s.failClasses[c]
	if !ok {
		if s.failClasses == nil {
			s.failClasses = map[failClass]int32{}
		}
		id = int32(len(s.failClasses)) + 1
		s.failClasses[c] = id
	}
	return id
}

// searchPods is how many pods e's victim search asks room for: its
// minimum when it is elastic (see preemptFor).
func searchPods(e *entry) int {
	if len(e.w.PodSets) == 1 && ledger.Elastic(&e.w) {
		return e.w.PodSets[0].Min()
	}
	return e.w.Pods()
}

// preemptFor reports whether it accepted a plan, and whether the search
// found one at all. One search serves the whole run: the joint target is
// cut into one target per replica, and the ledger makes each replica wait
// only for the victims on its own nodes.
func (s *Scheduler) preemptFor(now time.Time, run []*entry, avoid []topology.DomainID, taken map[string]bool, d *Decisions) (ok, found bool) {
	e := run[0]
	// An elastic workload preempts for its minimum; it grows later.
	w := s.minimumSpec(&e.w)
	if len(run) > 1 {
		joint := e.w.Clone()
		joint.PodSets[0].Count *= len(run)
		w = &joint
	}
	req := preempt.Request{W: w, Queue: e.queue, Flavor: e.flavor, Now: now,
		FairSharing: s.cfg.Policy.FairSharing, Submitted: e.submitted, Starved: s.starved(e), Claims: s.books, Avoid: avoid}
	if s.searcher.ScratchDirty() {
		// A search was interrupted (a host callback panicked): the live
		// state was never touched, only the mirror needs copying again.
		s.books.RebuildScratch()
		s.searcher.ScratchRebuilt()
	}
	view := preempt.View{Fleet: s.fleet, Tree: s.tree, Index: s.books.Index(), Scratch: s.books.Scratch()}
	// Victims already promised to nominations are gone for this search
	// (their unclaimed GPUs free, their quota released), like the victims
	// taken earlier in this cycle.
	exclude := taken
	if s.books.NumDraining() > 0 {
		if s.exclude == nil {
			s.exclude = map[string]bool{}
		}
		clear(s.exclude)
		if s.books.AddPromised(s.exclude) {
			maps.Copy(s.exclude, taken)
			exclude = s.exclude
		}
	}
	plan, err := s.searcher.Victims(view, req, exclude)
	if err != nil {
		if np := noPlanOf(err); np != nil && len(run) == 1 {
			e.wait.noPlan = np // each search returns a NoPlan of its own
		}
		return false, false
	}
	// A plan without victims fits once victims already draining are gone.
	// It is nominated when its target takes GPUs they hold and nobody
	// claims; one that fits on free GPUs alone waits instead (tryAdmit
	// refused it for a reservation or a held domain; it counts their quota
	// as gone too, see fitsQuota).
	if len(plan.Victims) == 0 && !s.onHeldGPUs(plan.Target) || s.blockedByReservation(now, e, plan.Target) {
		e.wait.refusedPlan = len(run) == 1
		return false, true
	}
	if booked := s.holdsAgainst(now, e); s.touches(plan.Target, booked) {
		// The search does not know the calendar: a plan into a booked
		// block is refused, and the workload waits behind the booking.
		e.wait.reason, e.wait.behind = WaitBooking, s.bookingAt(plan.Target, booked)
		e.wait.refusedPlan = len(run) == 1
		return false, true
	}
	lp := ledger.Plan{Victims: make([]ledger.Victim, 0, len(plan.Victims)), Targets: make([]ledger.Target, len(run))}
	lost := map[string]float64{}
	var undo []func()
	undoSplits := func() {
		for _, u := range slices.Backward(undo) {
			u()
		}
	}
	for _, v := range plan.Victims {
		if v.Shrink() {
			// Each pod it gives up drains as a workload of its own.
			ids, u, err := s.splitVictim(v)
			if err != nil {
				undoSplits()
				return false, true
			}
			undo = append(undo, u)
			for _, id := range ids {
				lp.Victims = append(lp.Victims, ledger.Victim{ID: id, Deadline: v.Deadline, Reason: drainReason(v.Reason)})
				lost[id] = v.Cost / float64(len(ids))
			}
			continue
		}
		lp.Victims = append(lp.Victims, ledger.Victim{ID: v.ID, Deadline: v.Deadline, Reason: drainReason(v.Reason)})
		lost[v.ID] = v.Cost
	}
	if len(run) == 1 {
		lp.Targets[0] = ledger.Target{Beneficiary: e.w.ID, Assign: plan.Target}
	} else {
		per := e.w.PodSets[0].Count
		for i, x := range run {
			lp.Targets[i] = ledger.Target{Beneficiary: x.w.ID, Assign: s.share(plan.Target, x.w.ID, i*per, per)}
		}
	}
	// Victims already draining for workloads reclaimed for without a
	// nomination: once promised here, those wait for nothing this cycle.
	var served []string
	for _, v := range lp.Victims {
		if r, ok := s.books.Get(v.ID); ok && r.Drain != nil && !r.Drain.Promised() {
			served = append(served, r.Drain.Beneficiaries...)
		}
	}
	got, err := s.books.Nominate(now, lp)
	if err != nil {
		undoSplits()
		return false, true
	}
	for _, b := range served {
		if x := s.work[b]; x != nil && x.wait.reason == WaitVictims && x.wait.cycle == s.cycles && len(s.books.ReclaimingFor(b)) == 0 {
			if _, nominated := s.books.Nomination(b); !nominated {
				x.wait = waitVerdict{cycle: s.cycles, at: now, reason: WaitVictimsTaken, behind: e.w.ID}
				s.displaced = append(s.displaced, x)
			}
		}
	}
	s.reportDrains(now, got, lost, d)
	s.reportNominations(lp.Targets, d)
	for _, x := range run {
		x.wait = waitVerdict{cycle: s.cycles, at: now, reason: WaitVictims}
	}
	for _, v := range lp.Victims {
		taken[v.ID] = true
	}
	return true, true
}

// noPlanOf is err as a *preempt.NoPlan, or nil.
func noPlanOf(err error) *preempt.NoPlan {
	if np, ok := err.(*preempt.NoPlan); ok {
		return np
	}
	var np *preempt.NoPlan
	if errors.As(err, &np) {
		return np
	}
	return nil
}

// reportNominations tells the host where the beneficiaries of a plan
// just accepted will run.
func (s *Scheduler) reportNominations(targets []ledger.Target, d *Decisions) {
	for _, t := range targets {
		e := s.work[t.Beneficiary]
		n, _ := s.books.Nomination(t.Beneficiary)
		d.Nominate = append(d.Nominate, Nomination{ID: t.Beneficiary, Pods: s.podViews(e, t.Assign), ReadyBy: n.ReadyBy})
	}
}

// reportDrains hands the victims a nomination newly drained to the host
// and the event stream, with the work each loses.
func (s *Scheduler) reportDrains(now time.Time, got ledger.Nominated, lost map[string]float64, d *Decisions) {
	for _, r := range got.Drained {
		dr := Drain{ID: r.W.ID, Deadline: r.Drain.Deadline, Reason: r.Drain.Reason,
			Beneficiaries: slices.Clone(r.Drain.Beneficiaries), LostGPUSeconds: lost[r.W.ID]}
		e := s.work[r.W.ID]
		if e.split != nil {
			dr.Of, dr.Pod = e.split.of, e.split.pod
		}
		if len(r.MoveTo.Pods) > 0 {
			dr.MoveTo = s.nodeViews(r.MoveTo.NodeGPUs())
		}
		d.Drain = append(d.Drain, dr)
		ev := s.event(EventDrainStarted, now, e)
		ev.Reason, ev.Beneficiaries, ev.Deadline, ev.LostGPUSeconds = dr.Reason.String(), dr.Beneficiaries, dr.Deadline, dr.LostGPUSeconds
		ev.Of = dr.Of
		s.emit(ev)
	}
}

// drainReason names preempt's rule as the host sees it.
func drainReason(r preempt.Reason) gang.DrainReason {
	switch r {
	case preempt.InQueue:
		return gang.DrainInQueue
	case preempt.Reclaim:
		return gang.DrainReclaim
	case preempt.ReclaimWhileBorrowing:
		return gang.DrainReclaimWhileBorrowing
	case preempt.FairSharing:
		return gang.DrainFairSharing
	}
	panic(fmt.Sprintf("fleet: preempt returned an unknown reason %d", r))
}

// avoidSet lists the domains a plan for e may not use: the booked blocks
// it may not enter, and the domain reserved for a blocked gang when e is
// work of that gang's priority or lower that the gang could not get rid
// of in time. The search places around them, so it never returns a plan
// the cycle would refuse for them. With the list comes its index plus
// one in the cycle's avoidSets (0 for none), which the failure memo keys
// on: lists made of the same holds share it. Callers must not change
// the list, and use it before the holds or a booking's waiting change.
func (s *Scheduler) avoidSet(now time.Time, e *entry) ([]topology.DomainID, int) {
	i := s.heldFor(now, e)
	h := &s.held.against[i]
	if !s.barredFromReservation(now, e) || e.priority > s.reserve.priority || slices.Contains(h.domains, s.reserve.domain) {
		if len(h.holds) == 0 {
			return nil, 0
		}
		if h.avoid == 0 {
			h.avoid = s.internAvoid(h.holds)
		}
		return h.domains[:len(h.domains):len(h.domains)], h.avoid
	}
	if h.avoidReserve == 0 || h.reserveDomain != s.reserve.domain {
		h.withReserved = append(append(h.withReserved[:0], h.holds...), s.reserve.domain)
		h.avoidReserve = s.internAvoid(h.withReserved)
		h.reserveDomain = s.reserve.domain
		h.withReserved = append(append(h.withReserved[:0], h.domains...), s.reserve.domain)
	}
	return h.withReserved[:len(h.withReserved):len(h.withReserved)], h.avoidReserve
}

// internAvoid returns list's index plus one in the cycle's avoidSets,
// adding a copy of it when it is new.
func (s *Scheduler) internAvoid(list []topology.DomainID) int {
	i := slices.IndexFunc(s.avoidSets, func(x []topology.DomainID) bool { return slices.Equal(x, list) })
	if i < 0 {
		i = len(s.avoidSets)
		s.avoidSets = append(s.avoidSets, slices.Clone(list))
	}
	return i + 1
}

// onHeldGPUs reports whether a target needs more GPUs on some node than
// are free there now.
func (s *Scheduler) onHeldGPUs(a placement.Assignment) bool {
	for _, x := range a.NodeGPUs() {
		if x.GPUs > s.fleet.Free(x.Node) {
			return true
		}
	}
	return false
}

// share cuts pods [from, from+n) of a joint target into one replica's
// assignment.
func (s *Scheduler) share(t placement.Assignment, id string, from, n int) placement.Assignment {
	a := placement.Assignment{Workload: id, Group: t.Group, Domain: t.Domain, Level: t.Level,
		Pods: slices.Clone(t.Pods[from : from+n])}
	nodes := make([]topology.NodeID, n)
	for i := range a.Pods {
		a.Pods[i].Index = i
		nodes[i] = a.Pods[i].Node
	}
	a.Span = s.fleet.Span(nodes)
	return a
}
