package preempt

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// search runs one attempt. On the fast path it evaluates every domain of
// the required level and keeps the best; the state is left as it was.
func (s *Searcher) search(allowBorrow bool) (Plan, bool) {
	if !s.fast {
		return s.searchPlacing(allowBorrow)
	}
	s.buildDomainLists()
	s.best = s.best[:0]
	bestD, bestPrio, bestCost := -1, int32(0), 0.0
	// Domains go cheapest lower bound first; once a domain's bound cannot
	// beat the best set found, neither can any later one's.
	for _, b := range s.domainBounds() {
		d := b.d
		if bestD >= 0 && s.bounded && (b.prio > bestPrio || b.prio >= bestPrio && b.cost > bestCost+1e-9*(1+math.Abs(bestCost))) {
			break
		}
		if s.domStart[d] == s.domStart[d+1] && !s.fitsIn(d) {
			continue
		}
		if s.greedy(d, allowBorrow) {
			s.fillBack(allowBorrow)
			mp, cost := s.score(s.taken)
			// The domain whose set is cheapest: lowest highest victim
			// priority, then lowest cost, then fewest victims, then the
			// lowest domain ID.
			if bestD < 0 || mp < bestPrio || mp == bestPrio && (cost < bestCost || cost == bestCost &&
				(len(s.taken) < len(s.best) || len(s.taken) == len(s.best) && d < bestD)) {
				bestD, bestPrio, bestCost = d, mp, cost
				s.best = append(s.best[:0], s.taken...)
			}
		}
		s.untakeAll()
	}
	if bestD < 0 {
		return Plan{}, false
	}
	for _, i := range s.best {
		s.take(i)
	}
	s.releaseFreed()
	a, err := s.placer.Place(s.f, s.req.W)
	if err != nil {
		// The estimate and the placer disagree (a fleet the counters do
		// not model, such as mixed node sizes in one domain): fall back to
		// placing after each pick.
		s.reacquireAll()
		s.untakeAll()
		s.fast = false
		return s.searchPlacing(allowBorrow)
	}
	plan := s.plan(a, allowBorrow)
	s.reacquireAll()
	s.untakeAll()
	return plan, true
}

// domBound is a lower bound on the score of any set that makes the gang
// fit in domain d: its highest victim priority and its cost.
type domBound struct {
	d    int
	prio int32
	cost float64
}

// domainBounds returns the domains to try, by lower bound (then ID), and
// leaves out those no set of candidates can make fit. Any set that fits
// the gang in d frees, on d's nodes of the group it lands in, at least
// pods x k GPUs minus what is free there already; a candidate frees at
// most its GPUs there. So its highest priority is at least the lowest P
// such that d's candidates of priority P or less hold that many GPUs, and
// its cost at least the cheapest fractional cover of them by cost per
// GPU. Without bounds (a cost model returning negative costs, or a single
// domain) every domain is tried, in ID order.
func (s *Searcher) domainBounds() []domBound {
	s.bounds = s.bounds[:0]
	if !s.bounded || s.ndom == 1 {
		// One domain (no required level): nothing to prune.
		for d := range s.ndom {
			s.bounds = append(s.bounds, domBound{d: d})
		}
		return s.bounds
	}
	f := s.f
	for d := range s.ndom {
		need := math.MaxInt
		for g := range topology.GroupID(f.NumGroups()) {
			if gi := s.gslot[g]; gi >= 0 {
				free := f.FreeGPUs(s.dlo+topology.DomainID(d), g) + int(s.goneFree[d*s.ngs+int(gi)])
				need = min(need, s.pods*s.k-free)
			}
		}
		if need <= 0 {
			s.bounds = append(s.bounds, domBound{d: d, prio: math.MinInt32})
			continue
		}
		s.items = s.items[:0]
		total := 0
		for _, pos := range s.domList[s.domStart[d]:s.domStart[d+1]] {
			c := &s.cands[s.list[pos]]
			s.items = append(s.items, boundItem{prio: c.prio, gpus: int32(c.gpus), cost: c.cost, ratio: c.cost / float64(c.gpus)})
			total += c.gpus
		}
		if total < need {
			continue // even every candidate there is not enough
		}
		b := domBound{d: d}
		if total == need {
			// Every candidate there is needed (a full domain to clear):
			// the bound is the whole list, no sort.
			for j, it := range s.items {
				if j == 0 || it.prio > b.prio {
					b.prio = it.prio
				}
				b.cost += it.cost
			}
			s.bounds = append(s.bounds, b)
			continue
		}
		slices.SortFunc(s.items, func(a, b boundItem) int { return cmp.Compare(a.prio, b.prio) })
		left := need
		for _, it := range s.items {
			if left -= int(it.gpus); left <= 0 {
				b.prio = it.prio
				break
			}
		}
		slices.SortFunc(s.items, func(a, b boundItem) int { return cmp.Compare(a.ratio, b.ratio) })
		left = need
		for _, it := range s.items {
			if int(it.gpus) >= left {
				b.cost += it.ratio * float64(left)
				break
			}
			b.cost += it.cost
			left -= int(it.gpus)
		}
		s.bounds = append(s.bounds, b)
	}
	slices.SortFunc(s.bounds, func(a, b domBound) int {
		if a.prio != b.prio {
			return cmp.Compare(a.prio, b.prio)
		}
		if a.cost != b.cost {
			return cmp.Compare(a.cost, b.cost)
		}
		return cmp.Compare(a.d, b.d)
	})
	return s.bounds
}

