package gang

import (
	"fmt"
	"strconv"
)

// DrainReason says why a running workload was asked to drain.
type DrainReason uint8

// The drain reasons. The zero DrainReason is not a reason.
const (
	// DrainInQueue: preempted by higher-priority work of its own queue
	// (Kueue's withinClusterQueue).
	DrainInQueue DrainReason = iota + 1
	// DrainReclaim: its queue borrowed, and the lender took its quota back
	// while staying within its own (Kueue's InCohortReclamation).
	DrainReclaim
	// DrainReclaimWhileBorrowing: taken by a preemptor that itself borrows
	// (Kueue's InCohortReclaimWhileBorrowing).
	DrainReclaimWhileBorrowing
	// DrainFairSharing: taken by fair-sharing preemption.
	DrainFairSharing
	// DrainHost: the host asked for it (maintenance, an operator).
	DrainHost
	// DrainBooking: it runs in a block an approved booking takes at its
	// start (capacity calendar).
	DrainBooking
	// DrainIdle: it sat idle past its class's idle limit (a notebook
	// nobody uses), and policy reclaims idle work.
	DrainIdle
	// DrainDefrag: moved to open a whole domain for a gang that free
	// capacity scattered in pieces could not hold (defragmentation); it
	// restarts elsewhere from its checkpoint.
	DrainDefrag
	// DrainHotSwap: its node is the replacement for a lost node of a
	// higher-priority gang that survives the loss of a node, and no free
	// node in the domain the gang's topology request keeps it in had room.
	DrainHotSwap
)

// Valid reports whether r is one of the drain reasons.
func (r DrainReason) Valid() bool { return r >= DrainInQueue && r <= DrainHotSwap }

// String returns the reason's name, or "DrainReason(n)".
func (r DrainReason) String() string {
	switch r {
	case DrainInQueue:
		return "in-queue"
	case DrainReclaim:
		return "reclaim"
	case DrainReclaimWhileBorrowing:
		return "reclaim-while-borrowing"
	case DrainFairSharing:
		return "fair-sharing"
	case DrainHost:
		return "host"
	case DrainBooking:
		return "booking"
	case DrainIdle:
		return "idle"
	case DrainDefrag:
		return "defrag"
	case DrainHotSwap:
		return "hot-swap"
	}
	return "DrainReason(" + strconv.Itoa(int(r)) + ")"
}

// MarshalText encodes a reason by name; an unknown reason is refused.
func (r DrainReason) MarshalText() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("%w: cannot encode %v", ErrInvalid, r)
	}
	return []byte(r.String()), nil
}

// UnmarshalText decodes a reason name.
func (r *DrainReason) UnmarshalText(text []byte) error {
	for v := DrainInQueue; v.Valid(); v++ {
		if string(text) == v.String() {
			*r = v
			return nil
		}
	}
	return fmt.Errorf("%w: unknown drain reason %q", ErrInvalid, text)
}
