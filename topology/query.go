package topology

import "strconv"

func fmtID(n NodeID) string { return "#" + strconv.Itoa(int(n)) }

// Depth is the number of levels below the fleet; the node level is Depth().
func (f *Fleet) Depth() int { return f.depth }

// Levels returns the level names, top first, ending with the node level.
// The caller must not modify the slice.
func (f *Fleet) Levels() []string { return f.levels }

// Level returns the Level of a level name.
func (f *Fleet) Level(name string) (Level, bool) {
	for i, l := range f.levels {
		if l == name {
			return Level(i + 1), true
		}
	}
	return 0, false
}

// LevelName returns the name of level l; level 0 is "fleet".
func (f *Fleet) LevelName(l Level) string {
	if l <= 0 || int(l) > f.depth {
		return "fleet"
	}
	return f.levels[l-1]
}

// NVLinkLevel is the level that forms one NVLink domain.
func (f *Fleet) NVLinkLevel() Level { return f.nvlink }

// NumNodes is the number of nodes; NodeIDs are 0..NumNodes()-1.
func (f *Fleet) NumNodes() int { return len(f.ncap) }

// NumDomains is the number of domains of every level, the fleet included.
func (f *Fleet) NumDomains() int { return len(f.dom) }

// Node looks a node up by name.
func (f *Fleet) Node(name string) (NodeID, bool) {
	d, ok := f.byName[f.depth][name]
	return NodeID(d - f.nodeBase), ok
}

// NodeName returns the name of node n.
func (f *Fleet) NodeName(n NodeID) string { return f.dom[f.nodeBase+DomainID(n)].name }

// NodeSpec returns the spec of node n. Its Path and Labels are shared with
// the fleet and must not be modified.
func (f *Fleet) NodeSpec(n NodeID) NodeSpec { return f.spec.Nodes[f.nspec[n]] }

// Capacity is node n's GPU count.
func (f *Fleet) Capacity(n NodeID) int { return int(f.ncap[n]) }

// Allocated is the number of GPUs of node n held by workloads.
func (f *Fleet) Allocated(n NodeID) int { return int(f.nalloc[n]) }

// Free is the number of unallocated GPUs of node n, whatever its health.
func (f *Fleet) Free(n NodeID) int { return int(f.ncap[n] - f.nalloc[n]) }

// Health is node n's health.
func (f *Fleet) Health(n NodeID) Health { return f.nhealth[n] }

// NodeGroup is node n's (flavor, pool) group.
func (f *Fleet) NodeGroup(n NodeID) GroupID { return f.ngroup[n] }

// NumGroups is the number of (flavor, pool) groups; GroupIDs are
// 0..NumGroups()-1 in order of first appearance in the spec.
func (f *Fleet) NumGroups() int { return len(f.groups) }

// Group looks a group up by flavor and pool.
func (f *Fleet) Group(flavor, pool string) (GroupID, bool) {
	for i, g := range f.groups {
		if g.flavor == flavor && g.pool == pool {
			return GroupID(i), true
		}
	}
	return 0, false
}

// GroupFlavor is group g's flavor, its GPU model.
func (f *Fleet) GroupFlavor(g GroupID) string { return f.groups[g].flavor }

// GroupPool is group g's pool name ("" for the default pool).
func (f *Fleet) GroupPool(g GroupID) string { return f.groups[g].pool }

// MaxGPUsPerNode is the largest node's GPU count.
func (f *Fleet) MaxGPUsPerNode() int { return f.maxGPUs }

// Domain looks a domain up by level and name (node names at the node
// level; level 0 has the single domain Root).
func (f *Fleet) Domain(l Level, name string) (DomainID, bool) {
	if l < 0 || int(l) > f.depth {
		return 0, false
	}
	if l == 0 {
		return Root, true
	}
	d, ok := f.byName[l][name]
	return d, ok
}

// DomainName is the name of domain d ("" for the fleet).
func (f *Fleet) DomainName(d DomainID) string { return f.dom[d].name }

// DomainLevel is the level of domain d.
func (f *Fleet) DomainLevel(d DomainID) Level { return Level(f.dom[d].level) }

// Parent is the domain above d; the fleet has none.
func (f *Fleet) Parent(d DomainID) (DomainID, bool) {
	p := f.dom[d].parent
	return p, p >= 0
}

// Children returns the range [lo, hi) of d's child domain IDs.
func (f *Fleet) Children(d DomainID) (lo, hi DomainID) { return f.dom[d].childLo, f.dom[d].childHi }

// Nodes returns the range [lo, hi) of the node IDs below d.
func (f *Fleet) Nodes(d DomainID) (lo, hi NodeID) { return f.dom[d].nodeLo, f.dom[d].nodeHi }

