package fleet

import (
	"slices"
	"strings"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
)

// Snapshot returns a deep copy of the scheduler's state: the host may keep
// and change it without touching the scheduler. Besides the figures a
// dashboard reads, it carries everything Restore needs to rebuild the
// scheduler after a restart: every workload's spec, where it runs, its
// last checkpoint, drains (deadline, reason, every beneficiary, the GPUs
// promised) and nominations.
func (s *Scheduler) Snapshot() Snapshot {
	f := s.fleet
	snap := Snapshot{Time: s.now, Fleet: s.fleetView(), DefragSpent: s.defragSpends()}
	snap.Fleet.Occupancy = f.String()
	pendingBy, runningBy := map[quota.NodeID]int{}, map[quota.NodeID]int{}
	moving := 0
	for _, id := range s.sortedIDs() {
		e := s.work[id]
		r := e.rec
		switch {
		case r.State == gang.Pending:
			pendingBy[e.queue]++
			p := PendingView{ID: id, Queue: e.w.Queue, Shape: e.w.Shape, Priority: e.priority,
				GPUs: e.gpus(), Submitted: e.submitted, Seq: e.seq, Spec: e.w.Clone()}
			if n, ok := s.books.Nomination(id); ok {
				p.Nominated = true
				p.Nomination = &NominationView{Pods: s.podViews(e, n.Target), WaitOn: cloneOrNil(n.WaitOn),
					ReadyBy: n.ReadyBy, Seq: n.Seq, Reserved: s.nodeViews(n.Reserved())}
			}
			for _, v := range s.books.ReclaimingFor(id) {
				p.Reclaiming = append(p.Reclaiming, v.W.ID)
			}
			if r := s.lastReserve; r != nil && r.id == id {
				p.Reserved = f.DomainName(r.domain)
			}
			snap.Pending = append(snap.Pending, p)
		case r.State.HoldsGPUs():
			runningBy[e.queue]++
			v := RunningView{ID: id, Queue: e.w.Queue, Shape: e.w.Shape, Class: e.class.Name, Priority: e.priority,
				Flavor: e.w.Flavor, GPUs: e.gpus(), MilliGPUs: r.Charged().MilliGPUs, Started: r.Started, Draining: r.State == gang.Draining,
				Span: f.LevelName(r.Assign.Span), Borrowing: r.Borrowing, LastCheckpoint: r.LastCheckpoint(),
				Submitted: e.submitted, Seq: e.seq, Spec: e.w.Clone(), Pods: s.podViews(e, r.Assign),
				Nodes: s.nodeViews(r.Nodes)}
			v.Flavors = s.flavorViews(r.Flavors())
			v.IdleSince, _ = s.IdleSince(id)
			if e.split != nil {
				v.SplitOf, v.SplitPod = e.split.of, e.split.pod
			}
			for _, lp := range r.Lost {
				p := lp.Pod
				v.Lost = append(v.Lost, LostPodView{Since: lp.Since, Pod: PodAssignment{PodSet: e.w.PodSets[p.PodSet].Name,
					Index: p.Index, Node: f.NodeName(p.Node), GPUs: p.GPUs}})
			}
			if d := r.Drain; d != nil {
				v.Deadline = d.Deadline
				v.Drain = &DrainView{Since: d.Since, Deadline: d.Deadline, Reason: d.Reason,
					Beneficiaries: cloneOrNil(d.Beneficiaries), Live: cloneOrNil(d.Live), KillAsked: d.KillAsked}
				for _, c := range d.Claims() {
					v.Drain.Claims = append(v.Drain.Claims, ClaimView{Beneficiary: c.Beneficiary, Node: f.NodeName(c.Node), GPUs: c.GPUs})
				}
				if len(r.MoveTo.Pods) > 0 {
					v.Drain.MoveTo = s.podViews(e, r.MoveTo)
					moving += r.MoveTo.GPUs()
				}
			}
			snap.Running = append(snap.Running, v)
		}
	}
	snap.Seq = s.seq
	snap.Calendar = s.cal.Snapshot()
	snap.QuotaSchedule, snap.NextQuotaChange = s.sched, s.nextQuota
	for q := range s.overflowing {
		snap.Overflowing = append(snap.Overflowing, s.tree.Name(q))
	}
	slices.Sort(snap.Overflowing)
	for _, ev := range s.events {
		ev.Beneficiaries, ev.Affected = slices.Clone(ev.Beneficiaries), slices.Clone(ev.Affected)
		snap.Undelivered = append(snap.Undelivered, ev)
	}
	snap.Nominated = s.books.ReservedGPUs() + moving
	snap.Quota = s.tree.Spec()
	snap.ConfigQuota = s.configQuota.Spec()
	t := s.tree
	for n := range quota.NodeID(t.NumNodes()) {
		snap.Queues = append(snap.Queues, s.queueView(n, pendingBy[n], runningBy[n]))
	}
	slices.SortStableFunc(snap.Queues, func(a, b QueueView) int { return strings.Compare(a.Name, b.Name) })
	snap.Warm = s.warmViews()
	return snap
}

// podViews names the pods of an assignment.
func (s *Scheduler) podViews(e *entry, a placement.Assignment) []PodAssignment {
	out := make([]PodAssignment, len(a.Pods))
	for i, p := range a.Pods {
		out[i] = s.podView(e, p)
	}
	return out
}

// nodeViews names the nodes of a GPU list.
func (s *Scheduler) nodeViews(list []placement.NodeGPUs) []NodeGPUs {
	out := make([]NodeGPUs, len(list))
	for i, x := range list {
		out[i] = NodeGPUs{Node: s.fleet.NodeName(x.Node), GPUs: x.GPUs}
	}
	return out
}

// cloneOrNil copies a list, keeping "none" as nil so that a restored
// scheduler's snapshot compares equal.
func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
