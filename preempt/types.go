package preempt

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Running is one admitted workload the scheduler offers as a possible
// victim. The scheduler resolves the class-dependent fields (Preemptible,
// MinRuntime, Grace) so that this package never needs priority classes.
type Running struct {
	W      *gang.Workload // spec: ID, Priority, Drain contract
	Queue  quota.NodeID   // its queue
	Flavor quota.FlavorID // the flavor it runs on
	// Nodes lists the GPUs it holds per node. A Victim shares this slice.
	Nodes   []placement.NodeGPUs
	Started time.Time
	// Draining: already asked to drain; its GPUs are coming back. Such a
	// workload skips the Preemptible and MinRuntime checks (its eviction is
	// already under way) but still has to pass its queue rules.
	Draining bool
	// Preemptible: W.Drain.Preemptible, or its priority class allows
	// evicting work that does not checkpoint. False: never a victim.
	Preemptible bool
	// MinRuntime: not a victim before Started+MinRuntime, so just-started
	// work does not flap.
	MinRuntime time.Duration
	// Grace is the drain grace period; 0 means DefaultGrace.
	Grace time.Duration
	// Submitted is the workload's queue-order time (Kueue's queue-order
	// timestamp: its creation, or when it was queued again), compared with
	// Request.Submitted by WithinQueueLowerOrNewerEqualPriority. Zero
	// means Started.
	Submitted time.Time
	// Shrinkable lists the pods of an elastic workload's elastic pod
	// sets, each on a node of Nodes, in the order it prefers to give them
	// up; Keep[i] is how many pods of pod set i (placement.Pod.PodSet) it
	// must keep (gang.PodSet.MinCount). Nil: it can only be evicted
	// whole. The search prefers giving up its pods above Keep to evicting
	// workloads of its priority whole (see the package documentation),
	// and a victim that can shrink is asked to give up pods instead of
	// stopping whenever that makes room (see Victim.Pods); any of its
	// pods may go, so it keeps those the request does not need.
	Shrinkable []placement.Pod
	Keep       []int
}

// DefaultGrace is the drain grace period when Running.Grace is 0.
const DefaultGrace = 120 * time.Second

// Request is the pending workload that needs room.
type Request struct {
	W      *gang.Workload // the pending preemptor
	Queue  quota.NodeID   // the queue asking
	Flavor quota.FlavorID // the flavor asked for
	Now    time.Time      // the now of the search
	// FairSharing switches the rules for other queues' workloads to
	// Kueue's fair-sharing preemption (borrowWithinCohort is then ignored).
	FairSharing bool
	// Submitted is the preemptor's queue-order time, compared with the
	// candidates' Running.Submitted by WithinQueueLowerOrNewerEqualPriority;
	// zero means Now.
	Submitted time.Time
	// Starved marks a preemptor that has waited past its host's limit
	// (fleet's Policy.WaitLimit): WithinQueueLowerOrNewerEqualPriority
	// then counts every running workload of its priority in its queue as
	// queued after it, so work that started before it cannot keep it
	// waiting for ever. Kueue has no such limit.
	Starved bool
	// Claims, when set, are the drains already accepted. Their victims
	// count as gone (as if listed in exclude) and only their GPUs no
	// nomination claims count as freed, so plans of one cycle never
	// promise the same GPUs twice. The scheduler's ledger is one.
	Claims Claims
	// Avoid lists domains the target may not use (a booked block, a
	// domain held for another gang): the search frees no room there and
	// returns a plan placed outside them, or a NoPlan. Their running work
	// may still be a victim when quota needs it.
	Avoid []topology.DomainID
}

// Claims is what the search needs to know of accepted drains. Both methods
// must be deterministic and cheap (a map look-up); they are asked only
// about workloads the Index says are draining, or listed in exclude.
type Claims interface {
	// Tracked reports whether id is a victim an accepted nomination
	// waits for: it counts as gone and is never a victim again.
	Tracked(id string) bool
	// Unclaimed returns how many of the gpus that tracked victim id holds
	// on node n no nomination has claimed (0 to gpus): only those count
	// as freed when it is gone.
	Unclaimed(id string, n topology.NodeID, gpus int) int
}

