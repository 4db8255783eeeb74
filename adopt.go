package fleet

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
)

// Adoption is what a host sees of one workload when it rebuilds a
// scheduler from the cluster rather than from a snapshot: its spec, where
// its pods run or wait, and whether it is draining or nominated. A host
// without persisted snapshots restarts by calling Adopt for every workload
// it knows, in this order:
//
//  1. running work (Started set), draining or not, in the order it
//     started (then by ID): its GPUs and quota are charged as they are;
//  2. pending work (Started zero), in the order it was submitted: it queues
//     in that order, and a nominated one gets back the GPUs held for it;
//  3. then SetNodeHealth for every node cordoned or down, and Schedule.
//
// What a cluster cannot show (a drain's reason and beneficiaries, a
// nomination's target, a checkpoint's time) the host keeps where it can
// read it back, such as annotations on the pods. Given all of it, the
// rebuilt scheduler decides what one that never stopped would: no victim
// is drained again, no deadline moves, no extra victim is chosen, and no
// workload is lost.
type Adoption struct {
	// Workload is the spec as submitted; its Drain.LastCheckpoint is the
	// last checkpoint the host learnt.
	Workload gang.Workload
	// Submitted is when the workload was submitted (queue wait is counted
	// from it); zero means Started for running work and now for pending.
	Submitted time.Time
	// Seq is its place in submission order, which breaks ties of equal
	// priority in the queue (a restarted mover, a requeued workload): any
	// increasing numbering the host keeps of the work it submitted, such
	// as its own submission counter or Snapshot's Seq. Zero: after
	// everything adopted or submitted before it.
	Seq uint64
	// Started is when it was admitted; zero means it is pending.
	Started time.Time
	// Pods lists, for running work, every pod that runs, each on its node
	// (in pod set order, as the Admission or a Replacement gave it).
	Pods []PodAssignment
	// Lost lists the pods of a running gang that survives node loss whose
	// node went down, with when: they wait for a replacement (Replace) and
	// hold no GPUs.
	Lost []LostPodView
	// Shrinking lists pods a running elastic workload is giving up (a
	// Drain with Of set): each drains on its own, under the ID the Drain
	// gave it, while the workload runs on with its other pods.
	Shrinking []ShrinkingPod
	// SplitOf and SplitPod are set for a pod an elastic workload gave up
	// (a Drain's Of and Pod) that drains on after that workload ended:
	// Workload is then that pod alone, under the Drain's ID. While the
	// workload runs, list the pod in its Shrinking instead.
	SplitOf  string
	SplitPod PodAssignment
	// Drain is set when the host is draining the workload (it was sent
	// SIGTERM, or its pods are terminating).
	Drain *AdoptedDrain
	// Flavors, for running work asking named resources of a queue whose
	// resource groups split them, is the flavor each pod set's named
	// resources are charged in, as RunningView.Flavors lists them (the
	// Admission's podSetAssignments[].flavors). nil: chosen as the
	// assigner would on the quota usage of the moment, each pod set that
	// fits nowhere charged in its group's first flavor.
	Flavors []map[string]string
	// Borrowing is what the workload's Admission said. The scheduler also
	// counts it borrowing when its queue is above its nominal quota once
	// it is charged.
	Borrowing bool
	// IdleSince is since when the host has seen it idle (ReportUsage);
	// zero: busy or never reported.
	IdleSince time.Time
	// Nominated is, for pending work, the pods of its nomination (the
	// node of every pod): the GPUs its victims free, or that are already
	// held for it. They must be free or held by victims that list it in
	// Drain.Live. Empty: no nomination.
	Nominated []PodAssignment
	// Reserved is, for a pending gang, the domain Snapshot's
	// PendingView.Reserved named: the hold the last cycle kept for it.
	// Empty: the next cycle chooses afresh, which may move the hold.
	Reserved string
	// NominatedReadyBy is the nomination's ReadyBy as Decisions.Nominate
	// gave it. Zero: the latest deadline of the drains it waits on, or
	// now; a host that does not keep it may see an inference queue's
	// overflow reported later than before the restart.
	NominatedReadyBy time.Time
}

