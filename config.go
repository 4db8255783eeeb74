package fleet

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// DefaultGrace is the drain deadline of a victim whose workload and
// priority class name none: SIGTERM, then 120 s to checkpoint and exit.
const DefaultGrace = 120 * time.Second

// MaxGrace bounds every drain grace (a class's, a workload's, an idle
// rule's, one RequestDrain asks for): a week, far beyond any checkpoint
// contract. So every drain deadline falls within MaxGrace of its start,
// and Restore refuses a snapshot whose drain does not.
const MaxGrace = 7 * 24 * time.Hour

// Config is everything New needs. It is plain data, validated whole.
type Config struct {
	Topology topology.Spec // the physical fleet: levels, nodes, flavors
	Quota    quota.Spec    // the quota tree: cohorts, queues, flavors and rules
	// Classes are the priority classes workloads name, e.g.
	// prod-inference > reserved-research > preemptible-batch.
	Classes []PriorityClass
	Policy  Policy // the cycle's knobs: reservations, defragmentation, sharing, overflow
}

// PriorityClass gives a workload its priority and drain defaults.
type PriorityClass struct {
	Name  string // what workloads name in PriorityClass
	Value int32  // the priority: higher preempts lower
	// Grace is the drain deadline of its victims; 0 means DefaultGrace.
	// At most MaxGrace.
	Grace time.Duration
	// MinRuntime protects just-started work from flapping: a workload of
	// this class is not a victim before it ran this long.
	MinRuntime time.Duration
	// EvictWithoutCheckpoint lets the scheduler preempt workloads of this
	// class that are not preemptible (do not checkpoint). By default they
	// are never victims.
	EvictWithoutCheckpoint bool
}

// Policy holds the knobs a host may turn. The zero value is the default.
type Policy struct {
	// FairSharing orders equal-priority work by the queues' dominant
	// share and enables fair-sharing preemption.
	FairSharing bool
	// FairSharingStrategies are Kueue's fair-sharing preemption strategies,
	// in the order tried; nil means both (LessThanOrEqualToFinalShare,
	// then LessThanInitialShare), as in Kueue.
	FairSharingStrategies []preempt.FairSharingStrategy
	// NoPreemption turns preemption off entirely.
	NoPreemption bool
	// NoReservation turns off holding a domain for the highest-priority
	// blocked gang (starvation protection).
	NoReservation bool
	// Scorer breaks ties between equally good nodes (see placement.Scorer).
	Scorer placement.Scorer
	// Cost prices the work a victim loses (see preempt.CostModel); nil
	// means GPUs x time since its last checkpoint plus RestartOverhead.
	Cost preempt.CostModel
	// Order decides which pending workload a cycle visits first; nil
	// means the default order (see Scheduler.Schedule).
	Order QueueOrder
	// RestartOverhead is the work a preempted job redoes on restart,
	// counted in its cost; 0 means 3 minutes.
	RestartOverhead time.Duration
	// OverflowAfter is how long a replica of an inference queue within its
	// guarantee may wait for capacity before Decisions.Overflow lists its
	// queue (the "capacity back" target); 0 means DefaultOverflowAfter.
	OverflowAfter time.Duration
	// DefragBudget bounds defragmentation: the GPU-hours of work (since the
	// movers' last checkpoints, plus restarts) that moves may cost per hour.
	// 0 turns automatic defragmentation off; PlanDefrag and Defragment
	// still work on request.
	DefragBudget float64
	// HotSwapWait is how long a gang that survives the loss of a node
	// (gang.DrainContract.SurvivesNodeLoss) waits for a replacement node
	// before it fails whole; 0 means DefaultHotSwapWait.
	HotSwapWait time.Duration
	// IdleReclaim drains running work its host reports idle past a limit
	// per priority class (see IdleRule and Scheduler.ReportUsage).
	IdleReclaim []IdleRule
	// WaitLimit bounds how long pending work waits behind running work of
	// its own priority and queue: once it has waited this long since it
	// was submitted, a queue whose rule is
	// quota.WithinQueueLowerOrNewerEqualPriority lets it evict runs of
	// its priority that were queued before it, as it already may those
	// queued after it (MinRuntime and the drain contract still protect
	// them). Without it a large gang waits until enough older runs of its
	// queue end on their own, while smaller work keeps starting. Kueue
	// has no such limit; 0 turns it off, and ReferenceConfig sets
	// ReferenceWaitLimit.
	WaitLimit time.Duration
}

