package slurm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns wraps one of them, so
// callers branch with errors.Is and read the place with errors.As on
// *HostlistError or *ParseError.
var (
	ErrHostlist       = errors.New("slurm: bad hostlist")
	ErrTooManyHosts   = errors.New("slurm: hostlist expands to too many hosts")
	ErrSyntax         = errors.New("slurm: syntax error")
	ErrUnknownKey     = errors.New("slurm: unknown key")
	ErrDuplicate      = errors.New("slurm: duplicate name")
	ErrNoName         = errors.New("slurm: record without a name")
	ErrEmpty          = errors.New("slurm: no switches or blocks")
	ErrNoNodes        = errors.New("slurm: no nodes")
	ErrMixed          = errors.New("slurm: switch with both Nodes and Switches")
	ErrMixedPlugins   = errors.New("slurm: tree and block records in one file")
	ErrUnknownSwitch  = errors.New("slurm: unknown child switch")
	ErrSelfChild      = errors.New("slurm: switch is its own child")
	ErrCycle          = errors.New("slurm: switch configuration is not a tree")
	ErrNameTooLong    = errors.New("slurm: name longer than 64 characters")
	ErrBlockSizes     = errors.New("slurm: invalid BlockSizes value")
	ErrUnsupported    = errors.New("slurm: unsupported topology")
	ErrNoTopology     = errors.New("slurm: no such topology")
	ErrMultiParent    = errors.New("slurm: switch has several parents")
	ErrMultiHomed     = errors.New("slurm: node under several leaves")
	ErrUnbalanced     = errors.New("slurm: branches of different depth")
	ErrCannotExport   = errors.New("slurm: fleet cannot be written as topology.conf")
	ErrInvalidOptions = errors.New("slurm: invalid options")
	ErrUncovered      = errors.New("slurm: node under no switch or block")
	ErrUnknownNode    = errors.New("slurm: node unknown to Slurm")
)

// HostlistError says which hostlist expression was refused, where, and why.
type HostlistError struct {
	Expr   string // the whole expression
	Offset int    // byte offset of the offending item in Expr
	Detail string // what is wrong, in words
	Err    error  // ErrHostlist or ErrTooManyHosts
}

// Error says what was refused, where, and why.
func (e *HostlistError) Error() string {
	return fmt.Sprintf("%v: %q at offset %d: %s", e.Err, e.Expr, e.Offset, e.Detail)
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *HostlistError) Unwrap() error { return e.Err }

// ParseError says where in a topology file a record was refused: the line
// (1-based; 0 for topology.yaml, whose decoder keeps no lines) and the
// switch, block or topology it names.
type ParseError struct {
	Line   int    // the line, from 1 (0 for topology.yaml)
	Name   string // the switch, block or topology
	Detail string // what is wrong, in words
	Err    error  // one of the sentinels
}

// Error says what was refused, where, and why.
func (e *ParseError) Error() string {
	msg, detail := e.Err.Error(), e.Detail
	if he, ok := e.Err.(*HostlistError); ok {
		// The place first, then the expression: "line 5: "s4": "e[0-3]" at offset 0: ...".
		msg, detail = he.Err.Error(), fmt.Sprintf("%q at offset %d: %s", he.Expr, he.Offset, he.Detail)
	}
	if e.Line > 0 {
		msg += fmt.Sprintf(": line %d", e.Line)
	}
	if e.Name != "" {
		msg += fmt.Sprintf(": %q", e.Name)
	}
	if detail != "" {
		msg += ": " + detail
	}
	return msg
}

// Unwrap returns the rule broken and, for a hostlist, the *HostlistError.
func (e *ParseError) Unwrap() error { return e.Err }

// WarningKind classifies what an importer accepted but changed or
// synthesised, so a caller can refuse any of them (see Options.Strict).
type WarningKind uint8

const (
	// WarnMultiParent: a switch listed by several parents was kept under
	// the first one in file order; the other links are dropped.
	WarnMultiParent WarningKind = iota + 1
	// WarnMultiHomed: a node listed under several leaves (or blocks) was
	// kept under the first one in file order.
	WarnMultiHomed
	// WarnPadded: a branch shorter than the tallest one got single-child
	// synthetic domains named "<switch>~pad<height>" to reach every level.
	WarnPadded
	// WarnDisjoint: no switch reaches every node; Slurm cannot run a job
	// across the parts unless TopologyParam=TopoOptional.
	WarnDisjoint
	// WarnEmptySwitch: a switch (or block) without nodes below it has no
	// GPUs and so no domain in the fleet.
	WarnEmptySwitch
	// WarnUncovered: a node Slurm knows (Options.Nodes) is under no switch
	// or block; it was put in a synthetic domain "~unswitched".
	WarnUncovered
	// WarnUnknownNode: a node of the file is not in Options.Nodes; it was
	// dropped, as Slurm drops invalid hostnames.
	WarnUnknownNode
	// WarnPartialAggregate: the last aggregated block of a level has fewer
	// base blocks than the level's size; Slurm does not use it at that size.
	WarnPartialAggregate
	// WarnLevelDropped: a BlockSizes level above one that already covers
	// every block adds nothing and was dropped.
	WarnLevelDropped
	// WarnIgnoredField: a field that fleet does not model was read and
	// kept only in Result: LinkSpeed (link_speed in topology.yaml), in one
	// entry per file naming the first switch that gives it. It changes
	// nothing, so it is listed in Result.Notes, not Result.Warnings.
	WarnIgnoredField
)

// String returns the warning kind's name, as specs and messages spell it.
func (k WarningKind) String() string {
	names := []string{"", "multi-parent", "multi-homed", "padded", "disjoint", "empty", "uncovered",
		"unknown-node", "partial-aggregate", "level-dropped", "ignored-field"}
	if int(k) < len(names) && k > 0 {
		return names[k]
	}
	return fmt.Sprintf("WarningKind(%d)", k)
}

// Warning is one case the importer accepted under a documented policy.
type Warning struct {
	Kind   WarningKind // what Import decided
	Line   int         // line of the record concerned, 0 if none
	Name   string      // switch, block or node concerned
	Detail string      // why, in words
}

// String renders the warning as one line: its kind, where, and what.
func (w Warning) String() string {
	s := "warning " + w.Kind.String()
	if w.Line > 0 {
		s += fmt.Sprintf(": line %d", w.Line)
	}
	if w.Name != "" {
		s += fmt.Sprintf(": %q", w.Name)
	}
	if w.Detail != "" {
		s += ": " + w.Detail
	}
	return s
}

// strictErr maps each warning to the error Options.Strict turns it into.
func strictErr(k WarningKind) error {
	switch k {
	case WarnMultiParent:
		return ErrMultiParent
	case WarnMultiHomed:
		return ErrMultiHomed
	case WarnPadded:
		return ErrUnbalanced
	case WarnUncovered:
		return ErrUncovered
	case WarnUnknownNode:
		return ErrUnknownNode
	}
	return nil
}
