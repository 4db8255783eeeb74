package preempt

import (
	"errors"
	"fmt"
)

// Sentinels. Every error of the package wraps one of them: a failed search
// returns a *NoPlan (ErrNoPlan, and ErrInvalid when the input is wrong), a
// refused Index change an *IndexError.
var (
	ErrNoPlan  = errors.New("preempt: no preemption plan")
	ErrInvalid = errors.New("preempt: invalid request")
	// ErrDuplicate and ErrUnknownWorkload: an Index change for an ID
	// already indexed, or not indexed.
	ErrDuplicate       = errors.New("preempt: workload already indexed")
	ErrUnknownWorkload = errors.New("preempt: workload not indexed")
	// ErrDirtyScratch: an earlier search was interrupted (a panic) before
	// it could give back what it released on View.Scratch, so the scratch
	// fleet no longer equals the live one. The Searcher refuses to search
	// until the caller rebuilds the scratch and calls ScratchRebuilt.
	ErrDirtyScratch = errors.New("preempt: scratch fleet left changed by an interrupted search")
)

// IndexError says which Index change was refused and why; the Index is
// unchanged. It wraps ErrInvalid, ErrDuplicate or ErrUnknownWorkload.
type IndexError struct {
	Op     string // add, update, remove
	ID     string // the workload
	Err    error  // one of the sentinels
	Detail string // what is wrong, in words
}

// Error says what was refused, where, and why.
func (e *IndexError) Error() string {
	s := fmt.Sprintf("preempt: index %s %q: %v", e.Op, e.ID, e.Err)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *IndexError) Unwrap() error { return e.Err }

// Why says why no plan exists.
type Why uint8

const (
	// WhyInvalid: the request or the running set is malformed or disagrees
	// with the fleet or the quota tree (Detail says where).
	WhyInvalid Why = iota + 1
	// WhyNoCandidates: no running workload may be evicted for this one
	// under its queue's rules, the drain contracts and minimum runtimes.
	WhyNoCandidates
	// WhyQuota: even evicting every allowed candidate, the request does
	// not fit the queue's quota.
	WhyQuota
	// WhyTopology: quota can be made to fit, but no domain can be cleared
	// enough for the gang's shape with allowed candidates.
	WhyTopology
	// WhyAboveNominal: the request alone exceeds the queue's nominal
	// quota (NoPlan.Limit), so it could fit only by borrowing, and no
	// rule lets it preempt to borrow: borrowWithinCohort is Never, fair
	// sharing is off (or reclaimWithinCohort Never), and no cohort below
	// the root holds the queue's usage plus the request. Kueue's flavor
	// assigner answers "does not fit" here and evicts nothing.
	WhyAboveNominal
)

// String returns the why's name, as specs and messages spell it.
func (w Why) String() string {
	switch w {
	case WhyInvalid:
		return "invalid"
	case WhyNoCandidates:
		return "no candidates"
	case WhyQuota:
		return "quota unreachable"
	case WhyTopology:
		return "topology unreachable"
	case WhyAboveNominal:
		return "above nominal quota, no rule to preempt while borrowing"
	}
	return fmt.Sprintf("Why(%d)", uint8(w))
}

// NoPlan is the structured reason Victims found no plan.
type NoPlan struct {
	Workload   string // the workload that wanted room
	Why        Why    // why no plan made it
	Candidates int    // running workloads the rules allow as victims
	// Excluded counts, per rule or limit, the running workloads that may
	// not be victims: what would have to change for preemption to help.
	Excluded Exclusions
	// Limit is, for WhyAboveNominal, the queue's nominal quota of the
	// flavor that the request exceeds.
	Limit  int64
	Detail string
	cause  error
}

// Error says what was refused, where, and why.
func (e *NoPlan) Error() string {
	s := fmt.Sprintf("preempt: no plan for %q: %s (%d candidates", e.Workload, e.Why, e.Candidates)
	if x := e.Excluded.String(); x != "" {
		s += "; excluded: " + x
	}
	s += ")"
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Exclusions counts running workloads by the rule or limit that keeps
// them from being victims of one request.
type Exclusions struct {
	NotPreemptible    int // the drain contract forbids it
	MinRuntime        int // started less than its MinRuntime ago
	Priority          int // the queue's priority rule or borrowWithinCohort's threshold
	NotBorrowing      int // another queue within its quota
	QueueRule         int // withinQueue or reclaimWithinCohort is Never
	OtherFlavorOrTree int // another flavor or quota tree
	Claimed           int // draining for an accepted nomination, or chosen earlier this cycle
}

// Count returns the count for one exclusion.
func (x *Exclusions) Count(e Exclusion) int { return *x.field(e) }

func (x *Exclusions) field(e Exclusion) *int {
	switch e {
	case ExcludedNotPreemptible:
		return &x.NotPreemptible
	case ExcludedMinRuntime:
		return &x.MinRuntime
	case ExcludedPriority:
		return &x.Priority
	case ExcludedNotBorrowing:
		return &x.NotBorrowing
	case ExcludedQueueRule:
		return &x.QueueRule
	case ExcludedOtherFlavorOrTree:
		return &x.OtherFlavorOrTree
	case ExcludedClaimed:
		return &x.Claimed
	}
	panic(fmt.Sprintf("preempt: exclusion %d", e))
}

// String renders the non-zero counts, e.g. "3 not preemptible, 12
// priority"; "" when nothing was excluded.
func (x Exclusions) String() string {
	s := ""
	for e := ExcludedNotPreemptible; e < numExclusions; e++ {
		if n := x.Count(e); n > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%d %s", n, e)
		}
	}
	return s
}

// Unwrap matches ErrNoPlan, and ErrInvalid for WhyInvalid.
func (e *NoPlan) Unwrap() []error {
	if e.Why == WhyInvalid {
		if e.cause != nil {
			return []error{ErrNoPlan, ErrInvalid, e.cause}
		}
		return []error{ErrNoPlan, ErrInvalid}
	}
	return []error{ErrNoPlan}
}
