package slurm

import (
	"bytes"
)

// ParseConf imports a topology.conf of the topology/tree plugin
// (SwitchName lines) or the topology/block plugin (BlockName lines and
// BlockSizes or BlockLevels). A file mixing the two is refused, and so is
// one of the topology/ring plugin (RingName lines, ErrUnsupported). Every
// refusal is a *ParseError with the line (and name) of the record; every
// case resolved by a policy is a Warning in the Result.
func ParseConf(data []byte, opts Options) (*Result, error) {
	b, err := newBuilder(opts)
	if err != nil {
		return nil, err
	}
	d, err := parseConf(data)
	if err != nil {
		return nil, err
	}
	return b.build(d, &Result{Topology: "default"})
}

// ParseYAML imports a topology.yaml (Slurm 25.05+): a list of named
// topologies, of which Options.Topology picks one (default: the first with
// cluster_default: true, or the only one). Tree and block topologies are
// read as ParseConf reads them; ring, torus3d and flat are refused with
// ErrUnsupported.
func ParseYAML(data []byte, opts Options) (*Result, error) {
	b, err := newBuilder(opts)
	if err != nil {
		return nil, err
	}
	d, name, err := parseYAML(data, opts.Topology)
	if err != nil {
		return nil, err
	}
	return b.build(d, &Result{Topology: name})
}

// Parse imports either form: a file whose first significant line starts a
// YAML list item ("- ") is topology.yaml, anything else topology.conf.
func Parse(data []byte, opts Options) (*Result, error) {
	if IsYAML(data) {
		return ParseYAML(data, opts)
	}
	return ParseConf(data, opts)
}

// IsYAML reports whether data looks like topology.yaml rather than
// topology.conf: its first line that is neither blank nor a comment starts
// with "-" or "---".
func IsYAML(data []byte) bool {
	for line := range bytes.Lines(data) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		return t[0] == '-'
	}
	return false
}

func (b *builder) build(d *desc, res *Result) (*Result, error) {
	switch {
	case len(d.switches) > 0 && (len(d.blocks) > 0 || d.sizes != nil || d.levels != nil):
		line := d.sizesLine
		if len(d.blocks) > 0 {
			line = d.blocks[0].line
		}
		return nil, &ParseError{Line: line, Err: ErrMixedPlugins}
	case len(d.switches) > 0:
		return b.buildTree(d, res)
	case len(d.blocks) > 0 || d.sizes != nil || d.levels != nil:
		return b.buildBlock(d, res)
	}
	return nil, &ParseError{Err: ErrEmpty}
}