// AdoptedDrain is a drain in progress, as the host was told it (Drain) and
// has followed it since.
type AdoptedDrain struct {
	// Since is when the drain started; Deadline when the host must kill
	// it (a Kubernetes pod's deletionTimestamp).
	Since, Deadline time.Time
	Reason          gang.DrainReason
	// Beneficiaries is every workload it was drained for (the Drain's);
	// Live the ones that still count on it: every beneficiary that has
	// not ended since and was not named by a nomination-dissolved event
	// (one that started counts on a victim freeing its quota until that
	// victim exits).
	Beneficiaries []string
	Live          []string
	// KillAsked is when the host was first asked to kill it (zero: not
	// yet).
	KillAsked time.Time
	// MoveTo, for a defragmentation move, is the place the Drain reserved
	// for its restart (the Drain's MoveTo, pod by pod).
	MoveTo []PodAssignment
	// Claims are its GPUs promised to nominations, per node, as a
	// Snapshot's DrainView lists them; each names one of Live. Empty: the
	// nominations adopted after it take its GPUs in ID order of the
	// victims on their nodes, which may differ from the original split
	// when several beneficiaries share one victim.
	Claims []ClaimView
}

// ShrinkingPod is one pod an elastic workload gives up, draining.
type ShrinkingPod struct {
	Pod   PodAssignment // the pod, as the workload numbers it
	Drain AdoptedDrain  // the drain the host was told of
}

