package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/quota"
)

// Reclaiming shares, slices and resources. The victim search of package
// preempt counts whole GPUs per node; work holding a share of a GPU, a
// MIG slice or named resources is not in its index, and a nomination
// cannot pass such claims on. reclaimFor is the path that takes them
// back, Kueue's classical way: the shortest prefix of the candidates in
// eviction order whose removal, on a what-if copy of the fleet and quota
// tree, lets the workload be placed there with its quota fitting (found
// by galloping then bisection), cut back to 1-minimal. It serves
//
//   - a whole-GPU workload the index search found no plan for, while
//     some holder has claims (so whole-free GPUs may be held by shares);
//   - a workload with shares, slices or named resources (one GPU model),
//     which never asks the index search.
//
// Victims drain under the contract (a Drain now, a Kill at the
// deadline) with their beneficiary named, but nothing is nominated: what
// they hold returns to the pool when they exit and the beneficiary,
// still pending, is admitted by the cycle that follows. Meanwhile it
// waits (WaitVictims) for them rather than draining more, and its later
// searches count them as gone. The freed room is not held for it: a
// workload ahead of it in admission order may take it first, and it
// then searches again.
//
// The rules are the classical ones (withinQueue, reclaimWithinCohort)
// under fair sharing too; borrowWithinCohort does not apply (another
// queue's work is reclaimed only for a preemptor within its nominal
// quota); elastic victims are evicted whole, never shrunk. A search
// scans the holders (O(running)) and clones the fleet and the tree
// (O(nodes + queues)): it is a fallback, memoised per class of failing
// workload within a cycle like the index search, not an index.

// reclaimCandidate is a holder the rules let e evict.
type reclaimCandidate struct {
	rec   *ledger.Record
	prio  int32
	other bool // of another queue, borrowing: reclaimed
	short bool // charged quota e is short of (freesFor)
}

// reclaimShared is reclaimFor for work with shares, slices or
// resources, skipping a request identical to one that found no victims
// earlier in the cycle: taken victims and admissions only make room
// scarcer within a cycle.
func (s *Scheduler) reclaimShared(now time.Time, e *entry, taken map[string]bool, d *Decisions) bool {
	if s.stillReclaiming(e) {
		return s.reclaimFor(now, e, taken, d) // its own victims may be draining
	}
	w := &e.w
	key := fmt.Sprintf("%d/%d/%d/%q/%v/%v/%v", e.queue, e.priority, e.flavor, w.Pools, w.Topology, w.Spread, w.PodSets)
	if s.tree.Rules(e.queue).WithinQueue == quota.WithinQueueLowerOrNewerEqualPriority {
		key += fmt.Sprintf("/%s/%v", e.submitted, s.starved(e))
	}
	if s.unreclaimable[key] {
		return false
	}
	if s.reclaimFor(now, e, taken, d) {
		return true
	}
	if s.unreclaimable == nil {
		s.unreclaimable = map[string]bool{}
	}
	s.unreclaimable[key] = true
	return false
}

// stillReclaiming reports whether victims drained for e without a
// nomination still drain, as a scheduler restored from the books reads
// it. The flag alone may be stale both ways: they exited since its last
// search, or victims another nomination counted on stopped being
// promised (it dissolved, its beneficiary started) and now drain for e
// without one; either would choose another search than the restored
// scheduler's.
func (s *Scheduler) stillReclaiming(e *entry) bool {
	if n := s.books.Unpromised(); e.reclaimAt != n {
		e.reclaimAt = n
		e.reclaiming = len(s.books.ReclaimingFor(e.w.ID)) > 0
	} else if e.reclaiming && len(s.books.ReclaimingFor(e.w.ID)) == 0 {
		e.reclaiming = false
	}
	return e.reclaiming
}

