package gang

import "strconv"

// State is where a workload is in its life. The root scheduler drives it
// and checks each move with [CanTransition]; this package only defines
// the states and the legal moves.
//
// The zero State is not a state: a workload enters the scheduler Pending.
type State uint8

// The lifecycle states.
const (
	// Pending waits in its queue for quota and room.
	Pending State = iota + 1
	// Admitted holds GPUs: nominated for nodes (possibly still being
	// drained of victims) or running on them.
	Admitted
	// Draining was asked to stop (preempted) and holds its GPUs until it
	// exits or its deadline passes.
	Draining
	// Finished ended successfully. Terminal.
	Finished
	// Failed ended with an error of its own or lost its nodes and was not
	// requeued. Terminal.
	Failed
	// Drained exited after a drain request, within its deadline. It holds
	// nothing and waits to be requeued or cancelled.
	Drained
	// Killed was force-stopped (its drain deadline passed). It holds
	// nothing and waits to be requeued or cancelled.
	Killed
	// Cancelled was withdrawn by its owner. Terminal.
	Cancelled
)

// String returns the state's lower-case name, or "State(n)".
func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Admitted:
		return "admitted"
	case Draining:
		return "draining"
	case Finished:
		return "finished"
	case Failed:
		return "failed"
	case Drained:
		return "drained"
	case Killed:
		return "killed"
	case Cancelled:
		return "cancelled"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the lifecycle states.
func (s State) Valid() bool { return s >= Pending && s <= Cancelled }

// Terminal reports whether no move leaves s: Finished, Failed, Cancelled.
// Drained and Killed are not terminal, since preempted work is requeued.
func (s State) Terminal() bool {
	return s == Finished || s == Failed || s == Cancelled
}

// HoldsGPUs reports whether a workload in s owns GPUs (or a nomination
// for them) that no one else may take: Admitted and Draining.
func (s State) HoldsGPUs() bool { return s == Admitted || s == Draining }

// CanTransition reports whether a workload may move from one state to
// another. The table, row = from:
//
//	pending   -> admitted, cancelled
//	admitted  -> draining, finished, failed, killed, cancelled, pending
//	draining  -> drained, killed, finished, failed, cancelled, pending
//	drained   -> pending, cancelled
//	killed    -> pending, cancelled
//	finished, failed, cancelled: none (terminal)
//
// Moving back to pending is a requeue: a nomination withdrawn before the
// pods started, a run whose nodes were lost, or preempted work waiting to
// resume from its checkpoint. Admitted may go straight to killed for a
// force-stop without grace. Drained only follows a drain request. Staying
// in the same state is not a transition. Unknown states move nowhere.
func CanTransition(from, to State) bool {
	switch from {
	case Pending:
		return to == Admitted || to == Cancelled
	case Admitted:
		return to == Draining || to == Finished || to == Failed || to == Killed ||
			to == Cancelled || to == Pending
	case Draining:
		return to == Drained || to == Killed || to == Finished || to == Failed ||
			to == Cancelled || to == Pending
	case Drained, Killed:
		return to == Pending || to == Cancelled
	}
	return false
}

// ExitReason is why a workload's run ended, as the host reports it.
type ExitReason uint8

// The exit reasons. The zero ExitReason is not a reason.
const (
	// ExitFinished: the workload completed.
	ExitFinished ExitReason = iota + 1
	// ExitFailed: the workload failed on its own.
	ExitFailed
	// ExitDrained: the workload exited after a drain request.
	ExitDrained
	// ExitKilled: the workload was force-stopped.
	ExitKilled
	// ExitCancelled: the owner withdrew the workload.
	ExitCancelled
	// ExitNodeLost: a node under the workload went down.
	ExitNodeLost
)

// String returns the reason's lower-case name, or "ExitReason(n)".
func (r ExitReason) String() string {
	switch r {
	case ExitFinished:
		return "finished"
	case ExitFailed:
		return "failed"
	case ExitDrained:
		return "drained"
	case ExitKilled:
		return "killed"
	case ExitCancelled:
		return "cancelled"
	case ExitNodeLost:
		return "node-lost"
	}
	return "ExitReason(" + strconv.Itoa(int(r)) + ")"
}

// Valid reports whether r is one of the exit reasons.
func (r ExitReason) Valid() bool { return r >= ExitFinished && r <= ExitNodeLost }

// State returns the state a run ending for reason r records, or the zero
// State for an unknown reason. A lost node records Failed; a scheduler that
// requeues such work moves it to Pending instead, which CanTransition
// allows from Admitted and Draining.
func (r ExitReason) State() State {
	switch r {
	case ExitFinished:
		return Finished
	case ExitFailed, ExitNodeLost:
		return Failed
	case ExitDrained:
		return Drained
	case ExitKilled:
		return Killed
	case ExitCancelled:
		return Cancelled
	}
	return 0
}