// Adopt records a workload as the host sees it: one that runs (started
// outside the scheduler, or before a restart), possibly draining, with
// pods lost or being given up, or one that is pending, possibly
// nominated. See Adoption for the order of calls that rebuilds a
// scheduler after a restart. It is refused whole, changing nothing, if
// the workload is invalid or a duplicate, started in the future, the
// nodes cannot hold it, a drain does not add up, or a nomination's GPUs
// are neither free nor draining for it. Running work beyond what its
// queue could reach today (its quota lowered since it started) is adopted
// all the same: it runs, and reclaim may take its borrowed part back.
func (s *Scheduler) Adopt(now time.Time, a Adoption) error {
	if err := s.tick("adopt", now); err != nil {
		return err
	}
	id := a.Workload.ID
	if a.Started.IsZero() {
		return s.adoptPending(now, a)
	}
	if a.Started.After(now) {
		return refuse("adopt", id, ErrInvalid, "started %s, after now %s", a.Started.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if len(a.Nominated) > 0 {
		return refuse("adopt", id, ErrInvalid, "a running workload has no nomination")
	}
	submitted := a.Submitted
	if submitted.IsZero() {
		submitted = a.Started
	}
	if submitted.After(a.Started) {
		return refuse("adopt", id, ErrInvalid, "submitted %s, after it started", submitted.Format(time.RFC3339))
	}
	e, err := s.resolve("adopt", a.Workload)
	if err != nil {
		return err
	}
	pods := slices.Clone(a.Pods)
	for _, lp := range a.Lost {
		if lp.Since.Before(a.Started) || lp.Since.After(now) {
			return refuse("adopt", id, ErrInvalid, "pod %s[%d] lost at %s, outside its run", lp.Pod.PodSet, lp.Pod.Index, lp.Since.Format(time.RFC3339))
		}
		pods = append(pods, lp.Pod)
	}
	for _, sp := range a.Shrinking {
		pods = append(pods, sp.Pod)
	}
	as, err := s.assignment("adopt", e, pods)
	if err != nil {
		return err
	}
	switch {
	case len(a.Shrinking) > 0 && !ledger.Elastic(&e.w):
		return refuse("adopt", id, ErrInvalid, "only an elastic workload gives up pods")
	case a.SplitOf != "" && (a.Drain == nil || len(a.Pods) != 1):
		return refuse("adopt", id, ErrInvalid, "a pod split off %q is one pod, draining", a.SplitOf)
	case a.SplitOf != "" && s.work[a.SplitOf] != nil:
		return refuse("adopt", id, ErrInvalid, "%q still runs: list the pod in its Shrinking", a.SplitOf)
	}
	if err := s.checkAdoptedDrain(now, id, a.Started, a.Drain); err != nil {
		return err
	}
	for _, sp := range a.Shrinking {
		if err := s.checkAdoptedDrain(now, id, a.Started, &sp.Drain); err != nil {
			return err
		}
	}
	var moveTo placement.Assignment
	if a.Drain != nil && len(a.Drain.MoveTo) > 0 {
		if moveTo, err = s.assignment("adopt", e, a.Drain.MoveTo); err != nil {
			return err
		}
	}
	rec, err := s.books.Track(&e.w, e.queue, e.flavor, e.policy())
	if err != nil {
		panic("fleet: a resolved workload refused by the ledger: " + err.Error())
	}
	rec.Submitted = submitted
	if err := s.setFlavors("adopt", e, a.Flavors); err != nil {
		s.books.Forget(id)
		return err
	}
	kept, lost := splitLost(e, as, a.Lost)
	if err := s.books.AdmitDegraded(id, kept, lost, a.Started); err != nil {
		s.books.Forget(id)
		return &Error{Op: "adopt", Workload: id, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	if a.Borrowing {
		s.books.RestoreBorrowing(id, true)
	}
	if a.SplitOf != "" {
		s.books.RestoreSplit(id, a.SplitOf)
		e.split = &splitPod{of: a.SplitOf, pod: a.SplitPod}
	}
	// From here on every step was checked above or cannot fail on a
	// holder just admitted; a failure is undone by ending the holder.
	undo := func(err error) error {
		if _, _, xerr := s.books.Exit(id, gang.ExitCancelled); xerr != nil {
			panic("fleet: undoing an adoption: " + xerr.Error())
		}
		return &Error{Op: "adopt", Workload: id, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	e.rec, e.seq, e.submitted = rec, s.adoptSeq(a.Seq), submitted
	s.work[id] = e
	var splits []string
	for _, sp := range a.Shrinking {
		split, err := s.adoptShrinking(e, sp)
		if err != nil {
			for _, c := range slices.Backward(splits) {
				_, _, _ = s.books.Exit(c, gang.ExitCancelled)
				delete(s.work, c)
			}
			delete(s.work, id)
			return undo(err)
		}
		splits = append(splits, split)
	}
	if a.Drain != nil || len(a.Shrinking) > 0 {
		s.adoptedDrains = true
	}
	if a.Drain != nil {
		claims, err := s.adoptedClaims(id, a.Drain.Claims)
		if err != nil {
			delete(s.work, id)
			return undo(err)
		}
		if err := s.books.RestoreDrain(id, adoptedDrain(a.Drain), claims); err != nil {
			delete(s.work, id)
			return undo(err)
		}
		if len(moveTo.Pods) > 0 {
			if err := s.books.ReserveMove(id, moveTo); err != nil {
				delete(s.work, id)
				return undo(err)
			}
		}
	}
	if !a.IdleSince.IsZero() {
		s.noteIdle(e, a.IdleSince)
	}
	s.books.AdoptServed(id)
	s.advance(now)
	return nil
}

// adoptSeq is the submission counter of an adopted workload: the host's
// own when it gives one (the scheduler's counter then continues above
// it), else the next.
func (s *Scheduler) adoptSeq(seq uint64) uint64 {
	if seq == 0 {
		s.seq++
		return s.seq
	}
	s.seq = max(s.seq, seq)
	return seq
}

// adoptShrinking splits one pod a running elastic workload gives up off
// it, draining under the split's ID.
func (s *Scheduler) adoptShrinking(parent *entry, sp ShrinkingPod) (string, error) {
	ps := slices.IndexFunc(parent.w.PodSets, func(x gang.PodSet) bool { return x.Name == sp.Pod.PodSet })
	i := slices.IndexFunc(parent.rec.Assign.Pods, func(p placement.Pod) bool { return p.PodSet == ps && p.Index == sp.Pod.Index })
	if ps < 0 || i < 0 {
		return "", fmt.Errorf("pod %s[%d] it gives up is not one of its pods", sp.Pod.PodSet, sp.Pod.Index)
	}
	p := parent.rec.Assign.Pods[i]
	spec := splitSpec(&parent.w, ps, sp.Pod.Index)
	ce := &entry{w: spec, queue: parent.queue, flavor: parent.flavor, priority: parent.priority, class: parent.class,
		submitted: parent.submitted, seq: parent.seq,
		split: &splitPod{of: parent.w.ID, pod: PodAssignment{PodSet: sp.Pod.PodSet, Index: sp.Pod.Index,
			Node: s.fleet.NodeName(p.Node), GPUs: p.GPUs}}}
	rec, err := s.books.Split(parent.w.ID, p, &ce.w)
	if err != nil {
		return "", err
	}
	ce.rec = rec
	s.work[spec.ID] = ce
	claims, err := s.adoptedClaims(spec.ID, sp.Drain.Claims)
	if err != nil {
		return spec.ID, err
	}
	if err := s.books.RestoreDrain(spec.ID, adoptedDrain(&sp.Drain), claims); err != nil {
		return spec.ID, err
	}
	return spec.ID, nil
}

// adoptPending queues a pending workload with its original submission
// time, and reopens its nomination if the host saw one.
func (s *Scheduler) adoptPending(now time.Time, a Adoption) error {
	id := a.Workload.ID
	switch {
	case len(a.Pods) > 0 || len(a.Lost) > 0 || len(a.Shrinking) > 0 || a.Drain != nil:
		return refuse("adopt", id, ErrInvalid, "a pending workload (no start time) runs no pods and drains nothing")
	case a.Submitted.After(now):
		return refuse("adopt", id, ErrInvalid, "submitted %s, after now %s", a.Submitted.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	submitted := a.Submitted
	if submitted.IsZero() {
		submitted = now
	}
	e, err := s.resolve("adopt", a.Workload)
	if err != nil {
		return err
	}
	var target placement.Assignment
	if len(a.Nominated) > 0 {
		if target, err = s.assignment("adopt", e, a.Nominated); err != nil {
			return err
		}
	}
	var held *reservation
	if a.Reserved != "" {
		if held, err = s.reservationAt(e, a.Reserved); err != nil {
			return refuse("adopt", id, ErrInvalid, "Reserved %q: %v", a.Reserved, err)
		}
	}
	seq := s.seq
	s.trackAs(e, submitted, a.Seq)
	if len(target.Pods) > 0 {
		if err := s.books.AdoptNomination(id, target, now, a.NominatedReadyBy); err != nil {
			s.dequeue(e)
			s.books.Forget(id)
			delete(s.work, id)
			s.seq = seq
			return &Error{Op: "adopt", Workload: id, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
	}
	if held != nil {
		s.lastReserve = held
	}
	s.books.AdoptServed(id)
	e.reclaiming = len(s.books.ReclaimingFor(id)) > 0
	s.advance(now)
	return nil
}

// checkAdoptedDrain checks a drain a host reports against the run it
// stops.
func (s *Scheduler) checkAdoptedDrain(now time.Time, id string, started time.Time, d *AdoptedDrain) error {
	if d == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return refuse("adopt", id, ErrInvalid, "drain: "+format, args...)
	}
	switch {
	case !d.Reason.Valid():
		return bad("reason %d is none of gang's drain reasons", d.Reason)
	case d.Since.Before(started) || d.Since.After(now):
		return bad("started %s, outside the run (%s to now %s)", d.Since.Format(time.RFC3339), started.Format(time.RFC3339), now.Format(time.RFC3339))
	case !d.Deadline.After(d.Since):
		return bad("deadline %s is not after its start %s", d.Deadline.Format(time.RFC3339), d.Since.Format(time.RFC3339))
	case !d.KillAsked.IsZero() && (d.KillAsked.Before(d.Deadline) || d.KillAsked.After(now)):
		return bad("kill asked at %s, before its deadline or after now", d.KillAsked.Format(time.RFC3339))
	}
	for _, b := range d.Live {
		if !slices.Contains(d.Beneficiaries, b) {
			return bad("live beneficiary %q is not one of its beneficiaries", b)
		}
		if b == id {
			return bad("it cannot drain for itself")
		}
	}
	return nil
}

// adoptedClaims turns the claims a host kept into the ledger's.
func (s *Scheduler) adoptedClaims(id string, views []ClaimView) ([]ledger.Claim, error) {
	var out []ledger.Claim
	for _, c := range views {
		n, ok := s.fleet.Node(c.Node)
		if !ok {
			return nil, fmt.Errorf("%w: drain of %q claims GPUs on node %q", ErrUnknownNode, id, c.Node)
		}
		out = append(out, ledger.Claim{Beneficiary: c.Beneficiary, Node: n, GPUs: c.GPUs})
	}
	return out, nil
}

func adoptedDrain(d *AdoptedDrain) ledger.Drain {
	return ledger.Drain{Since: d.Since, Deadline: d.Deadline, Reason: d.Reason, KillAsked: d.KillAsked,
		Beneficiaries: d.Beneficiaries, Live: d.Live}
}

// AdoptCalendar puts back the calendar a host kept (Snapshot().Calendar:
// approved bookings, open proposals and the decision log) on a scheduler
// it rebuilds by adoption: the cluster does not show bookings, so the host
// persists them itself. It must come first, before any Adopt, and is
// refused whole (typed error) on a scheduler that already tracks work or
// has a calendar of its own, or when the state does not hold on this
// fleet and quota tree.
func (s *Scheduler) AdoptCalendar(now time.Time, st calendar.State) error {
	if err := s.tick("adopt-calendar", now); err != nil {
		return err
	}
	if len(s.work) > 0 || len(s.cal.Bookings()) > 0 {
		return refuse("adopt-calendar", "", ErrBadState, "the calendar comes back first, before any workload")
	}
	if st.Time.After(now) {
		return refuse("adopt-calendar", "", ErrInvalid, "calendar taken at %s, after now %s", st.Time.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	cal, err := calendar.Restore(calendar.Config{Fleet: s.fleet, Quota: s.tree, Schedule: s.sched}, st)
	if err != nil {
		return &Error{Op: "adopt-calendar", Detail: "calendar", Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	s.cal = cal
	s.advance(now)
	return nil
}
