package slurm

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/fleetsched/fleet/topology"
)

// WriteConf writes spec as a topology/tree topology.conf: one line per leaf
// domain with its nodes, then one line per domain of each higher level with
// its children, bottom up, each group in the order of first appearance.
// ParseConf with the same GPU count and flavor reads it back to the same
// fleet, with nodes grouped by leaf and default level names.
//
// A topology.conf carries neither GPU counts, flavors, pools, labels nor
// level names, so those are not written. WriteConf refuses (a *ParseError
// wrapping ErrCannotExport) a fleet with no level above the node, a domain
// name used at two levels (Slurm's switch names are one namespace), and a
// name a hostlist or a key=value line cannot carry. A fleet with several
// top-level domains has no switch above them, so reading it back warns
// WarnDisjoint: Slurm would need TopologyParam=TopoOptional to span them.
func WriteConf(w io.Writer, spec topology.Spec) error {
	if _, err := topology.New(spec); err != nil {
		return err
	}
	depth := len(spec.Levels) - 1
	if depth == 0 {
		return &ParseError{Detail: "the fleet has no switch level", Err: ErrCannotExport}
	}
	// Per level, domains in first-appearance order with their children.
	type dom struct {
		name     string
		children []string
	}
	levels := make([][]*dom, depth)
	index := make([]map[string]*dom, depth)
	levelOf := map[string]int{}
	for i := range index {
		index[i] = map[string]*dom{}
	}
	for _, n := range spec.Nodes {
		if strings.ContainsAny(n.Name, "#\"\\=") {
			return &ParseError{Name: n.Name, Detail: "not a valid Slurm node name", Err: ErrCannotExport}
		}
		for l := range depth {
			name := n.Path[l]
			d, ok := index[l][name]
			if !ok {
				if err := exportable(name); err != nil {
					return err
				}
				if prev, clash := levelOf[name]; clash && prev != l {
					return &ParseError{Name: name, Detail: fmt.Sprintf("name used at levels %q and %q", spec.Levels[prev], spec.Levels[l]), Err: ErrCannotExport}
				}
				levelOf[name] = l
				d = &dom{name: name}
				index[l][name] = d
				levels[l] = append(levels[l], d)
				if l > 0 {
					up := index[l-1][n.Path[l-1]]
					up.children = append(up.children, name)
				}
			}
			if l == depth-1 {
				d.children = append(d.children, n.Name)
			}
		}
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %d nodes; levels %s\n", len(spec.Nodes), strings.Join(spec.Levels, " > "))
	for l := depth - 1; l >= 0; l-- {
		key := "Switches"
		if l == depth-1 {
			key = "Nodes"
		}
		for _, d := range levels[l] {
			list, err := CompressHostlist(d.children)
			if err != nil {
				return &ParseError{Name: d.name, Detail: err.Error(), Err: ErrCannotExport}
			}
			fmt.Fprintf(bw, "SwitchName=%s %s=%s\n", d.name, key, list)
		}
	}
	return bw.Flush()
}

func exportable(name string) error {
	if len(name) > maxNameLen || strings.ContainsAny(name, "[], \t\r\n#\"\\=") {
		return &ParseError{Name: name, Detail: "not a valid Slurm switch name", Err: ErrCannotExport}
	}
	return nil
}