// DefaultOverflowAfter is the default Policy.OverflowAfter.
const DefaultOverflowAfter = 5 * time.Minute

// DefaultHotSwapWait is the default Policy.HotSwapWait.
const DefaultHotSwapWait = 10 * time.Minute

// ReferenceWaitLimit is ReferenceConfig's Policy.WaitLimit: in the
// simulated month of the reference fleet it keeps the 90th percentile of
// research gangs of 65-512 GPUs near 10 h, where the largest of them
// otherwise wait for the evening's inference ramp-down and the end of
// research's older runs (docs/month.md).
const ReferenceWaitLimit = 10 * time.Hour

// QueueOrder orders pending work for a host that wants its own policy
// (say, smallest gang first inside a priority). Compare returns a negative
// number when a goes first, 0 when it has no preference; the scheduler
// breaks remaining ties by submission order, then ID, so the order is
// total. It must be deterministic, cheap, and must not modify its
// arguments.
type QueueOrder interface {
	Compare(a, b *Pending) int
}

// Pending is what a QueueOrder sees of a pending workload. W is the
// scheduler's copy: read it, never change it.
type Pending struct {
	W         *gang.Workload // the workload as submitted (the scheduler's copy)
	Priority  int32          // resolved from its priority class
	Submitted time.Time      // when Submit accepted it
	// DominantShare is its queue's fair-sharing share (0 unless the
	// policy enables fair sharing).
	DominantShare float64
}

// Sentinel errors of the scheduler's host-facing calls. Each refused call
// returns an error wrapping one of them (and, where it applies, the lower
// package's own typed error), and leaves the scheduler unchanged.
var (
	ErrInvalidConfig  = errors.New("fleet: invalid config")
	ErrInvalid        = errors.New("fleet: invalid workload")
	ErrDuplicate      = errors.New("fleet: duplicate workload ID")
	ErrUnknownQueue   = errors.New("fleet: unknown queue")
	ErrUnknownClass   = errors.New("fleet: unknown priority class")
	ErrUnknownID      = errors.New("fleet: unknown workload")
	ErrUnknownNode    = errors.New("fleet: unknown node")
	ErrNeverFits      = errors.New("fleet: workload can never fit the fleet")
	ErrBadState       = errors.New("fleet: call not allowed in the workload's state")
	ErrTimeReversed   = errors.New("fleet: time moved backwards")
	ErrInvalidHealth  = errors.New("fleet: invalid node health")
	ErrUnknownBooking = errors.New("fleet: unknown booking")
)

// Error carries the details of a refused call.
type Error struct {
	Op       string // the call: "submit", "exited", ...
	Workload string // the workload it concerns, if any
	Detail   string // what was wrong and where, in words
	Err      error  // a sentinel above, or a lower package's error
}

// Error renders the sentinel, the call, the workload and the detail.
//
// What the wrapped error already says is not said twice: a calendar or
// quota error that names the call and the booking, or the part of the
// config ("quota", "topology") it is about, keeps its own words.
func (e *Error) Error() string {
	msg := e.Err.Error()
	says := func(s string) bool {
		return strings.HasPrefix(msg, s+": ") || strings.Contains(msg, ": "+s+": ") || strings.HasSuffix(msg, ": "+s) ||
			strings.Contains(msg, strconv.Quote(s))
	}
	if e.Workload != "" {
		msg = fmt.Sprintf("%s: %s %q", msg, e.Op, e.Workload)
	} else if e.Op != "" && !says(e.Op) && !strings.Contains(msg, ": "+e.Op+" ") {
		msg = fmt.Sprintf("%s: %s", msg, e.Op)
	}
	if e.Detail != "" && !says(e.Detail) {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel or lower package's error, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

func refuse(op, id string, err error, format string, args ...any) error {
	return &Error{Op: op, Workload: id, Detail: fmt.Sprintf(format, args...), Err: err}
}
