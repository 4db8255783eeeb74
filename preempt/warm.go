package preempt

import (
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// A spike of inference replicas should land where their model's weights
// already are: when the preemptor names its model and has interchangeable
// pods (placement.WarmEligible: one replica, or a run of them searched
// together) and Options.Placement.Warm lists warm nodes, the search frees
// warm nodes first. Warmth (how many pods warm nodes cannot hold) ranks
// after the victims' highest priority and before their cost: the search
// never evicts more important work to reach a warm node, but pays more
// lost work for one.

// warmMarks stamps, per search, the domains that hold a warm node for the
// preemptor's model.
type warmMarks struct {
	on    bool
	epoch uint32
	dom   []uint32 // by DomainID: epoch when the domain holds a warm node
	nodes []topology.NodeID
}

// defaultMaxWarm is placement's default bound on the warm nodes read.
const defaultMaxWarm = 256

// markWarm stamps the domains over the preemptor's warm nodes, or turns
// the preference off for this search.
func (s *Searcher) markWarm() {
	m := &s.warm
	m.on, m.nodes = false, nil
	w, warm := s.req.W, s.opt.Placement.Warm
	if warm == nil || w == nil || !placement.WarmEligible(w) {
		return
	}
	nodes := warm.WarmNodes(w.Model)
	limit := s.opt.Placement.MaxWarm
	if limit <= 0 {
		limit = defaultMaxWarm
	}
	nodes = nodes[:min(len(nodes), limit)]
	if len(nodes) == 0 {
		return
	}
	f := s.fleet
	if len(m.dom) != f.NumDomains() {
		m.dom, m.epoch = make([]uint32, f.NumDomains()), 0
	}
	if m.epoch++; m.epoch == 0 {
		clear(m.dom)
		m.epoch = 1
	}
	depth := topology.Level(f.Depth())
	for n := range placement.WarmIn(f, nodes) {
		for l := depth; l >= 0; l-- {
			d := f.DomainOf(n, l)
			if m.dom[d] == m.epoch {
				break // its ancestors are stamped already
			}
			m.dom[d] = m.epoch
		}
	}
	m.on, m.nodes = true, nodes
}

// coldDomain is 1 when the preference is on and no node below d is warm:
// a lower bound of the coldness of its nodes, as the frontier needs.
func (s *Searcher) coldDomain(d topology.DomainID) uint8 {
	if !s.warm.on || s.warm.dom[d] == s.warm.epoch {
		return 0
	}
	return 1
}

// coldNode is coldDomain of node n.
func (s *Searcher) coldNode(n topology.NodeID) uint8 { return s.coldDomain(s.fleet.NodeDomain(n)) }

// coldSet is, when the preference is on, how many of the preemptor's pods
// the warm nodes of an accepted model cannot hold once the taken victims
// are gone; 0 when it is off.
func (s *Searcher) coldSet() int {
	f, k, w := s.fleet, s.shape.podGPUs, s.req.W
	if !s.warm.on {
		return 0
	}
	cold := w.PodSets[0].Count
	for n := range placement.WarmIn(f, s.warm.nodes) {
		if cold <= 0 {
			break
		}
		if f.Health(n) != topology.Healthy {
			continue
		}
		if _, ok := w.Accepts(f.GroupFlavor(f.NodeGroup(n))); ok {
			cold -= (f.Free(n) + int(s.freed[n])) / k
		}
	}
	return max(cold, 0)
}
