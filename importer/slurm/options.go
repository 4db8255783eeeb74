package slurm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetsched/fleet/topology"
)

// Options says what a topology file does not: GPUs per node, flavor and
// pool (they live in slurm.conf's Gres and partitions), which nodes Slurm
// knows, and how strictly to treat the cases the importer has to resolve.
type Options struct {
	// GPUsPerNode is every node's GPU count unless GPUs overrides it.
	// Zero means 8.
	GPUsPerNode int
	// GPUs overrides GPUsPerNode per node name.
	GPUs map[string]int
	// Flavor is every node's GPU model; "" means "H100".
	Flavor string
	// Pool is every node's pool; "" is the default pool.
	Pool string
	// Nodes, when not nil, lists the nodes Slurm knows (slurm.conf's
	// NodeName lines). A node of the file that is not listed is dropped
	// (WarnUnknownNode), as Slurm drops invalid hostnames; a listed node
	// under no switch or block goes into a synthetic "~unswitched" domain
	// (WarnUncovered).
	Nodes []string
	// LevelNames names the switch or block levels from the top down, one
	// per level above the node. Nil gives "core", "spine", "leaf" (counted
	// from the leaves, "tier<h>" above the core) for trees and "block",
	// "block-x<2^k>" for blocks.
	LevelNames []string
	// Topology picks one topology of a topology.yaml by name; "" picks the
	// first with cluster_default: true, or the only one.
	Topology string
	// Strict refuses, with the matching error, every case that Slurm
	// accepts but that cannot map 1:1 onto a level tree: WarnMultiParent,
	// WarnMultiHomed, WarnPadded, WarnUncovered and WarnUnknownNode.
	Strict bool
}

// Result is an imported fleet and what the importer had to decide.
type Result struct {
	// Spec is the fleet; topology.New accepts it.
	Spec topology.Spec
	// Warnings lists, in file order, every case resolved by a policy: the
	// fleet differs from what Slurm would do with the file.
	Warnings []Warning
	// Notes lists what was read but not modelled and changes nothing
	// (WarnIgnoredField), apart from Warnings so that a host treating
	// every warning as a problem is not stopped by a field Slurm itself
	// does not use.
	Notes []Warning
	// LinkSpeeds holds each switch's LinkSpeed when the file gives one.
	// Slurm does not use it and neither does fleet; it is kept so that
	// nothing read is lost.
	LinkSpeeds map[string]uint32
	// Topology is the name of the topology read: the one picked from
	// topology.yaml, or "default" for topology.conf as in Slurm.
	Topology string
}

type builder struct {
	opts     Options
	warnings []Warning
	known    map[string]bool // nil: every node is known
}

func newBuilder(opts Options) (*builder, error) {
	if opts.GPUsPerNode < 0 {
		return nil, &ParseError{Detail: fmt.Sprintf("GPUsPerNode=%d", opts.GPUsPerNode), Err: ErrInvalidOptions}
	}
	for _, n := range slices.Sorted(maps.Keys(opts.GPUs)) {
		if opts.GPUs[n] <= 0 {
			return nil, &ParseError{Name: n, Detail: fmt.Sprintf("GPUs=%d", opts.GPUs[n]), Err: ErrInvalidOptions}
		}
	}
	if opts.GPUsPerNode == 0 {
		opts.GPUsPerNode = 8
	}
	if opts.Flavor == "" {
		opts.Flavor = "H100"
	}
	b := &builder{opts: opts}
	if opts.Nodes != nil {
		b.known = make(map[string]bool, len(opts.Nodes))
		for _, n := range opts.Nodes {
			b.known[n] = true
		}
	}
	return b, nil
}

func (b *builder) warn(k WarningKind, line int, name, format string, args ...any) error {
	w := Warning{Kind: k, Line: line, Name: name, Detail: fmt.Sprintf(format, args...)}
	if err := strictErr(k); err != nil && b.opts.Strict {
		return &ParseError{Line: line, Name: name, Detail: w.Detail, Err: err}
	}
	b.warnings = append(b.warnings, w)
	return nil
}

func (b *builder) node(name string, path []string) topology.NodeSpec {
	g := b.opts.GPUsPerNode
	if v, ok := b.opts.GPUs[name]; ok {
		g = v
	}
	return topology.NodeSpec{Name: name, Path: path, GPUs: g, Flavor: b.opts.Flavor, Pool: b.opts.Pool}
}

// uncovered appends the known nodes that no record placed, in Options.Nodes
// order, under a synthetic domain at every level.
func (b *builder) uncovered(spec *topology.Spec, placed map[string]bool) error {
	if b.known == nil {
		return nil
	}
	var missing []string
	for _, n := range b.opts.Nodes {
		if !placed[n] {
			placed[n] = true
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	expr, err := CompressHostlist(missing)
	if err != nil {
		expr = strings.Join(missing, ",")
	}
	if err := b.warn(WarnUncovered, 0, "~unswitched", "%d nodes under no switch or block: %s", len(missing), expr); err != nil {
		return err
	}
	for _, n := range missing {
		path := make([]string, len(spec.Levels)-1)
		for i := range path {
			path[i] = "~unswitched"
		}
		spec.Nodes = append(spec.Nodes, b.node(n, path))
	}
	return nil
}

// finish validates the spec with topology.New, the contract of every
// importer: a Result always holds a fleet that builds.
func (b *builder) finish(spec topology.Spec, res *Result) (*Result, error) {
	if len(spec.Nodes) == 0 {
		return nil, &ParseError{Detail: "no node in any switch or block", Err: ErrNoNodes}
	}
	if _, err := topology.New(spec); err != nil {
		return nil, err
	}
	res.Spec = spec
	res.Warnings = b.warnings
	return res, nil
}

func (b *builder) levelNames(n int, def func(i int) string) ([]string, error) {
	if b.opts.LevelNames != nil {
		if len(b.opts.LevelNames) != n {
			return nil, &ParseError{Detail: fmt.Sprintf("%d LevelNames for %d levels", len(b.opts.LevelNames), n), Err: ErrInvalidOptions}
		}
		return append(slices.Clone(b.opts.LevelNames), "node"), nil
	}
	out := make([]string, 0, n+1)
	for i := range n {
		out = append(out, def(i))
	}
	return append(out, "node"), nil
}
