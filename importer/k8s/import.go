package k8s

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetsched/fleet/topology"
)

// Result is an imported fleet and the decisions taken on the way.
type Result struct {
	Spec     topology.Spec // the fleet's topology spec
	Warnings []Warning     // what Import decided on the way, in node order
	// Skipped lists nodes left out because Selector did not match.
	Skipped []string
}

// emptyValue stands for a label present with an empty value: Kueue treats
// such a node as in the domain "", and a label value never starts with '-'.
const emptyValue = "-"

// Import builds a fleet from labelled nodes. It follows Kueue's Topology
// semantics: a node must carry every level label to be placed (otherwise
// it is left out with WarnMissingLabel, or refused with Strict), and a
// domain is identified by the path of label values from the top, written
// with '/' between values. GPUs come from Node.GPUs or, when the node's
// status did not give them, the nvidia.com/gpu.count label; nodes without
// GPUs are left out (WarnNoGPUs), unless Options.CPUOnly keeps those with
// some of Options.Resources. The allocatable quantities of
// Options.Resources become the nodes' resources (a bad one is
// ErrBadResource). Node order is the input order.
func Import(nodes []Node, opts Options) (*Result, error) {
	levels := slices.Clone(opts.Levels)
	if n := len(levels); n > 0 && levels[n-1].Label == HostnameLabel {
		levels = levels[:n-1]
	}
	seenLevel := map[string]bool{}
	for _, l := range levels {
		if l.Label == "" || l.Name == "" || l.Name == "node" || l.Name == "nvlink" || seenLevel[l.Name] {
			return nil, &Error{Index: -1, Detail: fmt.Sprintf("level %+v: labels and names must be set and names unique (\"node\" and \"nvlink\" are taken)", l), Err: ErrInvalidOptions}
		}
		seenLevel[l.Name] = true
	}
	if err := checkResources(opts.Resources); err != nil {
		return nil, err
	}
	flavorLabel := opts.FlavorLabel
	if flavorLabel == "" {
		flavorLabel = ProductLabel
	}
	res := &Result{}
	warn := func(k WarningKind, node, format string, args ...any) {
		res.Warnings = append(res.Warnings, Warning{Kind: k, Node: node, Detail: fmt.Sprintf(format, args...)})
	}
	spec := topology.Spec{}
	for _, l := range levels {
		spec.Levels = append(spec.Levels, l.Name)
	}
	names := map[string]int{}
	var nvl []string // NVLink label value per kept node, "" if absent
	var hasNVL []bool
	var noFlavor []string // kept nodes left with flavor ""
nodes:
	for i, n := range nodes {
		if n.Name == "" {
			return nil, &Error{Index: i, Err: ErrNoName}
		}
		if j, dup := names[n.Name]; dup {
			return nil, &Error{Node: n.Name, Index: i, Detail: fmt.Sprintf("also nodes[%d]", j), Err: ErrDuplicateNode}
		}
		names[n.Name] = i
		for _, k := range sortedKeys(opts.Selector) {
			if v, ok := n.Labels[k]; !ok || v != opts.Selector[k] {
				res.Skipped = append(res.Skipped, n.Name)
				continue nodes
			}
		}
		gpus := n.GPUs
		if gpus == 0 && !n.fromStatus {
			if v, ok := n.Labels[CountLabel]; ok {
				c, ok := countLabel(v)
				if !ok {
					return nil, &Error{Node: n.Name, Index: i, Detail: CountLabel + "=" + v, Err: ErrBadGPUs}
				}
				gpus = c
			}
		}
		if gpus < 0 || gpus > maxNodeGPUs {
			return nil, &Error{Node: n.Name, Index: i, Detail: fmt.Sprintf("gpus=%d", gpus), Err: ErrBadGPUs}
		}
		resources, err := nodeResources(&n, i, opts.Resources)
		if err != nil {
			return nil, err
		}
		if gpus == 0 && (!opts.CPUOnly || len(resources) == 0) {
			warn(WarnNoGPUs, n.Name, "no GPUs; left out")
			continue
		}
		path, padded, missing := domainPath(n, levels, opts.PadTop, opts.PadBottom)
		if missing != "" {
			if opts.Strict {
				return nil, &Error{Node: n.Name, Index: i, Detail: "label " + missing, Err: ErrMissingLabel}
			}
			warn(WarnMissingLabel, n.Name, "lacks %s; left out, as Kueue leaves it out of the topology", missing)
			continue
		}
		if padded != "" {
			warn(WarnPadded, n.Name, "lacks %s; padded", padded)
		}
		node := topology.NodeSpec{Name: n.Name, Path: path, GPUs: gpus, Flavor: opts.DefaultFlavor, Resources: resources}
		if v, ok := n.Labels[flavorLabel]; ok && v != "" {
			node.Flavor = v
		}
		if gpus == 0 {
			node.Flavor = "" // a CPU-only node has no GPU model
		}
		if node.Flavor == "" && gpus > 0 {
			noFlavor = append(noFlavor, n.Name)
		}
		if opts.PoolLabel != "" {
			node.Pool = n.Labels[opts.PoolLabel]
		}
		for _, k := range opts.KeepLabels {
			if v, ok := n.Labels[k]; ok {
				if node.Labels == nil {
					node.Labels = map[string]string{}
				}
				node.Labels[k] = v
			}
		}
		v, ok := n.Labels[opts.NVLinkLabel]
		nvl = append(nvl, v)
		hasNVL = append(hasNVL, ok && opts.NVLinkLabel != "")
		spec.Nodes = append(spec.Nodes, node)
	}
	if len(spec.Nodes) == 0 {
		return nil, &Error{Index: -1, Detail: fmt.Sprintf("%d nodes read, none placed", len(nodes)), Err: ErrNoNodes}
	}
	if len(noFlavor) > 0 {
		warn(WarnNoFlavor, "", "%d of %d nodes (first %q) lack %s and no DefaultFlavor is set; their flavor is \"\"",
			len(noFlavor), len(spec.Nodes), noFlavor[0], flavorLabel)
	}
	if opts.NVLinkLabel != "" && slices.Contains(hasNVL, true) {
		if err := nvlink(&spec, nvl, hasNVL, opts, warn); err != nil {
			return nil, err
		}
	}
	spec.Levels = append(spec.Levels, "node")
	if _, err := topology.New(spec); err != nil {
		return nil, err
	}
	res.Spec = spec
	return res, nil
}

