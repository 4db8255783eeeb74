package fleet

import "github.com/fleetsched/fleet/topology"

// crossingViews lists the leaves crossed by running gangs that span
// several leaves, with their counts, for a Snapshot.
func (s *Scheduler) crossingViews() []LeafCrossings {
	c := s.books.Crossings()
	lo, hi := c.Leaves()
	var out []LeafCrossings
	for d := lo; d < hi; d++ {
		if n := c.Crossing(d); n > 0 {
			out = append(out, LeafCrossings{Leaf: s.fleet.DomainName(d), Gangs: n})
		}
	}
	return out
}

// Crossing is the number of running gangs spanning several leaves that
// have a pod under leaf (a domain of the level just above the nodes, by
// name); 0 for a leaf no such gang uses or a name that is not a leaf.
func (s *Scheduler) Crossing(leaf string) int {
	f := s.fleet
	if f.Depth() < 2 {
		return 0
	}
	d, ok := f.Domain(topology.Level(f.Depth()-1), leaf)
	if !ok {
		return 0
	}
	return s.books.Crossings().Crossing(d)
}