// reclaimFor reports whether e was reclaimed for: victims started
// draining for it, or victims drained for it earlier will make it fit.
func (s *Scheduler) reclaimFor(now time.Time, e *entry, taken map[string]bool, d *Decisions) bool {
	if s.cfg.Policy.NoPreemption || e.w.Booking != "" || len(e.w.Flavors) > 1 {
		return false
	}
	if !e.sharing() && !e.reclaiming && s.books.NumClaimHolders() == 0 {
		return false // the index search saw every possible victim
	}
	// Victims drained for it earlier count as gone.
	gone := s.books.ReclaimingFor(e.w.ID)
	e.reclaiming = len(gone) > 0
	cands := s.reclaimCandidates(now, e, taken)
	if len(gone) == 0 && len(cands) == 0 {
		return false
	}
	w := s.minimumSpec(&e.w)
	specReq := s.reclaimRequest(e, w)
	held := s.holdsAgainst(now, e)
	f, tree := s.fleet.Clone(), s.tree.Clone()
	vacate := func(r *ledger.Record, take bool) {
		if err := s.books.Vacate(f, r, take); err != nil {
			panic("fleet: a what-if copy refused a holder's own GPUs: " + err.Error())
		}
		if err := r.ChargeTo(tree, take); err != nil {
			panic("fleet: a what-if tree refused a holder's own charge: " + err.Error())
		}
	}
	// fits reports the verdict of quota once e is placed on the what-if
	// fleet, and false when it cannot be placed or quota does not fit.
	fits := func() (quota.Verdict, bool) {
		if v := s.fitsSpec(tree, e, w, specReq); !v.Fits() {
			return v, false
		}
		a, err := s.placer.PlaceAvoiding(f, w, held...)
		if err != nil {
			return quota.Verdict{}, false
		}
		v := s.fitsPlaced(tree, e, e.flavor, a)
		return v, v.Fits()
	}
	// Victims already promised to nominations are gone too, as for the
	// index search: their quota released (the beneficiaries are charged
	// already), and their GPUs no nomination claims free.
	for _, id := range s.books.Promised() {
		r, ok := s.books.Get(id)
		if !ok || r.HasClaims() {
			continue // a nomination's victims hold whole GPUs only
		}
		if err := r.ChargeTo(tree, false); err != nil {
			panic("fleet: a what-if tree refused a promised victim's charge: " + err.Error())
		}
		for _, x := range r.Nodes {
			if g := s.books.Unclaimed(id, x.Node, x.GPUs); g > 0 {
				if err := f.Release(x.Node, g); err != nil {
					panic("fleet: a what-if copy refused a promised victim's GPUs: " + err.Error())
				}
			}
		}
	}
	for _, r := range gone {
		vacate(r, false)
	}
	if _, ok := fits(); ok {
		if len(gone) == 0 {
			return false // it fits without victims: something else keeps it out
		}
		e.wait = waitVerdict{cycle: s.cycles, at: now, reason: WaitVictims}
		return true
	}
	chosen, v, ok := shortestFit(cands, vacate, fits)
	// Kueue reclaims another queue's borrowed work only for a preemptor
	// that stays within its nominal quota; one that must borrow may still
	// take its own queue's work (withinClusterQueue), so the search runs
	// again over those alone.
	if ok && v.Mode != quota.FitsNominal && slices.ContainsFunc(chosen, func(c reclaimCandidate) bool { return c.other }) {
		for _, c := range chosen {
			vacate(c.rec, true)
		}
		own := slices.DeleteFunc(slices.Clone(cands), func(c reclaimCandidate) bool { return c.other })
		chosen, v, ok = shortestFit(own, vacate, fits)
		if ok && v.Mode != quota.FitsNominal && slices.ContainsFunc(chosen, func(c reclaimCandidate) bool { return c.other }) {
			ok = false
		}
	}
	if !ok {
		return false
	}
	for _, c := range chosen {
		s.drainForReclaim(now, e, c, d)
		taken[c.rec.W.ID] = true
	}
	e.reclaiming = true
	e.wait = waitVerdict{cycle: s.cycles, at: now, reason: WaitVictims}
	return true
}

