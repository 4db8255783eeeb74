package preempt

import (
	"cmp"
	"slices"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Avoided domains (Request.Avoid): their nodes hold no pod of the
// target, so the counters leave them out of every cell and the placer
// is told to avoid them. Domains nest, so a cell either lies inside an
// avoided domain (it is never tried), holds some whole (their pods are
// not counted), or is apart from them.

// avoidSpan is an avoided domain's node range.
type avoidSpan struct {
	d      topology.DomainID
	lo, hi topology.NodeID
}

// setupAvoid checks and keeps Request.Avoid, without the domains inside
// another of the list (their pods would be left out twice), sorted by
// first node: domains nest, so what is left is disjoint.
func (s *Searcher) setupAvoid() *NoPlan {
	s.avoid = s.avoid[:0]
	s.avoidIDs = s.avoidIDs[:0]
	f := s.fleet
	for _, d := range s.req.Avoid {
		if d < 0 || int(d) >= f.NumDomains() {
			return s.invalid("avoided domain out of range")
		}
		lo, hi := f.Nodes(d)
		s.avoid = append(s.avoid, avoidSpan{d: d, lo: lo, hi: hi})
	}
	// Outer domains first: a span is kept when it starts past the last
	// kept one's end.
	slices.SortFunc(s.avoid, func(a, b avoidSpan) int {
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(b.hi, a.hi), cmp.Compare(a.d, b.d))
	})
	kept := s.avoid[:0]
	for _, a := range s.avoid {
		if len(kept) > 0 && a.lo < kept[len(kept)-1].hi {
			continue
		}
		kept = append(kept, a)
		s.avoidIDs = append(s.avoidIDs, a.d)
	}
	s.avoid = kept
	return nil
}

// spanFrom returns the index of the first avoided span that ends after
// node n (len(s.avoid) when none does): the spans are disjoint and
// sorted, so their ends are sorted too.
func (s *Searcher) spanFrom(n topology.NodeID) int {
	i, _ := slices.BinarySearchFunc(s.avoid, n, func(a avoidSpan, n topology.NodeID) int {
		if a.hi <= n {
			return -1
		}
		return 1
	})
	return i
}

// avoidedNode reports whether node n lies in an avoided domain.
func (s *Searcher) avoidedNode(n topology.NodeID) bool {
	i := s.spanFrom(n)
	return i < len(s.avoid) && s.avoid[i].lo <= n
}

// avoidedDomain reports whether domain d lies inside an avoided domain.
func (s *Searcher) avoidedDomain(d topology.DomainID) bool {
	if len(s.avoid) == 0 {
		return false
	}
	lo, hi := s.fleet.Nodes(d)
	i := s.spanFrom(lo)
	return i < len(s.avoid) && s.avoid[i].lo <= lo && hi <= s.avoid[i].hi
}

// touchesAvoided reports whether domain d has a node in an avoided domain.
func (s *Searcher) touchesAvoided(d topology.DomainID) bool {
	if len(s.avoid) == 0 {
		return false
	}
	lo, hi := s.fleet.Nodes(d)
	i := s.spanFrom(lo)
	return i < len(s.avoid) && s.avoid[i].lo < hi
}

// podsThatFit is f.PodsThatFit on the nodes of d outside the avoided
// domains.
func (s *Searcher) podsThatFit(d topology.DomainID, g topology.GroupID, k int) int {
	f := s.fleet
	if len(s.avoid) == 0 {
		return f.PodsThatFit(d, g, k)
	}
	lo, hi := f.Nodes(d)
	n := f.PodsThatFit(d, g, k)
	for _, a := range s.avoid[s.spanFrom(lo):] {
		if a.lo >= hi {
			break
		}
		if a.lo <= lo && hi <= a.hi {
			return 0 // d lies inside a
		}
		n -= f.PodsThatFit(a.d, g, k) // a lies inside d
	}
	return n
}

// place places the preemptor on the scratch fleet, outside the avoided
// domains.
func (s *Searcher) place() (placement.Assignment, error) {
	if len(s.avoid) == 0 {
		return s.placer.Place(s.scratchFleet, s.req.W)
	}
	return s.placer.PlaceAvoiding(s.scratchFleet, s.req.W, s.avoidIDs...)
}
