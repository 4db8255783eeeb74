package placement

import (
	"github.com/fleetsched/fleet/topology"
)

// Warm reports where model weights are already present, so that an
// inference replica starts without pulling them ("nodes with weights
// pre-pulled"). The scheduler keeps one from what the host reports.
type Warm interface {
	// WarmNodes returns the nodes holding model's weights, in ascending
	// ID order. The caller does not modify the slice. It must be
	// deterministic and must not change during a Place call.
	WarmNodes(model string) []topology.NodeID
}

// placeWarm places a one-pod workload that names its model on a warm
// node, when Options.Warm lists one with room in an accepted group: the
// node of the most preferred tier, then the tightest (the fewest pods of
// the same shape left after it), then the preferred model, then the
// lowest ID. It reads at most Options.MaxWarm warm nodes, in ID order.
// Any other workload, or no warm node with room, is left to the usual
// policy.
func (p *Placer) placeWarm() (Assignment, bool) {
	w, f := p.w, p.f
	if p.opt.Warm == nil || w.Model == "" || w.Pods() != 1 {
		return Assignment{}, false
	}
	nodes := p.opt.Warm.WarmNodes(w.Model)
	p.setPodSet(p.order[0])
	best, bestTier, bestFit, bestRank := topology.NodeID(-1), 0, 0, 0
	for i, n := range nodes {
		if i >= p.opt.MaxWarm {
			break
		}
		if n < 0 || int(n) >= f.NumNodes() {
			continue
		}
		g := f.NodeGroup(n)
		rank, ok := w.Accepts(f.GroupFlavor(g))
		if !ok || !p.inGroups(g) {
			continue
		}
		p.g = g
		c := p.nodeCap(n)
		if c == 0 {
			continue
		}
		tier := p.tier(g)
		if best < 0 || tier < bestTier || tier == bestTier && (c < bestFit || c == bestFit && rank < bestRank) {
			best, bestTier, bestFit, bestRank = n, tier, c, rank
		}
	}
	if best < 0 {
		return Assignment{}, false
	}
	p.g, p.pods, p.mutating = f.NodeGroup(best), p.pods[:0], false
	p.startTrial()
	p.emitOn(best, 1, -1)
	return Assignment{Workload: w.ID, Group: p.g, Domain: f.NodeDomain(best), Level: p.deep, Span: p.deep, Pods: p.pods}, true
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