// shortestFit finds the shortest prefix of the eviction order cands that
// makes fits true, then makes it 1-minimal: galloping (1, 2, 4, ...
// candidates gone) then bisection, since more victims never leave less
// room, so a search that few victims satisfy costs few placements and one
// that cannot succeed O(log candidates); then, latest first, each victim
// the rest fit without is given back. vacate(r, false) takes a holder off
// the what-if state and vacate(r, true) puts it back. On success the
// chosen victims are left vacated, with the verdict of the last fit; on
// failure nothing is.
func shortestFit(cands []reclaimCandidate, vacate func(*ledger.Record, bool), fits func() (quota.Verdict, bool)) ([]reclaimCandidate, quota.Verdict, bool) {
	vacated := 0
	moveTo := func(k int) {
		for ; vacated > k; vacated-- {
			vacate(cands[vacated-1].rec, true)
		}
		for ; vacated < k; vacated++ {
			vacate(cands[vacated].rec, false)
		}
	}
	lo, hi := 0, 0
	for k := 1; hi == 0; k *= 2 {
		if k >= len(cands) {
			k = len(cands)
		}
		if k == lo {
			moveTo(0)
			return nil, quota.Verdict{}, false // every candidate gone does not make room
		}
		moveTo(k)
		if _, ok := fits(); ok {
			hi = k
		} else {
			lo = k
		}
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		moveTo(mid)
		if _, ok := fits(); ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	moveTo(hi)
	chosen := slices.Clone(cands[:hi])
	v, _ := fits()
	for i := len(chosen) - 2; i >= 0; i-- {
		vacate(chosen[i].rec, true)
		if x, fit := fits(); fit {
			v = x
			chosen = slices.Delete(chosen, i, i+1)
			continue
		}
		vacate(chosen[i].rec, false)
	}
	return chosen, v, true
}

// reclaimRequest is what w asks of quota before it is placed.
func (s *Scheduler) reclaimRequest(e *entry, w *gang.Workload) quota.Request {
	if e.sharing() {
		return s.specRequest(e)
	}
	return quota.Request{MilliGPUs: int64(w.GPUs()) * gang.MilliGPU}
}

// reclaimCandidates lists the admitted holders e may evict, in eviction
// order: holders of quota e is short of first (freesFor), then other
// queues' borrowed work, then lower priority, then the most recently
// started, then ID. A candidate frees room e may use (freesFor),
// is preemptible, is past its minimum runtime, is not taken this cycle,
// and passes e's queue rules: withinQueue for its own queue (where a
// starved e counts as queued before every run: Policy.WaitLimit), and
// reclaimWithinCohort for another queue of its cohort that borrows.
func (s *Scheduler) reclaimCandidates(now time.Time, e *entry, taken map[string]bool) []reclaimCandidate {
	rules := s.tree.Rules(e.queue)
	root := s.tree.Root(e.queue)
	starved := s.starved(e)
	frees := s.freesFor(e)
	var out []reclaimCandidate
	s.books.Holders(func(r *ledger.Record) bool {
		switch {
		case r.State != gang.Admitted, taken[r.W.ID], r.W.ID == e.w.ID,
			!r.Policy.Preemptible, now.Before(r.Started.Add(r.Policy.MinRuntime)):
			return true
		}
		useful, short := frees(r)
		if !useful {
			return true
		}
		x, known := s.work[r.W.ID]
		if !known {
			return true
		}
		prio := x.priority
		if r.Queue == e.queue {
			allowed := false
			switch rules.WithinQueue {
			case quota.WithinQueueLowerPriority:
				allowed = prio < e.priority
			case quota.WithinQueueLowerOrNewerEqualPriority:
				allowed = prio < e.priority || prio == e.priority && (starved || x.submitted.After(e.submitted))
			}
			if allowed {
				out = append(out, reclaimCandidate{rec: r, prio: prio, short: short})
			}
			return true
		}
		if s.tree.Root(r.Queue) != root || !s.borrows(r) {
			return true
		}
		switch rules.ReclaimWithinCohort {
		case quota.ReclaimAny:
			out = append(out, reclaimCandidate{rec: r, prio: prio, other: true, short: short})
		case quota.ReclaimLowerPriority:
			if prio < e.priority {
				out = append(out, reclaimCandidate{rec: r, prio: prio, other: true, short: short})
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b reclaimCandidate) int {
		if a.short != b.short {
			if a.short {
				return -1
			}
			return 1
		}
		if a.other != b.other {
			if a.other {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.prio, b.prio); c != 0 {
			return c
		}
		if c := b.rec.Started.Compare(a.rec.Started); c != 0 {
			return c
		}
		return cmp.Compare(a.rec.W.ID, b.rec.W.ID)
	})
	return out
}

// freesFor returns whether evicting a holder frees room e may use, and
// whether it frees quota e is short of. A holder on e's GPU model frees
// both GPUs and quota; in a queue whose resource groups split its
// resources, so does one charged a named resource in a flavor where the
// assigner puts e and e does not fit (Kueue's candidates: the workloads
// using what needs preemption), which the search then tries first.
func (s *Scheduler) freesFor(e *entry) func(*ledger.Record) (frees, short bool) {
	if !s.tree.SplitsResources(e.queue) {
		return func(r *ledger.Record) (bool, bool) { return r.Flavor == e.flavor, false }
	}
	type col struct {
		f quota.FlavorID
		r quota.ResourceID
	}
	var need []col
	a := s.tree.Assign(e.queue, s.specSets(s.tree, e.flavor, &e.w), s.assignOptions())
	for _, c := range a.Charges {
		req := quota.Request{MilliGPUs: c.Value}
		if c.Resource != quota.GPU {
			req = quota.Request{Resources: []quota.Amount{{Resource: c.Resource, Value: c.Value}}}
		}
		if !s.tree.FitsRequest(e.queue, c.Flavor, req).Fits() {
			need = append(need, col{c.Flavor, c.Resource})
		}
	}
	return func(r *ledger.Record) (bool, bool) {
		short := slices.ContainsFunc(r.Charges(), func(c quota.Charge) bool {
			return slices.Contains(need, col{c.Flavor, c.Resource})
		})
		return short || r.Flavor == e.flavor, short
	}
}

// borrows reports whether r's queue uses more than its nominal quota of
// what r is charged: GPUs of its flavor, or a resource of a flavor it is
// charged in.
func (s *Scheduler) borrows(r *ledger.Record) bool {
	if s.tree.Borrowed(r.Queue, r.Flavor) > 0 {
		return true
	}
	for _, c := range r.Charges() {
		if c.Resource != quota.GPU && s.tree.UsageOf(r.Queue, c.Flavor, c.Resource) > s.tree.NominalOf(r.Queue, c.Flavor, c.Resource) {
			return true
		}
	}
	return false
}

// drainForReclaim starts c's drain for e and reports it.
func (s *Scheduler) drainForReclaim(now time.Time, e *entry, c reclaimCandidate, d *Decisions) {
	x := s.work[c.rec.W.ID]
	reason := gang.DrainInQueue
	if c.other {
		reason = gang.DrainReclaim
	}
	lost := s.lostGPUSeconds(c.rec, now)
	r, err := s.books.DrainServing(c.rec.W.ID, e.w.ID, now, now.Add(x.grace()), reason)
	if err != nil {
		panic("fleet: draining a checked reclaim victim: " + err.Error())
	}
	dr := Drain{ID: r.W.ID, Deadline: r.Drain.Deadline, Reason: reason,
		Beneficiaries: slices.Clone(r.Drain.Beneficiaries), LostGPUSeconds: lost}
	if x.split != nil {
		dr.Of, dr.Pod = x.split.of, x.split.pod
	}
	d.Drain = append(d.Drain, dr)
	ev := s.event(EventDrainStarted, now, x)
	ev.Reason, ev.Beneficiaries, ev.Deadline, ev.LostGPUSeconds = reason.String(), dr.Beneficiaries, dr.Deadline, lost
	ev.Of = dr.Of
	s.emit(ev)
}

// lostGPUSeconds is the GPU time r loses if stopped at now, priced as
// the victim search prices it: by the host's cost model when it has one,
// else what r is charged, in GPUs (shares and slices at their fraction),
// times the time since its last checkpoint or its start plus the restart
// overhead. A victim reports the same loss whichever search chose it.
func (s *Scheduler) lostGPUSeconds(r *ledger.Record, now time.Time) float64 {
	if s.cfg.Policy.Cost != nil {
		run := s.books.RunningOf(r)
		return s.cfg.Policy.Cost.Cost(&run, now)
	}
	gpus := float64(r.Charged().MilliGPUs) / gang.MilliGPU
	return gpus * (r.W.Drain.Unsaved(now, r.Started) + s.restartOverhead()).Seconds()
}