// domainPath returns the node's domain names, top first. A missing label
// at the padded edge becomes "~" (bottom) or "~<first present value>"
// (top); any other missing label is reported in missing.
func domainPath(n Node, levels []Level, padTop, padBottom bool) (path []string, padded, missing string) {
	vals := make([]string, len(levels))
	present := make([]bool, len(levels))
	first, last := -1, -1
	for i, l := range levels {
		v, ok := n.Labels[l.Label]
		if v == "" {
			v = emptyValue
		}
		vals[i], present[i] = v, ok
		if ok {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	var pads []string
	for i := range levels {
		if present[i] {
			continue
		}
		switch {
		case padTop && first >= 0 && i < first:
			vals[i] = "~" + vals[first]
		case padBottom && last >= 0 && i > last:
			vals[i] = "~"
		default:
			return nil, "", levels[i].Label
		}
		pads = append(pads, levels[i].Label)
	}
	path = make([]string, len(levels))
	for i := range vals {
		path[i] = strings.Join(vals[:i+1], "/")
	}
	return path, strings.Join(pads, ", "), ""
}

// nvlink makes the NVLink label a level if every domain lies within one
// lowest-level domain, and a node label otherwise. Nodes without the label
// are their own NVLink domain ("<lowest>/~<node>").
func nvlink(spec *topology.Spec, vals []string, has []bool, opts Options, warn func(WarningKind, string, string, ...any)) error {
	depth := len(spec.Levels)
	lowest := func(i int) string {
		if depth == 0 {
			return ""
		}
		return spec.Nodes[i].Path[depth-1]
	}
	within := map[string]string{}  // NVLink value -> lowest domain
	perLeaf := map[string]string{} // lowest domain -> its only NVLink value, "\x00" if several
	nested, coincide := true, true
	for i := range spec.Nodes {
		leaf := lowest(i)
		if !has[i] {
			coincide = false
			continue
		}
		if d, ok := within[vals[i]]; ok && d != leaf {
			nested = false
			if opts.Strict {
				return &Error{Node: spec.Nodes[i].Name, Index: -1, Detail: fmt.Sprintf("%s=%s is in %q and %q", opts.NVLinkLabel, vals[i], d, leaf), Err: ErrNotNested}
			}
		}
		within[vals[i]] = leaf
		if v, ok := perLeaf[leaf]; ok && v != vals[i] {
			coincide = false
		}
		perLeaf[leaf] = vals[i]
	}
	if !nested {
		warn(WarnNotNested, "", "%s spans several %q domains; kept as a node label", opts.NVLinkLabel, spec.Levels[depth-1])
		for i := range spec.Nodes {
			if has[i] {
				if spec.Nodes[i].Labels == nil {
					spec.Nodes[i].Labels = map[string]string{}
				}
				spec.Nodes[i].Labels[opts.NVLinkLabel] = vals[i]
			}
		}
		return nil
	}
	if coincide && depth > 0 {
		spec.NVLink = spec.Levels[depth-1]
		return nil
	}
	spec.Levels = append(spec.Levels, "nvlink")
	spec.NVLink = "nvlink"
	for i := range spec.Nodes {
		v := "~" + spec.Nodes[i].Name
		if has[i] {
			v = vals[i]
			if v == "" {
				v = emptyValue
			}
		}
		if leaf := lowest(i); leaf != "" {
			v = leaf + "/" + v
		}
		spec.Nodes[i].Path = append(spec.Nodes[i].Path, v)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
