package slurm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetsched/fleet/topology"
)

// maxBlockExp is Slurm's bound on k in BlockSizes = base x 2^k.
const maxBlockExp = 15

// buildBlock turns topology/block records into a fleet whose levels are
// the aggregation levels, largest first, then the base block, then the
// node. Adjacency is file order, as in Slurm: the domain of base block i at
// the level of 2^k blocks is i / 2^k, placeholders (BlockName without
// Nodes) included, and it is named by the ranged list of its members, e.g.
// "block[01-04]". Policies:
//
//   - a placeholder, or an aggregate of placeholders only, has no nodes and
//     so no domain (WarnEmptySwitch), but keeps its position;
//   - the last aggregate of a level may hold fewer than 2^k blocks; it is
//     kept as a smaller domain (WarnPartialAggregate), while Slurm never
//     places a segment of that size there;
//   - a level above one that already holds every block is dropped
//     (WarnLevelDropped when BlockSizes asked for it);
//   - a node in several blocks stays in the first (WarnMultiHomed).
//
// Without BlockSizes the levels are 2^0 ... 2^4 base blocks, and the older
// BlockLevels lists those exponents explicitly.
func (b *builder) buildBlock(d *desc, res *Result) (*Result, error) {
	if len(d.blocks) == 0 {
		return nil, &ParseError{Line: d.sizesLine, Err: ErrEmpty}
	}
	idx := make(map[string]int, len(d.blocks))
	owner := map[string]int{}
	nodes := make([][]string, len(d.blocks))
	for i, bl := range d.blocks {
		if j, dup := idx[bl.name]; dup {
			return nil, &ParseError{Line: bl.line, Name: bl.name, Detail: fmt.Sprintf("first on line %d", d.blocks[j].line), Err: ErrDuplicate}
		}
		idx[bl.name] = i
		for _, nd := range bl.nodes {
			if b.known != nil && !b.known[nd] {
				if err := b.warn(WarnUnknownNode, bl.line, nd, "not a node Slurm knows; dropped from %q", bl.name); err != nil {
					return nil, err
				}
				continue
			}
			if j, ok := owner[nd]; ok {
				if j != i {
					if err := b.warn(WarnMultiHomed, bl.line, nd, "also in %q; kept in %q", bl.name, d.blocks[j].name); err != nil {
						return nil, err
					}
				}
				continue
			}
			owner[nd] = i
			nodes[i] = append(nodes[i], nd)
		}
	}
	firstSize := 0
	for _, ns := range nodes {
		if len(ns) > 0 {
			firstSize = len(ns)
			break
		}
	}
	var exps []int
	explicit := true
	switch {
	case d.sizes != nil:
		base := d.sizes[0]
		for _, s := range d.sizes[1:] {
			k, ok := blockExp(base, s)
			if !ok || (len(exps) > 0 && k <= exps[len(exps)-1]) {
				return nil, &ParseError{Line: d.sizesLine, Detail: fmt.Sprintf("%d is not %d x 2^k (0 < k <= 15, increasing)", s, base), Err: ErrBlockSizes}
			}
			exps = append(exps, k)
		}
	case d.levels != nil:
		for _, k := range d.levels {
			if k > 0 && !slices.Contains(exps, k) {
				exps = append(exps, k)
			}
		}
		slices.Sort(exps)
	default:
		if firstSize == 0 {
			return nil, &ParseError{Detail: "no block has nodes and BlockSizes is unset", Err: ErrNoNodes}
		}
		exps, explicit = []int{1, 2, 3, 4}, false
	}
	n := len(d.blocks)
	kept := []int{0}
	for _, k := range exps {
		if 1<<kept[len(kept)-1] >= n {
			if explicit {
				if err := b.warn(WarnLevelDropped, d.sizesLine, "", "level of %d blocks: the level of %d already holds all %d", 1<<k, 1<<kept[len(kept)-1], n); err != nil {
					return nil, err
				}
			}
			continue
		}
		kept = append(kept, k)
	}
	for _, k := range kept[1:] {
		if rem := n % (1 << k); rem != 0 {
			last := n - rem
			if err := b.warn(WarnPartialAggregate, d.blocks[last].line, d.blocks[last].name,
				"last aggregate of the %d-block level holds %d blocks", 1<<k, rem); err != nil {
				return nil, err
			}
		}
	}
	levels, err := b.levelNames(len(kept), func(i int) string {
		k := kept[len(kept)-1-i]
		if k == 0 {
			return "block"
		}
		return "block-x" + strconv.Itoa(1<<k)
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	for i, bl := range d.blocks {
		names[i] = bl.name
	}
	spec := topology.Spec{Levels: levels}
	placed := map[string]bool{}
	for i, bl := range d.blocks {
		if len(nodes[i]) == 0 {
			if err := b.warn(WarnEmptySwitch, bl.line, bl.name, "placeholder block"); err != nil {
				return nil, err
			}
			continue
		}
		path := make([]string, len(kept))
		for li := range kept {
			k := kept[len(kept)-1-li]
			lo := i >> k << k
			path[li] = aggregateName(names[lo:min(lo+1<<k, n)])
		}
		for _, nd := range nodes[i] {
			placed[nd] = true
			spec.Nodes = append(spec.Nodes, b.node(nd, slices.Clone(path)))
		}
	}
	if err := b.uncovered(&spec, placed); err != nil {
		return nil, err
	}
	return b.finish(spec, res)
}

// blockExp returns k with size == base x 2^k, 0 < k <= 15.
func blockExp(base, size int) (int, bool) {
	for k := 1; k <= maxBlockExp; k++ {
		if base<<k == size {
			return k, true
		}
	}
	return 0, false
}

// aggregateName is Slurm's ranged name of an aggregated block, e.g.
// "block[1-2]"; names that a hostlist cannot carry are joined with '+'.
func aggregateName(members []string) string {
	if len(members) == 1 {
		return members[0]
	}
	if s, err := CompressHostlist(members); err == nil {
		return s
	}
	return strings.Join(members, "+")
}