// DomainsAt returns the range [lo, hi) of the domain IDs of level l.
func (f *Fleet) DomainsAt(l Level) (lo, hi DomainID) { return f.levelLo[l], f.levelLo[l+1] }

// MaxNodesIn is the most nodes that one domain of level l holds, whatever
// their health or group: 1 at the node level, every node at level 0.
func (f *Fleet) MaxNodesIn(l Level) int {
	if l < 0 || int(l) > f.depth {
		return 0
	}
	return int(f.maxNodes[l])
}

// NodeDomain is node n's own domain (at the node level).
func (f *Fleet) NodeDomain(n NodeID) DomainID { return f.nodeBase + DomainID(n) }

// DomainOf returns the domain of node n at level l.
func (f *Fleet) DomainOf(n NodeID, l Level) DomainID { return f.anc[int(n)*(f.depth+1)+int(l)] }

// Span is the lowest level whose one domain holds every given node: the
// node level when they are all one node, 0 when only the whole fleet does.
// Span of no nodes is the node level.
func (f *Fleet) Span(nodes []NodeID) Level {
	for l := f.depth; l > 0; l-- {
		same := true
		for _, n := range nodes[min(1, len(nodes)):] {
			if f.DomainOf(n, Level(l)) != f.DomainOf(nodes[0], Level(l)) {
				same = false
				break
			}
		}
		if same {
			return Level(l)
		}
	}
	return 0
}

// Stats are a domain's figures for one group or for all groups.
type Stats struct {
	Nodes        int // every node, whatever its health
	HealthyNodes int // nodes neither cordoned, down nor absent
	FreeNodes    int // healthy and with every GPU free: usable by whole-node gangs
	GPUs         int // capacity of every node
	HealthyGPUs  int // capacity of healthy nodes
	FreeGPUs     int // free GPUs on healthy nodes
	Allocated    int // GPUs held on nodes of any health
	Stranded     int // free GPUs on healthy, partly used nodes
}

// Stats returns domain d's figures for group g (or AllGroups) in O(1).
func (f *Fleet) Stats(d DomainID, g GroupID) Stats {
	a := f.agg[int(d)*f.slots+f.slot(g)]
	return Stats{
		Nodes: int(a.nodes), HealthyNodes: int(a.healthyNodes), FreeNodes: int(a.freeNodes),
		GPUs: int(a.gpus), HealthyGPUs: int(a.healthyGPUs), FreeGPUs: int(a.free),
		Allocated: int(a.alloc), Stranded: int(a.stranded),
	}
}

// FreeGPUs is the number of free GPUs on healthy nodes below d.
func (f *Fleet) FreeGPUs(d DomainID, g GroupID) int { return int(f.agg[int(d)*f.slots+f.slot(g)].free) }

// FreeNodes is the number of healthy, fully free nodes below d.
func (f *Fleet) FreeNodes(d DomainID, g GroupID) int {
	return int(f.agg[int(d)*f.slots+f.slot(g)].freeNodes)
}

// Histogram returns, for domain d and group g, the number of healthy nodes
// with exactly k free GPUs at index k (0..MaxGPUsPerNode()). The slice is a
// view into the fleet: read it, do not keep or modify it.
func (f *Fleet) Histogram(d DomainID, g GroupID) []int32 {
	b := f.histBase(d, f.slot(g))
	return f.hist[b : b+f.maxGPUs+1]
}

// NodesWithAtLeast counts the healthy nodes below d with at least k free
// GPUs, in O(GPUs per node).
func (f *Fleet) NodesWithAtLeast(d DomainID, g GroupID, k int) int {
	n := 0
	h := f.Histogram(d, g)
	for _, c := range h[min(max(k, 0), len(h)):] {
		n += int(c)
	}
	return n
}

// PodsThatFit counts how many pods of k GPUs each the healthy nodes below d
// could hold, each pod on one node, in O(GPUs per node).
func (f *Fleet) PodsThatFit(d DomainID, g GroupID, k int) int {
	if k <= 0 {
		return 0
	}
	n := 0
	for free, c := range f.Histogram(d, g) {
		n += int(c) * (free / k)
	}
	return n
}

// Stranded returns the fleet's stranded GPUs (free GPUs on healthy nodes
// that are partly allocated, so cannot serve a whole-node gang) and their
// fraction of healthy GPUs.
func (f *Fleet) Stranded() (gpus int, fraction float64) {
	s := f.Stats(Root, AllGroups)
	if s.HealthyGPUs == 0 {
		return s.Stranded, 0
	}
	return s.Stranded, float64(s.Stranded) / float64(s.HealthyGPUs)
}

