package placement

import (
	"cmp"
	"iter"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Warm reports where model weights are already present, so that an
// inference replica starts without pulling them ("nodes with weights
// pre-pulled"). The scheduler keeps one from what the host reports.
type Warm interface {
	// WarmNodes returns the nodes holding model's weights, in ascending
	// ID order (an entry not above the one before it, a repeat among
	// them, is skipped). The caller does not modify the slice. It must be
	// deterministic and must not change during a Place call.
	WarmNodes(model string) []topology.NodeID
}

// WarmIn yields the nodes of f a Warm list names, in its order, past
// any entry not above the one before it (a repeat among them, out of the
// ascending order WarmNodes promises): how placement and the victim
// search read a list, so that no node's room counts twice.
func WarmIn(f *topology.Fleet, nodes []topology.NodeID) iter.Seq[topology.NodeID] {
	return func(yield func(topology.NodeID) bool) {
		last := topology.NodeID(-1)
		for _, n := range nodes {
			if n <= last || int(n) >= f.NumNodes() {
				continue
			}
			last = n
			if !yield(n) {
				return
			}
		}
	}
}

// WarmEligible reports whether placement (and the victim search) may
// prefer warm nodes for w: it names its model and has one pod set of
// interchangeable pods, with no topology request, spread or rank groups,
// so any node is as good as another but for its fit.
func WarmEligible(w *gang.Workload) bool {
	return w.Model != "" && len(w.PodSets) == 1 && w.Topology == (gang.TopologyRequest{}) &&
		w.Spread == (gang.Spread{}) && len(w.PodSets[0].RankGroups) == 0
}

// placeWarm places a workload that WarmEligible accepts on warm nodes,
// when Options.Warm lists enough with room in one accepted group for all
// its pods: the group of the most preferred tier, then the preferred
// model, then group order; in it the tightest nodes first (the fewest
// pods of the same shape left after them), then the lowest ID. It reads
// at most Options.MaxWarm warm nodes, in ID order. Any other workload, or
// too little warm room, is left to the usual policy.
func (p *Placer) placeWarm() (Assignment, bool) {
	w, f := p.w, p.f
	if p.opt.Warm == nil || !WarmEligible(w) {
		return Assignment{}, false
	}
	nodes := p.opt.Warm.WarmNodes(w.Model)
	nodes = nodes[:min(len(nodes), p.opt.MaxWarm)]
	p.setPodSet(p.order[0])
	count := w.PodSets[0].Count
	p.nodes = p.nodes[:0]
	for n := range WarmIn(f, nodes) {
		g := f.NodeGroup(n)
		if _, ok := w.Accepts(f.GroupFlavor(g)); !ok || !p.inGroups(g) {
			continue
		}
		p.g = g
		if c := p.nodeCap(n); c > 0 {
			p.nodes = append(p.nodes, candidate{n: n, free: c})
		}
	}
	// The group: the first of the most preferred tier (then model) whose
	// warm nodes hold every pod.
	best, bestTier, bestRank, found := topology.GroupID(0), 0, 0, false
	for _, g := range p.groups {
		room := 0
		for _, c := range p.nodes {
			if f.NodeGroup(c.n) == g {
				room += c.free
			}
		}
		if room < count {
			continue
		}
		tier := p.tier(g)
		rank, _ := w.Accepts(f.GroupFlavor(g))
		if !found || tier < bestTier || tier == bestTier && rank < bestRank {
			best, bestTier, bestRank, found = g, tier, rank, true
		}
	}
	if !found {
		return Assignment{}, false
	}
	p.nodes = slices.DeleteFunc(p.nodes, func(c candidate) bool { return f.NodeGroup(c.n) != best })
	slices.SortStableFunc(p.nodes, func(a, b candidate) int { return cmp.Or(cmp.Compare(a.free, b.free), cmp.Compare(a.n, b.n)) })
	p.g, p.pods, p.mutating = best, p.pods[:0], false
	p.startTrial()
	for _, c := range p.nodes {
		if count == 0 {
			break
		}
		take := min(c.free, count)
		p.emitOn(c.n, take, -1)
		count -= take
	}
	a := Assignment{Workload: w.ID, Group: best, Pods: p.pods}
	a.Span = p.span()
	a.Level, a.Domain = a.Span, f.DomainOf(p.pods[0].Node, a.Span)
	return a, true
}

// inGroups reports whether g is one of the workload's candidate groups.
func (p *Placer) inGroups(g topology.GroupID) bool {
	for _, c := range p.groups {
		if c == g {
			return true
		}
	}
	return false
}
