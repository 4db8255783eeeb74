package gang

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every validation error is a *FieldError that matches
// ErrInvalid under errors.Is; the fleet-specific problems found by
// [Workload.ValidateFor] also match ErrUnknownLevel or ErrExceedsNode, so a
// host can tell "malformed" from "this fleet cannot run it".
var (
	ErrInvalid      = errors.New("gang: invalid workload")
	ErrUnknownLevel = errors.New("gang: unknown topology level")
	ErrExceedsNode  = errors.New("gang: larger than a node")
	// ErrBadShare: a GPU share outside (0, 1000] thousandths, or a pod
	// set mixing whole GPUs, shares and MIG slices.
	ErrBadShare = errors.New("gang: invalid GPU share")
	// ErrBadMinCount: an elastic minimum outside 1..Count.
	ErrBadMinCount = errors.New("gang: invalid minimum count")
	// ErrBadResource: an empty or repeated resource name, or an amount
	// that is not positive.
	ErrBadResource = errors.New("gang: invalid resource")
	// ErrBadRankGroup: a rank group larger than its pod set or not
	// dividing it, groups that do not nest, or rank groups beside a
	// segment or a per-domain spread on the same pods.
	ErrBadRankGroup = errors.New("gang: invalid rank group")
)

// FieldError names the field of a workload that was refused and why.
type FieldError struct {
	// ID is the workload's ID as given (it may be the empty, refused one).
	ID string
	// Field is the path of the field as spelled in JSON, with indexes:
	// "podSets[1].gpusPerPod", "topology.segment.level", "pools[0]".
	Field string
	// Value is the refused value (a count, a duration, a name).
	Value any
	// Detail says what a valid value looks like, for a person.
	Detail string
	// Err is ErrInvalid or one of the more specific sentinels above.
	Err error
}

// Error names the sentinel, the field and its value, and what is wrong.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Detail)
	}
	v := e.Value
	if s, ok := v.(string); ok {
		v = fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v: workload %q: %s = %v: %s", e.Err, e.ID, e.Field, v, e.Detail)
}

// Unwrap returns the sentinel, and ErrInvalid beside it when the sentinel is
// a more specific one, so errors.Is(err, ErrInvalid) holds for every
// validation error.
func (e *FieldError) Unwrap() []error {
	if e.Err == nil || e.Err == ErrInvalid {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.Err}
}
