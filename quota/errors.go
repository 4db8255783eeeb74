package quota

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinels. Every error the package returns wraps one of them, so callers
// branch with errors.Is and read details with errors.As on the typed errors
// below.
var (
	// ErrInvalidSpec is wrapped by every *SpecError, whatever the rule broken,
	// so a loader can test one sentinel for "the configuration is wrong".
	ErrInvalidSpec = errors.New("quota: invalid spec")

	ErrDuplicateNode     = errors.New("quota: duplicate node name")
	ErrDuplicateFlavor   = errors.New("quota: duplicate flavor")
	ErrUnknownParent     = errors.New("quota: unknown parent")
	ErrCycle             = errors.New("quota: cohort cycle")
	ErrQueueWithChildren = errors.New("quota: queue has children")
	ErrNegativeAmount    = errors.New("quota: negative amount")
	ErrAmountTooLarge    = errors.New("quota: amount too large")
	ErrLendingAboveQuota = errors.New("quota: lending limit above nominal quota")
	ErrLimitOnRoot       = errors.New("quota: borrowing or lending limit on a root")
	ErrInvalidWeight     = errors.New("quota: invalid fair-sharing weight")
	ErrRulesOnCohort     = errors.New("quota: preemption rules or queueing strategy on a cohort")
	ErrInvalidKind       = errors.New("quota: invalid node kind")
	ErrInvalidName       = errors.New("quota: invalid name")
	ErrUnknownNode       = errors.New("quota: unknown node")
	ErrUnknownFlavor     = errors.New("quota: unknown flavor")
	ErrNotQueue          = errors.New("quota: not a queue")
	ErrFlavorNotServed   = errors.New("quota: flavor not served by queue")
	ErrUsageUnderflow    = errors.New("quota: removing more usage than recorded")
	ErrOverPromised      = errors.New("quota: guarantees exceed fleet capacity")
	ErrUnknownResource   = errors.New("quota: unknown resource")
	ErrDuplicateResource = errors.New("quota: duplicate resource")
	// ErrResourceGroup refuses resource groups that break a rule: a
	// resource or flavor in two groups, a flavor with quota in no group,
	// quota of a resource its group does not cover.
	ErrResourceGroup = errors.New("quota: invalid resource group")
	// ErrShapeChange refuses a SetNode edit of a node's parent or kind: the
	// tree's shape is fixed by New.
	ErrShapeChange = errors.New("quota: a live edit cannot change the tree's shape")
	// ErrFlavorRemoved refuses a SetNode edit that drops a flavor (or a
	// resource of a flavor) the node serves: set its nominal quota to 0.
	ErrFlavorRemoved = errors.New("quota: a live edit cannot remove a served flavor or resource")
	// ErrInvalidSchedule is wrapped by every refusal of a ScheduleSpec.
	ErrInvalidSchedule = errors.New("quota: invalid schedule")
)

// SpecError says which node, flavor and field of a Spec (or of a SetQuota
// edit) broke which rule. Err is one of the sentinels; errors.Is also matches
// ErrInvalidSpec for every SpecError.
type SpecError struct {
	Node   string // node name, "" when the error is not about one node
	Flavor string // flavor name, "" when not about one flavor
	Field  string // JSON field name, e.g. "lendingLimit"
	Detail string // the offending values, for people
	Err    error  // one of the sentinels
}

// Error says what was refused, where, and why.
func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	sep := ": "
	if e.Node != "" {
		fmt.Fprintf(&b, "%snode %q", sep, e.Node)
		sep = ", "
	}
	if e.Flavor != "" {
		fmt.Fprintf(&b, "%sflavor %q", sep, e.Flavor)
		sep = ", "
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "%sfield %s", sep, e.Field)
		sep = ", "
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, "%s%s", sep, e.Detail)
	}
	return b.String()
}

// Unwrap returns the rule broken and ErrInvalidSpec.
func (e *SpecError) Unwrap() []error {
	if e.Err == ErrInvalidSpec {
		return []error{e.Err}
	}
	return []error{e.Err, ErrInvalidSpec}
}

// UsageError reports a refused AddUsage or RemoveUsage. The tree is unchanged.
type UsageError struct {
	Queue  NodeID   // the queue
	Flavor FlavorID // the flavor
	GPUs   int64    // the GPUs asked to add or remove
	Detail string   // what is wrong, in words
	Err    error    // one of the sentinels
}

// Error says what was refused, where, and why.
func (e *UsageError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%v: queue %d, flavor %d, %d GPUs", e.Err, e.Queue, e.Flavor, e.GPUs)
	}
	return fmt.Sprintf("%v: %s", e.Err, e.Detail)
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *UsageError) Unwrap() error { return e.Err }

// OverPromise is one flavor whose guarantees exceed the fleet's capacity.
type OverPromise struct {
	Flavor     string // the flavor
	Guaranteed int64  // sum of nominal quotas of every node
	Capacity   int64  // its GPUs in service
}

// CapacityError lists every over-promised flavor, in the tree's flavor order.
type CapacityError struct {
	Over []OverPromise // every flavor over capacity, in the tree's flavor order
}

// Error says what was refused, where, and why.
func (e *CapacityError) Error() string {
	var b strings.Builder
	b.WriteString(ErrOverPromised.Error())
	for i, o := range e.Over {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s guarantees %d GPUs, fleet has %d", sep, o.Flavor, o.Guaranteed, o.Capacity)
		if o.Capacity == 0 {
			fmt.Fprintf(&b, " (no node in service has flavor %s: set the nodes' Flavor, topology.NodeSpec.Flavor or UniformSpec.Flavor)", o.Flavor)
		} else {
			b.WriteString(" (lower the nominal quotas or add nodes)")
		}
	}
	return b.String()
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *CapacityError) Unwrap() error { return ErrOverPromised }

// ScheduleCapacityError reports the first instant at which a schedule's
// guarantees of one flavor exceed the fleet's capacity, and the node whose
// rule took them there ("" when they exceed it from the start).
type ScheduleCapacityError struct {
	Node       string    // the node whose scheduled quota tips the balance
	Flavor     string    // the flavor
	At         time.Time // the first instant over capacity
	Guaranteed int64     // guarantees in force then
	Capacity   int64     // the flavor's GPUs in service
}

// Error says what was refused, where, and why.
func (e *ScheduleCapacityError) Error() string {
	who := ""
	if e.Node != "" {
		who = fmt.Sprintf(" after node %q's change", e.Node)
	}
	return fmt.Sprintf("%v: %s guarantees %d GPUs at %s%s, fleet has %d", ErrOverPromised, e.Flavor, e.Guaranteed,
		e.At.Format(time.RFC3339), who, e.Capacity)
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *ScheduleCapacityError) Unwrap() error { return ErrOverPromised }
