package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
)

// Restore builds a scheduler from cfg and a Snapshot another scheduler
// with the same config took: after a restart, the host gets back every
// pending workload in its queue order, every running one where it runs,
// with its last checkpoint, every drain with its original deadline,
// reason, beneficiaries and kill requests, and every nomination with the
// GPUs held for it. So a restart never drains a victim again, never
// extends a deadline and never picks an extra victim: the restored
// scheduler makes the same decisions as one that never stopped.
//
// Work that ended while the host was down is then reported with Exited,
// and work started outside the scheduler with Adopt. A snapshot that does
// not add up (a workload the config refuses, GPUs a node does not have,
// a nomination without its victims) is refused whole with a typed error
// wrapping ErrInvalid; a field the scheduler could not have written (an
// entry whose ID is not its spec's, a spec's queue or class changed under
// running work, an instant after the snapshot's Time, a drain deadline
// before its start or more than MaxGrace after it, an unknown split
// parent or event kind) is a *SnapshotError naming it. A zero Snapshot is
// refused too, and so is a cfg whose quota differs from the Config the
// snapshot was taken under (the snapshot's quota in force, live edits
// included, would silently replace the change: restore with the earlier
// Config, then SetQueue the change).
func Restore(cfg Config, snap Snapshot) (*Scheduler, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.restorable(snap); err != nil {
		return nil, err
	}
	if err := s.restore(snap); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Scheduler) restore(snap Snapshot) error {
	bad := func(id string, format string, args ...any) error {
		return refuse("restore", id, ErrInvalid, format, args...)
	}
	if err := checkSnapshot(snap); err != nil {
		return err
	}
	// Live edits first (quotas, nodes in service): the calendar's promise
	// is checked against the quotas in force.
	if err := s.restoreLive(snap); err != nil {
		return err
	}
	if err := s.restoreWarm(snap); err != nil {
		return err
	}
	if snap.QuotaSchedule != nil {
		if err := s.checkScheduleNames("restore", snap.QuotaSchedule); err != nil {
			return err
		}
	}
	cal, err := calendar.Restore(calendar.Config{Fleet: s.fleet, Quota: s.tree, Schedule: snap.QuotaSchedule}, snap.Calendar)
	if err != nil {
		return &Error{Op: "restore", Detail: "calendar", Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	s.cal = cal
	s.sched, s.nextQuota = snap.QuotaSchedule, snap.NextQuotaChange
	if i, field, detail := s.setDefragSpent(snap.Time, snap.DefragSpent); field != "" {
		return &SnapshotError{Field: fmt.Sprintf("DefragSpent[%d].%s", i, field), Detail: detail}
	}
	for _, name := range snap.Overflowing {
		q, ok := s.tree.Node(name)
		if !ok || !s.tree.IsQueue(q) {
			return bad("", "overflowing queue %q unknown", name)
		}
		s.overflowing[q] = true
	}
	entries := map[string]*entry{}
	// Running work first, in ID order; its drains after every holder is
	// back, since claims refer to nominations restored last.
	for i, v := range snap.Running {
		e, err := s.resolve("restore", v.Spec)
		if err != nil {
			return err
		}
		if _, inCohort := s.tree.Parent(e.queue); v.Borrowing && !inCohort {
			return &SnapshotError{Field: fmt.Sprintf("Running[%d].Borrowing", i), Workload: v.ID,
				Detail: fmt.Sprintf("true, but queue %q is in no cohort to borrow from", v.Queue)}
		}
		if v.Started.After(snap.Time) {
			return bad(v.ID, "started after the snapshot was taken")
		}
		pods := slices.Clone(v.Pods)
		for _, lp := range v.Lost {
			pods = append(pods, lp.Pod)
		}
		a, err := s.assignment("restore", e, pods)
		if err != nil {
			return err
		}
		rec, err := s.books.Track(&e.w, e.queue, e.flavor, e.policy())
		if err != nil {
			return bad(v.ID, "%v", err)
		}
		rec.Submitted = v.Submitted
		if err := s.setFlavors("restore", e, v.Flavors); err != nil {
			return err
		}
		// Pods lost under a gang that survives it hold no GPUs: their
		// node is down, or back and holding other work.
		a, lost := splitLost(e, a, v.Lost)
		if err := s.books.AdmitDegraded(v.ID, a, lost, v.Started); err != nil {
			return &Error{Op: "restore", Workload: v.ID, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
		s.books.RestoreBorrowing(v.ID, v.Borrowing)
		if v.SplitOf != "" {
			s.books.RestoreSplit(v.ID, v.SplitOf)
			e.split = &splitPod{of: v.SplitOf, pod: v.SplitPod}
		}
		e.rec, e.submitted, e.seq = rec, v.Submitted, v.Seq
		s.work[v.ID] = e
		entries[v.ID] = e
		if !v.IdleSince.IsZero() {
			s.noteIdle(e, v.IdleSince)
		}
	}
	for _, v := range snap.Pending {
		e, err := s.resolve("restore", v.Spec)
		if err != nil {
			return err
		}
		rec, err := s.books.Track(&e.w, e.queue, e.flavor, e.policy())
		if err != nil {
			return bad(v.ID, "%v", err)
		}
		rec.Submitted = v.Submitted
		e.rec, e.submitted, e.seq = rec, v.Submitted, v.Seq
		s.work[v.ID] = e
		s.enqueue(e)
		entries[v.ID] = e
	}
	for _, v := range snap.Running {
		d := v.Drain
		if d == nil {
			continue
		}
		var claims []ledger.Claim
		for _, c := range d.Claims {
			n, ok := s.fleet.Node(c.Node)
			if !ok {
				return refuse("restore", v.ID, ErrUnknownNode, "%q", c.Node)
			}
			claims = append(claims, ledger.Claim{Beneficiary: c.Beneficiary, Node: n, GPUs: c.GPUs})
		}
		dr := ledger.Drain{Since: d.Since, Deadline: d.Deadline, Reason: d.Reason, KillAsked: d.KillAsked,
			Beneficiaries: d.Beneficiaries, Live: d.Live}
		if err := s.books.RestoreDrain(v.ID, dr, claims); err != nil {
			return bad(v.ID, "%v", err)
		}
		if len(d.MoveTo) > 0 {
			to, err := s.assignment("restore", s.work[v.ID], d.MoveTo)
			if err != nil {
				return err
			}
			if err := s.books.ReserveMove(v.ID, to); err != nil {
				return bad(v.ID, "%v", err)
			}
		}
	}
	for i, v := range snap.Pending {
		entries[v.ID].reclaiming = len(v.Reclaiming) > 0
		if v.Reserved == "" {
			continue
		}
		r, err := s.reservationAt(entries[v.ID], v.Reserved)
		if err != nil {
			return &SnapshotError{Field: fmt.Sprintf("Pending[%d].Reserved", i), Workload: v.ID, Detail: err.Error()}
		}
		s.lastReserve = r
	}
	noms := slices.Clone(snap.Pending)
	slices.SortFunc(noms, func(a, b PendingView) int { return cmp.Compare(seqOf(a.Nomination), seqOf(b.Nomination)) })
	for _, v := range noms {
		n := v.Nomination
		if n == nil {
			continue
		}
		e := entries[v.ID]
		target, err := s.assignment("restore", e, n.Pods)
		if err != nil {
			return err
		}
		var reserved []placement.NodeGPUs
		for _, x := range n.Reserved {
			node, ok := s.fleet.Node(x.Node)
			if !ok {
				return refuse("restore", v.ID, ErrUnknownNode, "%q", x.Node)
			}
			reserved = append(reserved, placement.NodeGPUs{Node: node, GPUs: x.GPUs})
		}
		if err := s.books.RestoreNomination(v.ID, target, reserved, n.WaitOn, n.ReadyBy, n.Seq); err != nil {
			return bad(v.ID, "%v", err)
		}
	}
	for _, h := range snap.Fleet.Unhealthy {
		n, ok := s.fleet.Node(h.Node)
		if !ok {
			return refuse("restore", "", ErrUnknownNode, "%q", h.Node)
		}
		if err := s.books.SetHealth(n, h.Health); err != nil {
			return &Error{Op: "restore", Detail: "node " + h.Node, Err: ErrInvalidHealth}
		}
	}
	if err := s.books.CheckInvariants(); err != nil {
		return bad("", "the snapshot does not add up: %v", err)
	}
	s.seq = max(s.seq, snap.Seq)
	for _, ev := range snap.Undelivered {
		ev.Beneficiaries, ev.Affected = slices.Clone(ev.Beneficiaries), slices.Clone(ev.Affected)
		s.events = append(s.events, ev)
	}
	s.now = snap.Time
	return nil
}

// splitLost takes the pods a snapshot lists as lost out of a, as the
// ledger's lost pods, each since when it was lost.
func splitLost(e *entry, a placement.Assignment, views []LostPodView) (placement.Assignment, []ledger.LostPod) {
	if len(views) == 0 {
		return a, nil
	}
	since := map[[2]int]time.Time{}
	for _, lp := range views {
		ps := slices.IndexFunc(e.w.PodSets, func(x gang.PodSet) bool { return x.Name == lp.Pod.PodSet })
		since[[2]int{ps, lp.Pod.Index}] = lp.Since
	}
	kept := a
	kept.Pods = nil
	var lost []ledger.LostPod
	for _, p := range a.Pods {
		if t, ok := since[[2]int{p.PodSet, p.Index}]; ok {
			lost = append(lost, ledger.LostPod{Pod: p, Since: t})
			continue
		}
		kept.Pods = append(kept.Pods, p)
	}
	return kept, lost
}

func seqOf(n *NominationView) uint64 {
	if n == nil {
		return 0
	}
	return n.Seq
}

// Fork returns an independent copy of the scheduler, for what-if
// questions (price a booking, try a quota edit, replay a day): a
// Restore of its own Snapshot with the same config, sharing nothing with
// it, so no call on the fork changes the original.
func (s *Scheduler) Fork() (*Scheduler, error) { return Restore(s.cfg, s.Snapshot()) }
