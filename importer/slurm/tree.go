package slurm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fleetsched/fleet/topology"
)

// buildTree turns topology/tree switches into a fleet. Slurm accepts a DAG;
// a level tree needs one parent per switch and per node, so:
//
//   - a switch listed by several parents stays under the first parent in
//     file order (WarnMultiParent); Slurm itself keeps the last as "parent"
//     but routes over all links, so no single choice is exact;
//   - a node listed under several leaves stays under the first
//     (WarnMultiHomed);
//   - a switch with no node below it has no GPUs and no domain
//     (WarnEmptySwitch);
//   - heights count from the leaves, as Slurm's levels do, and a branch
//     shorter than the tallest gets single-child domains
//     "<switch>~pad<height>" up to the top (WarnPadded);
//   - several top switches stay separate domains of the top level
//     (WarnDisjoint): fleet's root spans them, Slurm's jobs cannot.
//
// Fatal as in Slurm: duplicate names, an unknown or self child switch, a
// cycle, no switches.
func (b *builder) buildTree(d *desc, res *Result) (*Result, error) {
	if len(d.switches) == 0 {
		return nil, &ParseError{Err: ErrEmpty}
	}
	idx := make(map[string]int, len(d.switches))
	firstSpeed := -1
	for i, s := range d.switches {
		if j, dup := idx[s.name]; dup {
			return nil, &ParseError{Line: s.line, Name: s.name, Detail: fmt.Sprintf("first on line %d", d.switches[j].line), Err: ErrDuplicate}
		}
		idx[s.name] = i
		if s.hasSpeed {
			if res.LinkSpeeds == nil {
				res.LinkSpeeds = map[string]uint32{}
				firstSpeed = i
			}
			res.LinkSpeeds[s.name] = s.linkSpeed
		}
	}
	if firstSpeed >= 0 {
		// One note for the file: LinkSpeed is usually on every switch.
		s := d.switches[firstSpeed]
		res.Notes = append(res.Notes, Warning{Kind: WarnIgnoredField, Line: s.line, Name: s.name,
			Detail: fmt.Sprintf("LinkSpeed on %d of %d switches is kept in Result.LinkSpeeds; fleet does not model it", len(res.LinkSpeeds), len(d.switches))})
	}
	n := len(d.switches)
	parent := make([]int, n)
	for i := range parent {
		parent[i] = -1
	}
	kids := make([][]int, n) // every link, for the cycle check
	for i, s := range d.switches {
		seen := map[int]bool{}
		for _, c := range s.switches {
			j, ok := idx[c]
			if !ok {
				return nil, &ParseError{Line: s.line, Name: s.name, Detail: "child " + strconv.Quote(c), Err: ErrUnknownSwitch}
			}
			if j == i {
				return nil, &ParseError{Line: s.line, Name: s.name, Err: ErrSelfChild}
			}
			if seen[j] {
				continue
			}
			seen[j] = true
			kids[i] = append(kids[i], j)
		}
	}
	if err := checkCycles(d, kids); err != nil {
		return nil, err
	}
	tree := make([][]int, n) // chosen links only
	for i, s := range d.switches {
		for _, j := range kids[i] {
			if parent[j] >= 0 {
				if err := b.warn(WarnMultiParent, s.line, d.switches[j].name, "also under %q (line %d); kept under %q",
					s.name, s.line, d.switches[parent[j]].name); err != nil {
					return nil, err
				}
				continue
			}
			parent[j] = i
			tree[i] = append(tree[i], j)
		}
	}

	// Nodes: first leaf in file order wins.
	leafOf := map[string]int{}
	leafNodes := make([][]string, n)
	for i, s := range d.switches {
		for _, nd := range s.nodes {
			if b.known != nil && !b.known[nd] {
				if err := b.warn(WarnUnknownNode, s.line, nd, "not a node Slurm knows; dropped from %q", s.name); err != nil {
					return nil, err
				}
				continue
			}
			if j, ok := leafOf[nd]; ok {
				if j != i {
					if err := b.warn(WarnMultiHomed, s.line, nd, "also under %q; kept under %q", s.name, d.switches[j].name); err != nil {
						return nil, err
					}
				}
				continue
			}
			leafOf[nd] = i
			leafNodes[i] = append(leafNodes[i], nd)
		}
	}

	// Heights over the non-empty part of the chosen tree; -1 is empty.
	height := make([]int, n)
	done := make([]bool, n)
	var h func(i int) int
	h = func(i int) int {
		if done[i] {
			return height[i]
		}
		height[i] = -1
		if len(leafNodes[i]) > 0 {
			height[i] = 0
		}
		for _, j := range tree[i] {
			if hj := h(j); hj >= 0 && hj+1 > height[i] {
				height[i] = hj + 1
			}
		}
		done[i] = true
		return height[i]
	}
	top := -1
	var roots []string
	for i, s := range d.switches {
		if hi := h(i); hi < 0 {
			if err := b.warn(WarnEmptySwitch, s.line, s.name, "no node below it"); err != nil {
				return nil, err
			}
		} else if parent[i] < 0 {
			roots = append(roots, s.name)
			top = max(top, hi)
		}
	}
	if top < 0 {
		if b.known == nil {
			return nil, &ParseError{Detail: "no switch has nodes", Err: ErrNoNodes}
		}
		top = 0
	}
	if len(roots) > 1 {
		if err := b.warn(WarnDisjoint, 0, "", "no switch reaches every node; top switches: %s", strings.Join(roots, ", ")); err != nil {
			return nil, err
		}
	}
	levels, err := b.levelNames(top+1, func(i int) string { return heightName(top - i) })
	if err != nil {
		return nil, err
	}
	spec := topology.Spec{Levels: levels}
	padded := make([]bool, n)
	placed := map[string]bool{}
	for i, s := range d.switches {
		if len(leafNodes[i]) == 0 {
			continue
		}
		path := make([]string, top+1) // index = top - height
		cur := i
		for {
			path[top-height[cur]] = d.switches[cur].name
			next, stop := parent[cur], top
			if next >= 0 {
				stop = height[next] - 1
			}
			for k := height[cur] + 1; k <= stop; k++ {
				path[top-k] = d.switches[cur].name + "~pad" + strconv.Itoa(k)
			}
			if stop > height[cur] && !padded[cur] {
				padded[cur] = true
				if err := b.warn(WarnPadded, d.switches[cur].line, d.switches[cur].name,
					"height %d padded up to %d", height[cur], stop); err != nil {
					return nil, err
				}
			}
			if next < 0 {
				break
			}
			cur = next
		}
		for _, nd := range leafNodes[i] {
			placed[nd] = true
			spec.Nodes = append(spec.Nodes, b.node(nd, append([]string(nil), path...)))
		}
		_ = s
	}
	if err := b.uncovered(&spec, placed); err != nil {
		return nil, err
	}
	return b.finish(spec, res)
}

// heightName is the default name of the level at height h above the nodes.
func heightName(h int) string {
	switch h {
	case 0:
		return "leaf"
	case 1:
		return "spine"
	case 2:
		return "core"
	}
	return "tier" + strconv.Itoa(h)
}

// checkCycles refuses a switch graph with a cycle, naming a switch on it.
// It is iterative so that no input can exhaust the stack.
func checkCycles(d *desc, kids [][]int) error {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(kids))
	type frame struct{ v, next int }
	for s := range kids {
		if color[s] != white {
			continue
		}
		stack := []frame{{s, 0}}
		color[s] = grey
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == len(kids[f.v]) {
				color[f.v] = black
				stack = stack[:len(stack)-1]
				continue
			}
			c := kids[f.v][f.next]
			f.next++
			switch color[c] {
			case grey:
				sw := d.switches[c]
				return &ParseError{Line: sw.line, Name: sw.name, Detail: "cycle through " + strconv.Quote(d.switches[f.v].name), Err: ErrCycle}
			case white:
				color[c] = grey
				stack = append(stack, frame{c, 0})
			}
		}
	}
	return nil
}
