package slurm

import (
	"fmt"
	"strconv"

	"sigs.k8s.io/yaml"
)

// yamlTopology is one item of topology.yaml (Slurm 25.05+), with the field
// names of Slurm's data_parser.
type yamlTopology struct {
	Topology       string     `json:"topology"`
	ClusterDefault bool       `json:"cluster_default"`
	Tree           *yamlTree  `json:"tree,omitempty"`
	Block          *yamlBlock `json:"block,omitempty"`
	Ring           any        `json:"ring,omitempty"`
	Torus3D        any        `json:"torus3d,omitempty"`
	Flat           any        `json:"flat,omitempty"`
}

type yamlTree struct {
	Switches []struct {
		Switch   string  `json:"switch"`
		Children string  `json:"children"`
		Nodes    string  `json:"nodes"`
		Speed    *uint32 `json:"link_speed,omitempty"` // skipped by Slurm's YAML parser; kept here
	} `json:"switches"`
}

type yamlBlock struct {
	BlockSizes []int `json:"block_sizes"`
	Blocks     []struct {
		Block string `json:"block"`
		Nodes string `json:"nodes"`
	} `json:"blocks"`
}

// parseYAML reads topology.yaml and returns the desc of the topology picked
// by name (see Options.Topology) and that name. Its decoder keeps no line
// numbers, so errors name the topology and the switch or block instead.
func parseYAML(data []byte, pick string) (*desc, string, error) {
	if len(data) > MaxFileSize {
		return nil, "", &ParseError{Detail: fmt.Sprintf("file larger than %d bytes", MaxFileSize), Err: ErrSyntax}
	}
	var items []yamlTopology
	if err := yaml.UnmarshalStrict(data, &items); err != nil {
		return nil, "", &ParseError{Detail: err.Error(), Err: ErrSyntax}
	}
	if len(items) == 0 {
		return nil, "", &ParseError{Detail: "no topologies", Err: ErrEmpty}
	}
	seen := map[string]bool{}
	chosen := -1
	for i, t := range items {
		if t.Topology == "" {
			return nil, "", &ParseError{Detail: fmt.Sprintf("item %d has no topology name", i), Err: ErrNoName}
		}
		if seen[t.Topology] {
			return nil, "", &ParseError{Name: t.Topology, Err: ErrDuplicate}
		}
		seen[t.Topology] = true
		if (pick != "" && t.Topology == pick) || (pick == "" && t.ClusterDefault && chosen < 0) {
			chosen = i
		}
	}
	if chosen < 0 && pick == "" && len(items) == 1 {
		chosen = 0
	}
	if chosen < 0 {
		detail := "no cluster_default topology among several"
		if pick != "" {
			detail = "no topology named " + strconv.Quote(pick)
		}
		return nil, "", &ParseError{Name: pick, Detail: detail, Err: ErrNoTopology}
	}
	t := items[chosen]
	kinds := 0
	for _, present := range []bool{t.Tree != nil, t.Block != nil, t.Ring != nil, t.Torus3D != nil, t.Flat != nil} {
		if present {
			kinds++
		}
	}
	if kinds != 1 {
		return nil, "", &ParseError{Name: t.Topology, Detail: "needs exactly one of tree, block, ring, torus3d, flat", Err: ErrSyntax}
	}
	d := &desc{}
	switch {
	case t.Tree != nil:
		for _, s := range t.Tree.Switches {
			if err := checkName(s.Switch, 0); err != nil {
				pe := err.(*ParseError)
				pe.Name, pe.Detail = t.Topology, "switch "+strconv.Quote(s.Switch)
				return nil, "", pe
			}
			if s.Children != "" && s.Nodes != "" {
				return nil, "", &ParseError{Name: s.Switch, Detail: "topology " + t.Topology, Err: ErrMixed}
			}
			rec := switchRec{name: s.Switch}
			var err error
			if rec.switches, err = d.expand(s.Children, 0, s.Switch); err != nil {
				return nil, "", err
			}
			if rec.nodes, err = d.expand(s.Nodes, 0, s.Switch); err != nil {
				return nil, "", err
			}
			if s.Speed != nil {
				rec.linkSpeed, rec.hasSpeed = *s.Speed, true
			}
			d.switches = append(d.switches, rec)
		}
	case t.Block != nil:
		for _, s := range t.Block.BlockSizes {
			if s <= 0 {
				return nil, "", &ParseError{Name: t.Topology, Detail: fmt.Sprintf("block_sizes %v", t.Block.BlockSizes), Err: ErrBlockSizes}
			}
		}
		if len(t.Block.BlockSizes) > 0 {
			d.sizes = t.Block.BlockSizes
		}
		for _, bl := range t.Block.Blocks {
			if err := checkName(bl.Block, 0); err != nil {
				pe := err.(*ParseError)
				pe.Name, pe.Detail = t.Topology, "block "+strconv.Quote(bl.Block)
				return nil, "", pe
			}
			nodes, err := d.expand(bl.Nodes, 0, bl.Block)
			if err != nil {
				return nil, "", err
			}
			d.blocks = append(d.blocks, blockRec{name: bl.Block, nodes: nodes})
		}
	default:
		return nil, "", &ParseError{Name: t.Topology, Detail: "ring, torus3d and flat topologies are not level trees", Err: ErrUnsupported}
	}
	return d, t.Topology, nil
}
