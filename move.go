package fleet

import (
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Moves. A defragmentation move drains a workload and, in the same
// decision, reserves its new place (Drain.MoveTo): the GPUs are its own
// from then on, so when it exits drained or killed it is not forgotten
// but pending again with its new place nominated, and the next cycle
// admits it there, to restart from its last checkpoint. Any other end
// (finished, failed, cancelled) gives the place back. So does the place's
// node leaving service before the mover has left, but the mover is still
// not forgotten: when it exits drained or killed it is pending again with
// no place held, and a cycle places it wherever it fits. The host never
// resubmits a mover.

// requeueMover turns the exit of a mover that drained or was killed into
// its restart at its reserved place, and reports whether it did.
func (s *Scheduler) requeueMover(now time.Time, e *entry, how gang.ExitReason) bool {
	if how != gang.ExitDrained && how != gang.ExitKilled || !s.books.Moving(e.w.ID) {
		return false
	}
	placed := len(e.rec.MoveTo.Pods) > 0
	if err := s.books.Requeue(e.w.ID, now); err != nil {
		panic("fleet: requeueing a checked mover: " + err.Error())
	}
	s.enqueue(e)
	// What the host reported of the run that stopped says nothing of the
	// one that starts at the new place.
	s.idle.forget(e.w.ID)
	// A restart is not a wait in the queue: it counts from its exit.
	e.submitted, e.rec.Submitted = now, now
	e.wait = waitVerdict{}
	if placed {
		e.wait = waitVerdict{cycle: s.cycles, at: now, reason: WaitVictims}
	}
	return true
}

// dropMovesTo gives back the places reserved on node n, which takes no
// new work.
func (s *Scheduler) dropMovesTo(now time.Time, n topology.NodeID) {
	for _, id := range s.books.MovesOn(n) {
		gpus := s.books.MoveGPUs(id)
		s.books.DropMove(id)
		ev := Event{Kind: EventNominationDissolved, Time: now, Workload: id, GPUs: gpus,
			Reason: "move target " + s.fleet.NodeName(n) + " out of service; it queues again once it has exited"}
		if e, ok := s.work[id]; ok {
			ev.Queue = e.w.Queue
		}
		s.emit(ev)
	}
}
