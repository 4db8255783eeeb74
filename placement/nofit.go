package placement

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. A failed Place returns a *NoFit, which matches ErrNoFit;
// a request this fleet can never meet (a level it lacks, a pod larger than
// any node, a malformed segment or spread) matches ErrInvalid as well. A
// flavor or pool without healthy nodes is CauseNoNodes: nodes may come.
var (
	ErrNoFit   = errors.New("placement: does not fit")
	ErrInvalid = errors.New("placement: invalid request")
	// The kinds of invalid request that sharing adds; a NoFit of
	// CauseInvalid matches one of them as well when it applies.
	ErrBadShare        = errors.New("placement: GPU share outside (0, 1000] thousandths")
	ErrUnknownProfile  = errors.New("placement: MIG profile no accepted GPU model has")
	ErrUnknownResource = errors.New("placement: resource no node has")
	ErrBadRequest      = errors.New("placement: malformed pod set")
)

// Cause classifies why a workload does not fit.
type Cause uint8

const (
	// CauseCapacity: the eligible nodes do not have enough free GPUs.
	CauseCapacity Cause = iota + 1
	// CauseFragmented: enough GPUs are free, but not together: not in
	// whole nodes, or not inside one domain of the required level.
	CauseFragmented
	// CauseNoNodes: no healthy node matches the flavor and pools.
	CauseNoNodes
	// CauseInvalid: the request cannot be met by this fleet at all (an
	// unknown level, a pod larger than any node).
	CauseInvalid
)

// String is the cause's name, as NoFit.Error prints it.
func (c Cause) String() string {
	switch c {
	case CauseCapacity:
		return "capacity"
	case CauseFragmented:
		return "fragmented"
	case CauseNoNodes:
		return "no-nodes"
	case CauseInvalid:
		return "invalid"
	}
	return fmt.Sprintf("Cause(%d)", uint8(c))
}

// LevelTry records one level the search tried.
type LevelTry struct {
	Level string // the level's name
	// Largest is the most pods of the workload's largest pod size that any
	// one domain of the level could hold, and Domain that domain's name.
	// Filled only when Options.Explain is set (it scans the level).
	Largest int
	Domain  string
}

// NoFit is the structured reason a workload does not fit: data a
// scheduler can show a person or act on.
type NoFit struct {
	Workload  string     // the workload's ID
	Cause     Cause      // why it does not fit
	Required  string     // required level, "" for the whole fleet
	Preferred string     // preferred level, "" for none
	Pods      int        // pods of the workload
	NeedGPUs  int        // GPUs it needs
	FreeGPUs  int        // free GPUs on eligible healthy nodes (best group)
	FreeNodes int        // fully free eligible nodes (best group)
	Tried     []LevelTry // the levels tried, lowest first
	Detail    string     // what more there is to say, in words
	// Err is the specific kind of an invalid request (ErrBadShare,
	// ErrUnknownProfile, ErrUnknownResource, ErrBadRequest), or nil.
	Err error
}

// Error says what did not fit, why, and what the fleet has free.
func (e *NoFit) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "placement: workload %q does not fit (%s): needs %d GPUs in %d pods", e.Workload, e.Cause, e.NeedGPUs, e.Pods)
	req := e.Required
	if req == "" {
		req = "fleet"
	}
	switch e.Cause {
	case CauseCapacity:
		fmt.Fprintf(&b, ", %d free, short %d", e.FreeGPUs, e.NeedGPUs-e.FreeGPUs)
	case CauseFragmented:
		fmt.Fprintf(&b, ", %d free but not together within one %s", e.FreeGPUs, req)
	}
	for _, t := range e.Tried {
		if t.Domain != "" {
			fmt.Fprintf(&b, "; largest %s block %d pods (%s)", t.Level, t.Largest, t.Domain)
		}
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

// Unwrap lets errors.Is match ErrNoFit, and ErrInvalid for CauseInvalid.
func (e *NoFit) Unwrap() []error {
	if e.Cause == CauseInvalid {
		if e.Err != nil {
			return []error{ErrNoFit, ErrInvalid, e.Err}
		}
		return []error{ErrNoFit, ErrInvalid}
	}
	return []error{ErrNoFit}
}
