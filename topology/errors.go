package topology

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps one of them,
// so callers can test the kind with errors.Is and read the details with
// errors.As on *SpecError or *NodeError.
var (
	ErrInvalidSpec  = errors.New("topology: invalid spec")
	ErrEmptyFleet   = errors.New("topology: empty fleet")
	ErrDuplicate    = errors.New("topology: duplicate name")
	ErrBadPath      = errors.New("topology: bad path")
	ErrTwoParents   = errors.New("topology: domain under two parents")
	ErrBadGPUs      = errors.New("topology: GPU count must be positive")
	ErrUnknownLevel = errors.New("topology: unknown level")
	ErrUnknownNode  = errors.New("topology: unknown node")
	ErrOverAlloc    = errors.New("topology: not enough free GPUs")
	ErrOverRelease  = errors.New("topology: releasing more GPUs than allocated")
	ErrNodeDown     = errors.New("topology: node is down")
	ErrBadAmount    = errors.New("topology: GPU amount must be positive")
	// ErrBadGPUIndex: a claim names a GPU the node does not have.
	ErrBadGPUIndex = errors.New("topology: no such GPU on the node")
	// ErrBadShare: a share outside (0, 1000] thousandths, a share on a
	// MIG GPU, or one GPU both whole and shared in a claim.
	ErrBadShare = errors.New("topology: invalid GPU share")
	// ErrUnknownProfile: a MIG profile the node's GPU model lacks, a start
	// slice its geometry forbids, or MIG on a model with no geometry.
	ErrUnknownProfile = errors.New("topology: unknown MIG profile")
	// ErrUnknownResource: a resource no node of the fleet has.
	ErrUnknownResource = errors.New("topology: unknown resource")
	// ErrBadResource: a node resource with an empty name or an amount
	// outside 0..MaxResource.
	ErrBadResource = errors.New("topology: invalid resource")
)

// SpecError says which part of a Spec was refused and why.
type SpecError struct {
	Node   string // offending node name, if any
	Index  int    // offending node's index in Spec.Nodes, -1 if none
	Level  string // offending level name, if any
	Detail string // what is wrong, in words
	Err    error  // one of the sentinels above
}

// Error names the sentinel, the node or level, and what is wrong.
func (e *SpecError) Error() string {
	msg := e.Err.Error()
	if e.Node != "" || e.Index >= 0 {
		msg += fmt.Sprintf(": node %q (nodes[%d])", e.Node, e.Index)
	}
	if e.Level != "" {
		msg += fmt.Sprintf(": level %q", e.Level)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel, for errors.Is.
func (e *SpecError) Unwrap() error { return e.Err }

// NodeError says which node a change was refused on.
type NodeError struct {
	Node      string // the node's name
	Requested int    // GPUs asked to allocate or release
	Available int    // free GPUs (allocate) or allocated GPUs (release)
	Detail    string // what is wrong, in words
	Err       error  // one of the sentinels above
}

// Error names the sentinel, the node and the amounts.
func (e *NodeError) Error() string {
	msg := fmt.Sprintf("%v: node %q", e.Err, e.Node)
	if e.Requested != 0 || e.Available != 0 {
		msg += fmt.Sprintf(": requested %d, available %d", e.Requested, e.Available)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel, for errors.Is.
func (e *NodeError) Unwrap() error { return e.Err }
