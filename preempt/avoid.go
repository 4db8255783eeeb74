package preempt

import (
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
// another of the list (their pods would be left out twice).
func (s *Searcher) setupAvoid() *NoPlan {
	s.avoid = s.avoid[:0]
	s.avoidIDs = s.avoidIDs[:0]
	f := s.fleet
	for _, d := range s.req.Avoid {
		if d < 0 || int(d) >= f.NumDomains() {
			return s.invalid("avoided domain out of range")
		}
	}
	for _, d := range s.req.Avoid {
		lo, hi := f.Nodes(d)
		inside := false
		for _, o := range s.req.Avoid {
			olo, ohi := f.Nodes(o)
			if o != d && olo <= lo && hi <= ohi && (olo < lo || hi < ohi || o < d) {
				inside = true
				break
			}
		}
		if !inside {
			s.avoid = append(s.avoid, avoidSpan{d: d, lo: lo, hi: hi})
			s.avoidIDs = append(s.avoidIDs, d)
		}
	}
	return nil
}

// avoidedNode reports whether node n lies in an avoided domain.
func (s *Searcher) avoidedNode(n topology.NodeID) bool {
	for _, a := range s.avoid {
		if n >= a.lo && n < a.hi {
			return true
		}
	}
	return false
}

// avoidedDomain reports whether domain d lies inside an avoided domain.
func (s *Searcher) avoidedDomain(d topology.DomainID) bool {
	if len(s.avoid) == 0 {
		return false
	}
	lo, hi := s.fleet.Nodes(d)
	for _, a := range s.avoid {
		if a.lo <= lo && hi <= a.hi {
			return true
		}
	}
	return false
}

// touchesAvoided reports whether domain d has a node in an avoided domain.
func (s *Searcher) touchesAvoided(d topology.DomainID) bool {
	if len(s.avoid) == 0 {
		return false
	}
	lo, hi := s.fleet.Nodes(d)
	for _, a := range s.avoid {
		if lo < a.hi && a.lo < hi {
			return true
		}
	}
	return false
}

// podsThatFit is f.PodsThatFit on the nodes of d outside the avoided
// domains.
func (s *Searcher) podsThatFit(d topology.DomainID, g topology.GroupID, k int) int {
	f := s.fleet
	if len(s.avoid) == 0 {
		return f.PodsThatFit(d, g, k)
	}
	lo, hi := f.Nodes(d)
	n := 0
	for _, a := range s.avoid {
		switch {
		case a.lo <= lo && hi <= a.hi:
			return 0
		case lo <= a.lo && a.hi <= hi:
			n += f.PodsThatFit(a.d, g, k)
		}
	}
	return f.PodsThatFit(d, g, k) - n
}

// place places the preemptor on the scratch fleet, outside the avoided
// domains.
func (s *Searcher) place() (placement.Assignment, error) {
	if len(s.avoid) == 0 {
		return s.placer.Place(s.scratchFleet, s.req.W)
	}
	return s.placer.PlaceAvoiding(s.scratchFleet, s.req.W, s.avoidIDs...)
}
