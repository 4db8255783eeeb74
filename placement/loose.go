package placement

import (
	"cmp"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Unconstrained gangs (rule 2 of Placer.Place).
//
// A gang that names no required and no preferred level asks for no
// locality: any nodes will do. When no one node holds it, it fills the
// holes of partly used nodes first, tightest first (fewest free GPUs,
// then lowest ID), as Kueue's least-free-capacity rule for unconstrained
// pod sets does, so it takes no fully free node while holes hold it. The
// pods that holes do not hold need fully free nodes. Kueue takes the
// first ones in its order (here, lowest ID); fleet asks where its own
// policy would put a whole-node gang of that many nodes, and takes that
// when it leaves the largest free block of every level at least as large
// as Kueue's choice would. Kueue's rule is the floor: no level is left
// with a smaller largest free block than it would leave.

// loose reports whether the gang takes the unconstrained path in group
// p.g: no required or preferred level, one pod set of whole GPUs with no
// shares, resources, spread, segments or rank groups, no Scorer, and
// nodes of one size in the group.
func (p *Placer) loose() bool {
	w := p.w
	if w.Topology.Required != "" || w.Topology.Preferred != "" || len(w.PodSets) != 1 ||
		w.PodSets[0].GPUsPerPod <= 0 || p.shared || p.grouped || w.Topology.Segment.Size > 0 ||
		p.maxPerNode > 0 || p.maxPerDom > 0 || p.opt.Scorer != nil || p.levelsOnly {
		return false
	}
	s := p.f.Stats(topology.Root, p.g)
	return s.GPUs == s.Nodes*p.f.MaxGPUsPerNode()
}

// placeLoose places the unconstrained gang in group p.g across nodes, as
// described above, leaving its pods in p.pods in node order; it returns
// the domain that holds them all and its level.
func (p *Placer) placeLoose() (topology.DomainID, topology.Level, bool) {
	f, g := p.f, p.g
	k, size := p.w.PodSets[0].GPUsPerPod, f.MaxGPUsPerNode()
	per, rest := size/k, p.w.PodSets[0].Count
	p.cands = p.cands[:0]
	f.AscendNodesByFree(g, k, func(n topology.NodeID, free int) bool {
		if free == size {
			return false // fully free nodes come last
		}
		if !p.avoided(n) {
			c := min(free/k, rest)
			p.cands = append(p.cands, candidate{n: n, cap: c})
			rest -= c
		}
		return rest > 0
	})
	if rest > 0 {
		holes := len(p.cands)
		m := (rest + per - 1) / per
		// Kueue's choice: the first fully free nodes.
		f.AscendNodesByFreeFrom(g, size, 0, func(n topology.NodeID, _ int) bool {
			if !p.avoided(n) {
				p.cands = append(p.cands, candidate{n: n, cap: per})
			}
			return len(p.cands)-holes < m
		})
		if len(p.cands)-holes < m {
			p.cands = p.cands[:0]
			return 0, 0, false
		}
		if m > 1 {
			p.preferOwnFreeNodes(p.cands[holes:], m)
		}
		p.cands[len(p.cands)-1].cap = rest - (m-1)*per
	}
	slices.SortFunc(p.cands, func(a, b candidate) int { return cmp.Compare(a.n, b.n) })
	p.startTrial()
	p.setPodSet(0)
	for _, c := range p.cands {
		if c.cap > 0 {
			p.emit(c.n, c.cap)
		}
	}
	p.cands = p.cands[:0]
	l := p.span()
	return f.DomainOf(p.pods[0].Node, l), l, true
}

// preferOwnFreeNodes replaces the m fully free nodes of floor (Kueue's
// choice, in ID order) with those fleet's policy picks for a whole-node
// gang of m nodes in group p.g, when they leave the largest free block of
// every level at least as large.
func (p *Placer) preferOwnFreeNodes(floor []candidate, m int) {
	f, g := p.f, p.g
	if p.sub == nil {
		p.sub = &Placer{opt: Options{Uplinks: p.opt.Uplinks}, levelsOnly: true}
	}
	p.subW = gang.Workload{ID: p.w.ID, Queue: p.w.Queue, Shape: p.w.Shape, Flavor: f.GroupFlavor(g),
		PodSets: append(p.subW.PodSets[:0], gang.PodSet{Name: p.w.PodSets[0].Name, Count: m, GPUsPerPod: f.MaxGPUsPerNode()}),
		Pools:   p.subW.Pools[:0]}
	if pool := f.GroupPool(g); pool != "" {
		p.subW.Pools = append(p.subW.Pools, pool)
	}
	p.sub.out = append(p.sub.out[:0], p.out...)
	a, err := p.sub.Place(f, &p.subW)
	p.sub.out = p.sub.out[:0]
	if err != nil || a.Group != g || len(a.Pods) != m {
		return
	}
	p.ownNodes = p.ownNodes[:0]
	for _, pod := range a.Pods {
		p.ownNodes = append(p.ownNodes, pod.Node)
	}
	slices.Sort(p.ownNodes)
	p.floorNodes = p.floorNodes[:0]
	for _, c := range floor {
		p.floorNodes = append(p.floorNodes, c.n)
	}
	if slices.Equal(p.ownNodes, p.floorNodes) {
		return
	}
	for l := topology.Level(1); l < p.deep; l++ {
		if p.largestAfter(l, p.ownNodes) < p.largestAfter(l, p.floorNodes) {
			return
		}
	}
	for i, n := range p.ownNodes {
		floor[i].n = n
	}
}

// largestAfter is the most fully free nodes of group p.g that a domain of
// level l keeps once the free nodes taken (sorted by ID) are no longer
// free: the level's largest free block after the placement.
func (p *Placer) largestAfter(l topology.Level, taken []topology.NodeID) int {
	f, g := p.f, p.g
	best := 0
	p.touchedDoms = p.touchedDoms[:0]
	for i := 0; i < len(taken); {
		// A domain's nodes are consecutive IDs: so are its taken nodes.
		d, c := f.DomainOf(taken[i], l), 0
		for ; i < len(taken) && f.DomainOf(taken[i], l) == d; i++ {
			c++
		}
		best = max(best, f.FreeNodes(d, g)-c)
		p.touchedDoms = append(p.touchedDoms, d)
	}
	f.AscendDomainsByFreeNodes(l, g, best+1, func(d topology.DomainID, n int) bool {
		if !slices.Contains(p.touchedDoms, d) {
			best = n // ascending: the last one untouched is the largest
		}
		return true
	})
	return best
}
