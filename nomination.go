package fleet

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// The scheduler keeps the books of drains with preempt.Drains and follows
// its convention: when a plan is accepted, the beneficiary's quota is
// charged at once and the target GPUs that are free are allocated on the
// fleet for it ("reserved"); the rest are still held by victims and pass to
// the nomination, without ever being free, as each victim exits. On every
// node: allocated = GPUs of running workloads (victims included until they
// exit) + reserved, so no GPU is given twice and none leaks.

// nominate accepts plan for e: victims are told to drain and their GPUs
// nominated for e. It returns false, changing nothing, if the drain books
// refuse the plan.
func (s *Scheduler) nominate(now time.Time, e *entry, plan preempt.Plan, d *Decisions) bool {
	reserve, err := s.drains.Accept(plan, now)
	if err != nil {
		return false
	}
	for _, x := range reserve {
		if err := s.fleet.Allocate(x.Node, x.GPUs); err != nil {
			panic(fmt.Sprintf("fleet: reserving free GPUs for %q: %v", e.w.ID, err))
		}
		s.mirror(s.scratch.Allocate(x.Node, x.GPUs))
	}
	if err := s.tree.AddUsage(e.queue, e.flavor, int64(e.gpus())); err != nil {
		panic(fmt.Sprintf("fleet: quota for the nomination of %q: %v", e.w.ID, err))
	}
	s.targets[e.w.ID] = plan.Target
	for _, v := range plan.Victims {
		x := s.work[v.ID]
		x.beneficiary = e.w.ID
		if x.state == gang.Draining {
			continue // already told to stop; its deadline stands
		}
		x.state, x.deadline, x.reason = gang.Draining, v.Deadline, reasonName(v.Reason)
		s.draining[v.ID] = x
		s.updateCandidate(x)
		d.Drain = append(d.Drain, Drain{ID: v.ID, Deadline: v.Deadline, Reason: x.reason, Beneficiary: e.w.ID, LostGPUSeconds: v.Cost})
		ev := s.event(EventDrainStarted, now, x)
		ev.Reason, ev.Beneficiary, ev.Deadline, ev.LostGPUSeconds = x.reason, e.w.ID, v.Deadline, v.Cost
		s.emit(ev)
	}
	return true
}

func reasonName(r preempt.Reason) string {
	switch r {
	case preempt.InQueue:
		return "in-queue"
	case preempt.Reclaim:
		return "reclaim"
	case preempt.ReclaimWhileBorrowing:
		return "reclaim-while-borrowing"
	case preempt.FairSharing:
		return "fair-sharing"
	}
	return r.String()
}

// releaseRunning returns a running workload's GPUs and quota. GPUs that
// nominations claim stay allocated: they now belong to the beneficiaries.
func (s *Scheduler) releaseRunning(e *entry) {
	if err := s.tree.RemoveUsage(e.queue, e.flavor, int64(e.gpus())); err != nil {
		panic(fmt.Sprintf("fleet: quota usage of %q lost: %v", e.w.ID, err))
	}
	keep := s.drains.Claims(e.w.ID)
	for _, ng := range e.nodes {
		release := ng.GPUs
		for _, k := range keep {
			if k.Node == ng.Node {
				release -= k.GPUs
			}
		}
		if release > 0 {
			if err := s.fleet.Release(ng.Node, release); err != nil {
				panic(fmt.Sprintf("fleet: GPUs of %q lost: %v", e.w.ID, err))
			}
			s.mirror(s.scratch.Release(ng.Node, release))
		}
	}
	s.drains.VictimExited(e.w.ID)
}

// dissolve cancels the nomination of beneficiary b: its reserved GPUs and
// quota are given back. Its victims go on draining (they were already told
// to stop); their GPUs are simply freed when they exit.
func (s *Scheduler) dissolve(now time.Time, b string, why string) {
	gpus := 0
	for _, x := range s.drains.Dissolve(b) {
		if err := s.fleet.Release(x.Node, x.GPUs); err != nil {
			panic(fmt.Sprintf("fleet: releasing nominated GPUs: %v", err))
		}
		s.mirror(s.scratch.Release(x.Node, x.GPUs))
		gpus += x.GPUs
	}
	ev := Event{Kind: EventNominationDissolved, Time: now, Workload: b, GPUs: gpus, Reason: why}
	if e, ok := s.work[b]; ok {
		if err := s.tree.RemoveUsage(e.queue, e.flavor, int64(e.gpus())); err != nil {
			panic(fmt.Sprintf("fleet: quota of a dissolved nomination: %v", err))
		}
		ev.Queue = e.w.Queue
	}
	for _, v := range s.draining {
		if v.beneficiary == b {
			v.beneficiary = ""
		}
	}
	delete(s.targets, b)
	s.emit(ev)
}

// targetOnNode reports whether a nomination's target uses node n.
func targetOnNode(a placement.Assignment, n topology.NodeID) bool {
	return slices.ContainsFunc(a.Pods, func(p placement.Pod) bool { return p.Node == n })
}

// nominatedGPUs is the number of GPUs reserved for beneficiaries now.
func (s *Scheduler) nominatedGPUs() int {
	t := 0
	for n := range topology.NodeID(s.fleet.NumNodes()) {
		t += s.drains.Reserved(n)
	}
	return t
}
