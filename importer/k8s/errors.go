package k8s

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error of the package wraps one, inside an *Error
// that names the node (or the node list entry) concerned.
var (
	ErrSyntax         = errors.New("k8s: malformed node list")
	ErrDuplicateNode  = errors.New("k8s: duplicate node name")
	ErrNoName         = errors.New("k8s: node without a name")
	ErrBadGPUs        = errors.New("k8s: bad GPU count")
	ErrBadResource    = errors.New("k8s: bad resource quantity")
	ErrMissingLabel   = errors.New("k8s: node lacks a level label")
	ErrNotNested      = errors.New("k8s: NVLink domains are not nested in the lowest level")
	ErrNoNodes        = errors.New("k8s: no usable node")
	ErrInvalidOptions = errors.New("k8s: invalid options")
	ErrUnknownPreset  = errors.New("k8s: unknown preset")
)

// Error says which node list entry was refused and why.
type Error struct {
	Node   string // node name, "" when the entry has none
	Index  int    // index in the node list, -1 when not about one entry
	Detail string // what is wrong, in words
	Err    error  // one of the sentinels
}

// Error says what was refused, where, and why.
func (e *Error) Error() string {
	msg := e.Err.Error()
	if e.Node != "" || e.Index >= 0 {
		msg += fmt.Sprintf(": node %q (nodes[%d])", e.Node, e.Index)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// WarningKind classifies what Import accepted under a documented policy.
type WarningKind uint8

const (
	// WarnMissingLabel: a node lacks a level label and is left out, as
	// Kueue leaves it out of a Topology (Options.Strict refuses it).
	WarnMissingLabel WarningKind = iota + 1
	// WarnNoGPUs: a node has no GPUs (a CPU node) and is left out.
	WarnNoGPUs
	// WarnPadded: a node lacks the levels at the padded edge of a preset
	// (the bottom AWS layers, the top Topograph tiers) and got synthetic
	// single-path domains "~" (bottom) or "~<value>" (top) there.
	WarnPadded
	// WarnNotNested: an NVLink domain spans several lowest-level domains,
	// so it cannot be a level; it is kept as a node label instead.
	WarnNotNested
	// WarnNoFlavor: nodes carry neither the flavor label nor is there a
	// DefaultFlavor, so their flavor is ""; one warning names how many and
	// the first of them.
	WarnNoFlavor
)

// String returns the warning kind's name, as specs and messages spell it.
func (k WarningKind) String() string {
	names := []string{"", "missing-label", "no-gpus", "padded", "not-nested", "no-flavor"}
	if k > 0 && int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("WarningKind(%d)", k)
}

// Warning is one decision Import made on a node or a domain.
type Warning struct {
	Kind   WarningKind // what Import decided
	Node   string      // node concerned, "" for a domain-wide warning
	Detail string      // why, in words
}

// String renders the warning as one line: its kind, where, and what.
func (w Warning) String() string {
	s := "warning " + w.Kind.String()
	if w.Node != "" {
		s += fmt.Sprintf(": node %q", w.Node)
	}
	if w.Detail != "" {
		s += ": " + w.Detail
	}
	return s
}
