package preempt

import (
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/topology"
)

// Cheapest nodes. A defragmentation that frees part of a domain (room for
// a gang in whole free nodes) empties the domain's cheapest nodes. To
// rank domains without reading their nodes, the index keeps, per domain
// above the nodes' own, the nodes that evicting indexed candidates could
// free whole, by their candidate GPUs a that are not draining (a class:
// 0..MaxGPUsPerNode) and, within a class, by w, the sum over those GPUs
// of the start of their unsaved work. Emptying such a node loses at least
// a x (now + overhead) - w GPU-seconds, as DefaultCost counts it: one
// order per class, whatever now is, so the k cheapest nodes of a domain
// are a merge of the heads of its classes.

// lineKey is a node in its domains' class trees: w, largest first (the
// cheapest at any now), then the node.
type lineKey struct {
	w int64
	n topology.NodeID
}

func lineLess(a, b lineKey) bool {
	if a.w != b.w {
		return a.w > b.w
	}
	return a.n < b.n
}

// nodeLine is a node's place in the class trees (a < 0: in none).
type nodeLine struct {
	a int32
	w int64
}

// lineChanged recomputes node n's class and w and moves it in the class
// trees of every domain above it.
func (x *Index) lineChanged(n topology.NodeID) {
	nl := nodeLine{a: -1}
	if x.clearPrice[n] != noPrice {
		nl.a = 0
		for _, i := range x.onNode[n] {
			e := &x.entries[i]
			if !e.cand || e.run.Draining {
				continue
			}
			for _, ng := range e.run.Nodes {
				if ng.Node == n {
					nl.a += int32(ng.GPUs)
					nl.w += int64(ng.GPUs) * e.from
				}
			}
		}
	}
	old := x.lines[n]
	if old == nl {
		return
	}
	x.lines[n] = nl
	f := x.fleet
	d, ok := f.Parent(f.NodeDomain(n))
	for ; ok; d, ok = f.Parent(d) {
		if old.a >= 0 {
			x.classTree(d, old.a).Delete(lineKey{w: old.w, n: n})
			x.lineCount[d]--
		}
		if nl.a >= 0 {
			x.classTree(d, nl.a).ReplaceOrInsert(lineKey{w: nl.w, n: n})
			x.lineCount[d]++
		}
	}
}

// refile brings the lines of the nodes rebase left stale up to date, as
// lineChanged would have at each change.
func (x *Index) refile() {
	for _, n := range x.stale {
		x.staleAt[n] = false
		x.lineChanged(n)
	}
	x.stale = x.stale[:0]
}

func (x *Index) classTree(d topology.DomainID, a int32) *btree.BTreeG[lineKey] {
	i := int(d)*(x.podSizes+1) + int(a)
	if x.classes[i] == nil {
		x.classes[i] = btree.NewG(8, lineLess)
	}
	return x.classes[i]
}

// CheapestNodesBound reads a lower bound on the work lost at now, in
// GPU-seconds, by emptying any m nodes of domain d whole (free nodes
// cost nothing; work counted as DefaultCost counts it, with its restart
// overhead), from the m cheapest of its nodes that evicting indexed
// candidates could free. ok is false when fewer than m of its nodes
// could be freed. d must be above the nodes' own domains. It costs
// O(m x MaxGPUsPerNode), whatever the size of d.
//
// Room held by work the index does not hold (a nomination) counts as
// free here, so the figure is a bound, and a plan that must also move
// each mover's GPUs on other nodes, or weighs some work up, costs more.
func (x *Index) CheapestNodesBound(d topology.DomainID, m int, now time.Time, overhead time.Duration) (gpuSeconds float64, ok bool) {
	if m <= 0 {
		return 0, true
	}
	x.refile()
	if int(x.lineCount[d]) < m {
		return 0, false
	}
	c := x.podSizes
	row := x.classes[int(d)*(c+1) : int(d)*(c+1)+c+1]
	k := m
	if row[0] != nil {
		k -= min(k, row[0].Len())
	}
	if k == 0 {
		return 0, true
	}
	// The k cheapest, kept in order: a class is read cheapest first, up
	// to its first node no cheaper than the k-th kept.
	sec, over := now.Unix(), overhead.Seconds()
	best := x.heads[:0]
	for a := 1; a <= c; a++ {
		if row[a] == nil {
			continue
		}
		row[a].Ascend(func(l lineKey) bool {
			v := max(0, float64(int64(a)*sec-l.w)+float64(a)*over)
			if len(best) == k && v >= best[k-1] {
				return false
			}
			i, _ := slices.BinarySearch(best, v)
			if len(best) < k {
				best = append(best, 0)
			}
			copy(best[i+1:], best[i:len(best)-1])
			best[i] = v
			return true
		})
	}
	x.heads = best
	sum := 0.0
	for _, v := range best {
		sum += v
	}
	return sum * (1 - 1e-9), true
}

// NodeBound is a node and a lower bound on the work emptying it loses.
type NodeBound struct {
	Node       topology.NodeID // the node
	GPUSeconds float64         // at least this much work is lost emptying it
}

// CheapestNodes appends to dst the k cheapest nodes of domain d by the
// bound CheapestNodesBound sums (then by node), cheapest first, of the
// nodes that evicting indexed candidates could free whole (free ones
// included, at 0), and reports whether d has more of them: every node
// left out costs at least the last one returned. It costs O(k x
// MaxGPUsPerNode x log), whatever the size of d. d must be above the
// nodes' own domains.
func (x *Index) CheapestNodes(d topology.DomainID, k int, now time.Time, overhead time.Duration, dst []NodeBound) (out []NodeBound, more bool) {
	base := len(dst)
	x.refile()
	if k <= 0 {
		return dst, x.lineCount[d] > 0
	}
	c := x.podSizes
	row := x.classes[int(d)*(c+1) : int(d)*(c+1)+c+1]
	sec, over := now.Unix(), overhead.Seconds()
	less := func(a, b NodeBound) int {
		switch {
		case a.GPUSeconds < b.GPUSeconds:
			return -1
		case a.GPUSeconds > b.GPUSeconds:
			return 1
		}
		return int(a.Node) - int(b.Node)
	}
	for a := 0; a <= c; a++ {
		if row[a] == nil {
			continue
		}
		row[a].Ascend(func(l lineKey) bool {
			v := NodeBound{Node: l.n, GPUSeconds: max(0, (float64(int64(a)*sec-l.w)+float64(a)*over)*(1-1e-9))}
			best := dst[base:]
			if len(best) == k && less(v, best[k-1]) >= 0 {
				return false
			}
			i, _ := slices.BinarySearchFunc(best, v, less)
			if len(best) < k {
				dst = append(dst, NodeBound{})
				best = dst[base:]
			}
			copy(best[i+1:], best[i:len(best)-1])
			best[i] = v
			return true
		})
	}
	return dst, int(x.lineCount[d]) > len(dst)-base
}