// View is what one search reads. The search never changes Fleet, Tree or
// Index (see Searcher.Victims for the contract on Scratch).
type View struct {
	// Fleet and Tree are the live state: read only.
	Fleet *topology.Fleet
	Tree  *quota.Tree
	// Index holds the running workloads that may be victims; the caller
	// keeps it equal to what runs (Index.Add, Update, Remove).
	Index *Index
	// Scratch is a fleet the caller keeps equal to Fleet between calls
	// (a mirror: every Allocate, Release and SetHealth applied to both,
	// or a fresh Fleet.Clone). The search releases the chosen victims'
	// GPUs on it to run placement once, and allocates them back before
	// it returns. Nil: the search clones Fleet when it needs to place,
	// which costs O(nodes).
	Scratch *topology.Fleet
}

// Reason says under which rule a victim was chosen.
type Reason uint8

const (
	// InQueue: a workload of the preemptor's own queue (withinQueue).
	InQueue Reason = iota + 1
	// Reclaim: another queue's borrowed work taken back (Kueue's
	// InCohortReclamation): over which the preemptor has hierarchical
	// advantage, or that only an attempt keeping the preemptor within its
	// quota may take, or, under fair sharing, taken while the preemptor
	// stays within its nominal quota.
	Reclaim
	// ReclaimWhileBorrowing: another queue's borrowed work that
	// borrowWithinCohort lets the preemptor take while it borrows (lower
	// priority, at most the threshold, no hierarchical advantage): the
	// work the borrowing attempt may take (Kueue's
	// InCohortReclaimWhileBorrowing, whichever attempt took it).
	ReclaimWhileBorrowing
	// FairSharing: chosen by a fair-sharing strategy (Kueue's
	// InCohortFairSharing).
	FairSharing
)

// String returns the reason's name, as specs and messages spell it.
func (r Reason) String() string {
	switch r {
	case InQueue:
		return "InQueue"
	case Reclaim:
		return "Reclaim"
	case ReclaimWhileBorrowing:
		return "ReclaimWhileBorrowing"
	case FairSharing:
		return "FairSharing"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Victim is one workload to evict, or to shrink.
type Victim struct {
	ID       string               // the victim
	Reason   Reason               // why it is evicted
	Deadline time.Time            // Now + grace: past it, the host kills it
	Nodes    []placement.NodeGPUs // what it frees: Running.Nodes, shared; for a shrink, its Pods' GPUs
	GPUs     int                  // GPUs it frees
	Cost     float64              // by the Searcher's CostModel; for a shrink, of its Pods alone
	Priority int32                // its priority
	// Pods, when set, are the only pods the victim gives up (a shrink, from
	// Running.Shrinkable): it runs on with the others. Nil: it stops whole.
	Pods []placement.Pod
}

// Shrink reports whether the victim gives up some pods only.
func (v Victim) Shrink() bool { return v.Pods != nil }

// Plan is what Victims proposes.
type Plan struct {
	Beneficiary string   // the workload the plan makes room for
	Victims     []Victim // in eviction order
	// Target is where the beneficiary runs once the victims are gone; it
	// belongs to the plan (a Clone).
	Target         placement.Assignment
	LostGPUSeconds float64
	ReadyBy        time.Time // the latest victim deadline; Now without victims
	// Borrowing: the beneficiary borrows once admitted. A plan found in
	// an attempt that forbids borrowing is 1-minimal among sets that keep
	// it within its quota.
	Borrowing bool
}

// Options tune a Searcher. The zero value is the default policy.
type Options struct {
	// Cost prices victims; nil means DefaultCost{RestartOverhead}.
	Cost CostModel
	// RestartOverhead is the default cost model's GPU time lost per GPU to
	// restart a workload; 0 means 3 minutes.
	RestartOverhead time.Duration
	// Placement tunes the placer that validates each plan.
	Placement placement.Options
	// FairSharingStrategies are the fair-sharing preemption strategies in
	// the order they are tried (Kueue's fairSharing.preemptionStrategies):
	// one of them alone, or LessThanOrEqualToFinalShare then
	// LessThanInitialShare. Nil means both, in that order (Kueue's
	// default); any other list makes every fair-sharing search fail with
	// ErrInvalid.
	FairSharingStrategies []FairSharingStrategy
}
