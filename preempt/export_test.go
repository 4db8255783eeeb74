package preempt

import "github.com/fleetsched/fleet/quota"

// SetNoBounds makes s try every cell without pruning by lower bounds,
// the reference the pruned search must agree with.
func SetNoBounds(s *Searcher, v bool) { s.noBounds = v }

// OrderItem is what the eviction order reads of one candidate.
type OrderItem struct {
	Draining bool
	Other    bool
	Share    quota.Share
	Prio     int32
	Cost     float64
	ID       string
}

func (o OrderItem) cand() cand {
	return cand{draining: o.Draining, other: o.Other, share: o.Share, prio: o.Prio, cost: o.Cost, id: o.ID}
}

// CompareOrder is compareCandidates.
func CompareOrder(a, b OrderItem) int {
	x, y := a.cand(), b.cand()
	return compareCandidates(&x, &y)
}

// StaticLess is the Index's order of one queue's candidates (the packed
// band of draining and priority, then ID), and SameBand says whether two
// candidates share a band (the search then orders them by cost and ID).
func StaticLess(a, b OrderItem) bool {
	return keyLess(orderKey{band: packBand(a.Draining, a.Prio), id: a.ID}, orderKey{band: packBand(b.Draining, b.Prio), id: b.ID})
}

func SameBand(a, b OrderItem) bool {
	return packBand(a.Draining, a.Prio) == packBand(b.Draining, b.Prio)
}

// StreamOrder returns the IDs of every candidate for req, as the search's
// merged queue streams yield them (the eviction order).
func StreamOrder(s *Searcher, v View, req Request) []string {
	s.begin(v, req, nil)
	defer s.end()
	if s.validateRequest() != nil || s.setupGone() != nil {
		return nil
	}
	s.setupQueues()
	m := s.openAttempt(attempt{true, othersAll})
	var out []string
	for {
		ci, _ := s.next(&m)
		if ci < 0 {
			return out
		}
		out = append(out, s.cands[ci].id)
	}
}

// SetWholeBand sets the band size up to which bands are priced whole (0:
// every band of running work through cursors per GPU count).
func SetWholeBand(s *Searcher, n int) { s.wholeBand = n }