type boundItem struct {
	prio  int32
	gpus  int32
	cost  float64
	ratio float64
}

// greedy picks victims for domain d: candidates in order until quota fits
// (they may sit anywhere), then the domain's own candidates in order until
// it holds the gang.
func (s *Searcher) greedy(d int, allowBorrow bool) bool {
	pos := 0
	for !s.quotaOK(allowBorrow) {
		if pos >= len(s.list) {
			return false
		}
		i := s.list[pos]
		pos++
		if c := &s.cands[i]; !c.taken && s.valid(c) {
			s.take(i)
		}
	}
	if s.fitsIn(d) {
		return true
	}
	dl := s.domList[s.domStart[d]:s.domStart[d+1]]
	for j := sort.Search(len(dl), func(j int) bool { return int(dl[j]) >= pos }); j < len(dl); j++ {
		i := s.list[dl[j]]
		if c := &s.cands[i]; c.taken || !s.valid(c) {
			continue
		}
		s.take(i)
		if s.fitsIn(d) {
			return true
		}
	}
	return false
}

// buildDomainLists indexes, per domain of the required level, the
// positions in list of the candidates that free usable GPUs there. The
// candidates' nodes are walked once: the (position, domain) pairs are
// kept, then placed by a counting sort on the domain, which keeps them in
// list order within each domain.
func (s *Searcher) buildDomainLists() {
	f := s.f
	s.domStart = slices.Grow(s.domStart[:0], s.ndom+1)[:s.ndom+1]
	clear(s.domStart)
	s.hits = s.hits[:0]
	for pos, i := range s.list {
		prev := int32(-1)
		for _, x := range s.cands[i].r.Nodes {
			if f.Health(x.Node) != topology.Healthy || s.gslot[f.NodeGroup(x.Node)] < 0 {
				continue
			}
			// Once per run of nodes in the same domain.
			if d := int32(f.DomainOf(x.Node, s.lvl) - s.dlo); d != prev {
				s.hits = append(s.hits, domHit{pos: int32(pos), d: d})
				s.domStart[d+1]++
				prev = d
			}
		}
	}
	for d := range s.ndom {
		s.domStart[d+1] += s.domStart[d]
	}
	s.domList = slices.Grow(s.domList[:0], len(s.hits))[:len(s.hits)]
	if s.ndom == 1 {
		for j, h := range s.hits {
			s.domList[j] = h.pos
		}
		return
	}
	// Fill using domStart as moving cursors, then shift back.
	for _, h := range s.hits {
		s.domList[s.domStart[h.d]] = h.pos
		s.domStart[h.d]++
	}
	for d := s.ndom; d > 0; d-- {
		s.domStart[d] = s.domStart[d-1]
	}
	s.domStart[0] = 0
}

// domHit says that the candidate at position pos of list frees usable
// GPUs in domain d.
type domHit struct {
	pos, d int32
}

func (s *Searcher) score(set []int32) (maxPrio int32, cost float64) {
	for j, i := range set {
		c := &s.cands[i]
		if j == 0 || c.prio > maxPrio {
			maxPrio = c.prio
		}
		cost += c.cost
	}
	return maxPrio, cost
}

// searchPlacing is Kueue's classical search: pick candidates in order and
// place after each pick once quota fits, then fill back. It serves the
// shapes the fast path's counters do not model (segments, spread, pod sets
// of different sizes). O(candidates) placements.
func (s *Searcher) searchPlacing(allowBorrow bool) (Plan, bool) {
	s.releaseFreed()
	defer s.reacquireAll()
	for _, i := range s.list {
		if s.fits(allowBorrow) {
			break
		}
		if c := &s.cands[i]; !c.taken && s.valid(c) {
			s.take(i)
		}
	}
	if !s.fits(allowBorrow) {
		s.untakeAll()
		return Plan{}, false
	}
	s.fillBack(allowBorrow)
	a, err := s.placer.Place(s.f, s.req.W)
	if err != nil {
		panic("preempt: placement changed its answer on the same fleet: " + err.Error())
	}
	plan := s.plan(a, allowBorrow)
	s.untakeAll()
	return plan, true
}

// plan builds the result from the taken victims, with the simulation in
// its final state (victims gone).
func (s *Searcher) plan(a placement.Assignment, allowBorrow bool) Plan {
	now := s.req.Now
	borrowing := s.t.Fits(s.req.Queue, s.fl, s.need).Borrowing()
	p := Plan{Beneficiary: s.req.W.ID, Target: a.Clone(), ReadyBy: now, Borrowing: borrowing,
		Victims: make([]Victim, 0, len(s.taken))}
	for _, i := range s.taken {
		c := &s.cands[i]
		v := Victim{ID: c.id, Nodes: c.r.Nodes, GPUs: c.gpus, Cost: c.cost, Priority: c.prio}
		switch {
		case !c.other:
			v.Reason = InQueue
		case s.req.FairSharing:
			v.Reason = FairSharing
		case !c.hier && allowBorrow && borrowing:
			v.Reason = ReclaimWhileBorrowing
		default:
			v.Reason = Reclaim
		}
		g := c.r.Grace
		if g <= 0 {
			g = DefaultGrace
		}
		v.Deadline = now.Add(g)
		if v.Deadline.After(p.ReadyBy) {
			p.ReadyBy = v.Deadline
		}
		p.LostGPUSeconds += c.cost
		p.Victims = append(p.Victims, v)
	}
	return p
}
