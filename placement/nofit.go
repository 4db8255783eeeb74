package placement

import (
	"errors"
	"fmt"
	"strconv"
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
	ErrBadAmount       = errors.New("placement: resource amount not positive")
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
	Workload  string // the workload's ID
	Cause     Cause  // why it does not fit
	Required  string // required level, "" for the whole fleet
	Preferred string // preferred level, "" for none
	Pods      int    // pods of the workload
	NeedGPUs  int    // GPUs it needs
	FreeGPUs  int    // free GPUs on eligible healthy nodes (best group)
	FreeNodes int    // fully free eligible nodes (best group)
	// NeedMilliGPUs is what the workload asks of GPUs in thousandths,
	// shares included; MIGPods its pods that ask for a MIG slice (whose
	// charge is known once placed). FreeMilliGPUs is the best group's
	// free GPU capacity in thousandths.
	NeedMilliGPUs int64
	MIGPods       int
	FreeMilliGPUs int64
	// Short names, for CauseCapacity, what the workload needs more of in
	// total than the best group (the one with the most free GPUs) has
	// free: "gpu" (whole GPUs), "gpu-milli" (thousandths of GPU, for
	// shares) or a resource name ("cpu", "memory"); ShortNeed is the
	// workload's total of it and ShortFree the group's. Every accepted
	// group is short of something; "" when the cause is another.
	Short                string
	ShortNeed, ShortFree int64
	Tried                []LevelTry // the levels tried, lowest first
	Detail               string     // what more there is to say, in words
	// Err is the specific kind of an invalid request (ErrBadShare,
	// ErrUnknownProfile, ErrUnknownResource, ErrBadAmount,
	// ErrBadRequest), or nil.
	Err error
}

// Error says what did not fit, why, and what the fleet has free.
func (e *NoFit) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "placement: workload %q does not fit (%s): needs %s in %d pods", e.Workload, e.Cause, e.need(), e.Pods)
	req := e.Required
	if req == "" {
		req = "fleet"
	}
	switch {
	case e.Cause == CauseCapacity && e.Short == "gpu-milli":
		fmt.Fprintf(&b, ", %s GPUs free, short %s", milli(e.ShortFree), milli(e.ShortNeed-e.ShortFree))
	case e.Cause == CauseCapacity && e.Short != "" && e.Short != "gpu":
		fmt.Fprintf(&b, ", %s short: needs %d, %d free", e.Short, e.ShortNeed, e.ShortFree)
	case e.Cause == CauseCapacity:
		fmt.Fprintf(&b, ", %d free, short %d", e.FreeGPUs, e.NeedGPUs-e.FreeGPUs)
	case e.Cause == CauseFragmented && e.NeedMilliGPUs%1000 != 0:
		fmt.Fprintf(&b, ", %s GPUs free but not together within one %s", milli(e.FreeMilliGPUs), req)
	case e.Cause == CauseFragmented:
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

// need renders what the workload asks of GPUs: whole GPUs as a count,
// shares in GPUs with their fraction, MIG slices by number, or no GPU.
func (e *NoFit) need() string {
	m, whole := e.NeedMilliGPUs, int64(e.NeedGPUs)*1000
	if m == 0 {
		m = whole // not filled in: whole GPUs only
	}
	var parts []string
	switch {
	case m == 0 && e.MIGPods == 0:
		parts = append(parts, "no GPU")
	case m != whole:
		parts = append(parts, milli(m)+" GPUs")
	case m > 0 || e.MIGPods == 0:
		parts = append(parts, fmt.Sprintf("%d GPUs", e.NeedGPUs))
	}
	if e.MIGPods > 0 {
		parts = append(parts, fmt.Sprintf("%d MIG slices", e.MIGPods))
	}
	return strings.Join(parts, " and ")
}

// milli renders thousandths of GPU as GPUs: 1500 as "1.5".
func milli(m int64) string {
	return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64)
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