// LargestFreeBlock returns, at level l, the domain with the most healthy,
// fully free nodes in group g and that count: the largest whole-node gang
// that could start there now. Ties go to the lower domain ID. With
// AllGroups it counts every group and scans the level.
func (f *Fleet) LargestFreeBlock(l Level, g GroupID) (nodes int, d DomainID) {
	if g != AllGroups && l >= 1 && int(l) < f.depth {
		// The maximum count, then the lowest ID with that count; with no
		// free node anywhere, 0 and the level's first domain, as the scan
		// finds (the index holds only the domains with nodes of g).
		if k, ok := f.byFreeNodes[l][g].Max(); ok && k>>32 > 0 {
			best := int(k >> 32)
			var bestD DomainID
			f.byFreeNodes[l][g].AscendGreaterOrEqual(key(int32(best), 0), func(k uint64) bool {
				bestD = DomainID(uint32(k))
				return false
			})
			return best, bestD
		}
		lo, _ := f.DomainsAt(l)
		return 0, lo
	}
	lo, hi := f.DomainsAt(l)
	best, bestD := -1, lo
	for d := lo; d < hi; d++ {
		if n := f.FreeNodes(d, g); n > best {
			best, bestD = n, d
		}
	}
	return max(best, 0), bestD
}

// LargestFreeBlockBesides is LargestFreeBlock's count at level l
// (1 <= l < Depth()) for group g with domain d left out: what the level
// keeps whole-node room for when d's free nodes are taken. O(log n).
func (f *Fleet) LargestFreeBlockBesides(l Level, g GroupID, d DomainID) int {
	best := 0
	f.byFreeNodes[l][g].Descend(func(k uint64) bool {
		if DomainID(uint32(k)) == d {
			return true
		}
		best = int(k >> 32)
		return false
	})
	return best
}

// AscendDomainsByFreeNodes calls fn for each domain of level l
// (1 <= l < Depth()) holding nodes of group g and at least min fully free
// nodes of it, in increasing order of that count and then of ID, until fn
// returns false: the best-fit order for whole-node gangs.
func (f *Fleet) AscendDomainsByFreeNodes(l Level, g GroupID, min int, fn func(d DomainID, freeNodes int) bool) {
	f.AscendDomainsByFreeNodesFrom(l, g, min, 0, fn)
}

// AscendDomainsByFreeNodesFrom is AscendDomainsByFreeNodes starting at
// the domain (freeNodes, from) in its order, so that a walk can skip a
// run of domains and resume past it.
func (f *Fleet) AscendDomainsByFreeNodesFrom(l Level, g GroupID, freeNodes int, from DomainID, fn func(d DomainID, freeNodes int) bool) {
	f.byFreeNodes[l][g].AscendGreaterOrEqual(key(int32(max(freeNodes, 0)), int32(max(from, 0))), func(k uint64) bool {
		return fn(DomainID(uint32(k)), int(k>>32))
	})
}

// AscendDomainsByFreeGPUs is AscendDomainsByFreeNodes ordered by free GPUs
// on healthy nodes: the best-fit order for gangs of sub-node pods.
func (f *Fleet) AscendDomainsByFreeGPUs(l Level, g GroupID, min int, fn func(d DomainID, freeGPUs int) bool) {
	f.AscendDomainsByFreeGPUsFrom(l, g, min, 0, fn)
}

// AscendDomainsByFreeGPUsFrom is AscendDomainsByFreeGPUs starting at the
// domain (freeGPUs, from) in its order.
func (f *Fleet) AscendDomainsByFreeGPUsFrom(l Level, g GroupID, freeGPUs int, from DomainID, fn func(d DomainID, freeGPUs int) bool) {
	f.byFreeGPUs[l][g].AscendGreaterOrEqual(key(int32(max(freeGPUs, 0)), int32(max(from, 0))), func(k uint64) bool {
		return fn(DomainID(uint32(k)), int(k>>32))
	})
}

// AscendNodesByFree calls fn for each healthy node of group g with at
// least min (>= 1) free GPUs, in increasing order of free GPUs and then of
// ID, until fn returns false: the best-fit order for one pod.
func (f *Fleet) AscendNodesByFree(g GroupID, min int, fn func(n NodeID, free int) bool) {
	f.AscendNodesByFreeFrom(g, min, 0, fn)
}

// AscendNodesByFreeFrom is AscendNodesByFree starting at the node
// (free, from) in its order, so that a walk cut short resumes where it
// stopped.
func (f *Fleet) AscendNodesByFreeFrom(g GroupID, free int, from NodeID, fn func(n NodeID, free int) bool) {
	f.nodesByFree[g].AscendGreaterOrEqual(key(int32(max(free, 1)), int32(max(from, 0))), func(k uint64) bool {
		return fn(NodeID(uint32(k)), int(k>>32))
	})
}
