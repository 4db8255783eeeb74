package preempt

import (
	"cmp"
	"slices"

	"github.com/fleetsched/fleet/topology"
)

// Cells are the domains of the gang's required level (the whole fleet
// without one), per eligible group: the search tries them lowest bound
// first and stops once no bound can beat the best set found.

func cellBefore(a, b cellBound) bool {
	return a.cell < b.cell || a.cell == b.cell && a.groupSlot < b.groupSlot
}

// cellBound is a lower bound on the highest victim priority of any set
// that makes the gang fit in a cell.
type cellBound struct {
	cell      int
	groupSlot int32
	prio      int32
	cost      float64 // a lower bound on its cost, or 0
}

// cellBounds lists the cells to try (see nextCell), leaving out those no
// set of candidates can make hold the gang. A set
// that fits the gang in cell d frees there at least pods x k GPUs minus
// what is free (or freed by gone work), and, for whole-node pods, clears
// at least pods nodes less those free: so its highest priority is at
// least the lowest P such that d's candidates of priority P or less hold
// that many GPUs, and such that d has that many nodes clearable at P or
// less. Both read the Index's per-domain bands: O(bands) per cell. In
// the reference mode (noBounds), every cell in ID order.
func (s *Searcher) cellBounds() {
	f, x, sh := s.fleet, s.index, &s.shape
	s.bounds = s.bounds[:0]
	s.front, s.frontAt = s.front[:0], 0
	s.noteGoneInCells()
	// A gang that must clear a whole domain (whole-node pods, as many as
	// every domain of the level has nodes) is bounded by the domain's
	// dearest node: the Index keeps, per domain, the cheapest such bound
	// below it, so the cells come lowest bound first from a walk down the
	// topology instead of a pass over every cell.
	s.wholeCells = !s.noBounds && !s.unbounded && sh.level > 0 && f.NumGroups() == 1 && sh.numGroupSlots == 1 &&
		sh.podGPUs == f.MaxGPUsPerNode() && x.uniform[sh.level] == sh.pods && !s.goneRunning
	if s.wholeCells {
		s.cellHeap = pushItem(s.cellHeap[:0], frontierItem{prio: x.cellClear[int(topology.Root)*x.levels+int(sh.level)], id: int32(topology.Root)})
		return
	}
	for d := range sh.numCells {
		if len(s.avoid) > 0 && s.avoidedDomain(sh.firstCell+topology.DomainID(d)) {
			continue // no pod of the gang may go there
		}
		for g := range topology.GroupID(f.NumGroups()) {
			gi := sh.groupSlot[g]
			if gi < 0 {
				continue
			}
			if s.noBounds || s.unbounded {
				s.bounds = append(s.bounds, cellBound{cell: d, groupSlot: gi})
				continue
			}
			if s.cellAt[d] == s.epoch && s.cellFits(d, gi) {
				s.bounds = append(s.bounds, cellBound{cell: d, groupSlot: gi, prio: freePrice})
				continue
			}
			dom := sh.firstCell + topology.DomainID(d)
			need := sh.pods*sh.podGPUs - f.FreeGPUs(dom, g) - int(s.goneInCell(d))
			var p int32
			var ok bool
			if sh.podGPUs != f.MaxGPUsPerNode() {
				p, ok = priceOf(x.gpuBands[dom], need, true)
			} else {
				// Whole nodes: clearing them frees at least their GPUs,
				// so the node bound is the stronger one. A cell that must
				// be cleared whole costs its dearest node.
				if f.Stats(dom, g).HealthyNodes < sh.pods {
					continue
				}
				if sh.pods == f.Stats(dom, topology.AllGroups).Nodes {
					p = x.maxClear[dom]
					ok = p != noPrice
				} else {
					p, ok = priceOf(x.nodeBands[dom], sh.pods, false)
				}
				if s.goneRunning {
					// Work gone but not draining is counted at its
					// priority in the bands: no bound.
					p, ok = freePrice, true
				}
			}
			if !ok {
				continue
			}
			s.bounds = append(s.bounds, cellBound{cell: d, groupSlot: gi, prio: p})
		}
	}
	if !s.noBounds && !s.unbounded {
		// A heap: the cells are taken lowest bound first, and pruning
		// usually stops long before the last.
		for i := len(s.bounds)/2 - 1; i >= 0; i-- {
			s.siftBound(i)
		}
	}
}

// nextCell returns the next cell to try: in the reference mode (or
// without bounds) every cell in ID order; otherwise the cells of the
// lowest remaining priority bound, cheapest cost bound first (see
// costBounds), then the next bound's.
func (s *Searcher) nextCell() (cellBound, bool) {
	if s.noBounds || s.unbounded {
		if s.frontAt >= len(s.bounds) {
			return cellBound{}, false
		}
		s.frontAt++
		return s.bounds[s.frontAt-1], true
	}
	if s.frontAt < len(s.front) {
		s.frontAt++
		return s.front[s.frontAt-1], true
	}
	s.front, s.frontAt = s.front[:0], 0
	if s.wholeCells {
		s.nextWholeCells()
	} else if len(s.bounds) > 0 {
		p := s.bounds[0].prio
		for len(s.bounds) > 0 && s.bounds[0].prio == p {
			s.front = append(s.front, s.popBound())
		}
	}
	if len(s.front) == 0 {
		return cellBound{}, false
	}
	s.costBounds(s.front)
	s.frontAt = 1
	return s.front[0], true
}

// nextWholeCells walks down the topology to the cells of the lowest
// remaining bound (see cellBounds), into front.
func (s *Searcher) nextWholeCells() {
	f, x, sh := s.fleet, s.index, &s.shape
	for len(s.cellHeap) > 0 {
		top := s.cellHeap[0]
		if top.prio == noPrice || len(s.front) > 0 && top.prio > s.front[0].prio {
			return
		}
		_, s.cellHeap = popItem(s.cellHeap)
		d := topology.DomainID(top.id)
		if len(s.avoid) > 0 && (s.avoidedDomain(d) || f.DomainLevel(d) == sh.level && s.touchesAvoided(d)) {
			continue // a cell to clear whole may have no avoided node
		}
		if f.DomainLevel(d) == sh.level {
			s.front = append(s.front, cellBound{cell: int(d - sh.firstCell), prio: top.prio})
			continue
		}
		lo, hi := f.Children(d)
		for ch := lo; ch < hi; ch++ {
			if p := x.cellClear[int(ch)*x.levels+int(sh.level)]; p != noPrice {
				s.cellHeap = pushItem(s.cellHeap, frontierItem{prio: p, id: int32(ch)})
			}
		}
	}
}

func boundLess(a, b *cellBound) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.cell != b.cell {
		return a.cell < b.cell
	}
	return a.groupSlot < b.groupSlot
}

func (s *Searcher) siftBound(i int) {
	h := s.bounds
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && boundLess(&h[l], &h[m]) {
			m = l
		}
		if r < len(h) && boundLess(&h[r], &h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (s *Searcher) popBound() cellBound {
	top := s.bounds[0]
	last := len(s.bounds) - 1
	s.bounds[0] = s.bounds[last]
	s.bounds = s.bounds[:last]
	s.siftBound(0)
	return top
}

// costBounds gives cells that share a priority bound a lower bound on
// their cost, when that is cheap (the gang needs most of the cell: at
// least half its candidate GPUs), and puts them cheapest first (then by
// ID): the cell a full clear should pick is then tried first, and the
// others are skipped once its set is known. The bound is the cheapest
// fractional cover of the GPUs still missing by the cell's candidates,
// by cost per GPU.
func (s *Searcher) costBounds(cells []cellBound) {
	f, x, sh := s.fleet, s.index, &s.shape
	if len(cells) < 2 {
		return
	}
	for j := range cells {
		b := &cells[j]
		dom := sh.firstCell + topology.DomainID(b.cell)
		g := s.groupOf(b.groupSlot)
		need := sh.pods*sh.podGPUs - f.FreeGPUs(dom, g) - int(s.goneInCell(b.cell))
		total := 0
		for _, bd := range x.gpuBands[dom] {
			total += int(bd.gpus)
		}
		switch {
		case need <= 0 || total > 2*need:
		case total <= need && s.lazyCost && !s.goneRunning:
			// Every candidate goes: DefaultCost's price of them all, from
			// the Index's sums, without looking at one.
			b.cost = s.clearCost(dom)
		default:
			b.cost = s.coverCost(dom, need)
		}
	}
	slices.SortFunc(cells, func(a, b cellBound) int {
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.cell, b.cell), cmp.Compare(a.groupSlot, b.groupSlot))
	})
}

// groupOf returns the fleet group of an eligible group slot.
func (s *Searcher) groupOf(gi int32) topology.GroupID {
	for g, v := range s.shape.groupSlot {
		if v == gi {
			return topology.GroupID(g)
		}
	}
	return topology.AllGroups
}

// clearCost is a lower bound on DefaultCost's price of every candidate on
// dom's nodes (draining ones cost nothing): GPUs x (unsaved time +
// overhead), summed by the Index with times rounded towards less unsaved
// time, and shaved by a relative 1e-9 against float rounding.
func (s *Searcher) clearCost(dom topology.DomainID) float64 {
	x := s.index
	overhead := s.cost.(DefaultCost).RestartOverhead.Seconds()
	now := float64(s.req.Now.Unix())
	c := float64(x.runGPUs[dom])*(now+overhead) - float64(x.runGPUFrom[dom])
	return max(0, c*(1-1e-9))
}

// coverCost is the cheapest fractional cover of need GPUs by the
// candidates on dom's nodes, each counted with its GPUs there.
func (s *Searcher) coverCost(dom topology.DomainID, need int) float64 {
	items := s.coverItems[:0]
	lo, hi := s.fleet.Nodes(dom)
	s.eachCandidateIn(dom, func(ci int32) bool {
		c := &s.cands[ci]
		in := 0
		for _, ng := range s.nodesOf(c) {
			if ng.Node >= lo && ng.Node < hi {
				in += ng.GPUs
			}
		}
		items = append(items, coverItem{gpus: in, cost: c.cost})
		return true
	})
	s.coverItems = items
	total := 0
	for _, it := range items {
		total += it.gpus
	}
	if total <= need {
		// Every candidate is needed (a cell to clear whole): no order.
		cost := 0.0
		for _, it := range items {
			cost += it.cost
		}
		return cost
	}
	slices.SortFunc(items, func(a, b coverItem) int {
		return cmp.Compare(a.cost*float64(b.gpus), b.cost*float64(a.gpus))
	})
	cost, left := 0.0, need
	for _, it := range items {
		if it.gpus >= left {
			return cost + it.cost*float64(left)/float64(it.gpus)
		}
		cost += it.cost
		left -= it.gpus
	}
	return cost
}

type coverItem struct {
	gpus int
	cost float64
}

// priceOf returns the lowest priority at which the bands hold need GPUs
// (or need nodes), and false when they never do.
func priceOf(bands []band, need int, gpus bool) (int32, bool) {
	if need <= 0 {
		return freePrice, true
	}
	sum := 0
	for _, b := range bands {
		if gpus {
			sum += int(b.gpus)
		} else {
			sum += int(b.n)
		}
		if sum >= need {
			return b.prio, true
		}
	}
	return 0, false
}

// noteGoneInCells sums, per cell, the GPUs gone workloads free there (the
// bands count only draining work as free), once per call.
func (s *Searcher) noteGoneInCells() {
	if s.goneCellsAt == s.epoch {
		return
	}
	s.goneCellsAt = s.epoch
	if len(s.goneCell) < s.shape.numCells {
		s.goneCell = make([]int32, s.shape.numCells)
	}
	for _, d := range s.goneCells {
		s.goneCell[d] = 0
	}
	s.goneCells = s.goneCells[:0]
	s.goneRunning = false
	for _, pos := range s.gone {
		e := &s.index.entries[pos]
		s.goneRunning = s.goneRunning || !e.run.Draining
		for _, ng := range e.run.Nodes {
			if d, _ := s.cell(ng.Node); d >= 0 {
				if s.goneCell[d] == 0 {
					s.goneCells = append(s.goneCells, d)
				}
				s.goneCell[d] += int32(ng.GPUs)
			}
		}
	}
}

func (s *Searcher) goneInCell(d int) int32 { return s.goneCell[d] }

// cellWalk is the order the search tries cells in.
type cellWalk struct {
	bounds      []cellBound    // a heap of the cells left to try
	front       []cellBound    // the cells of the current priority bound, in order
	frontAt     int            // the next of front to try
	wholeCells  bool           // cells come from cellHeap, a walk down the topology
	cellHeap    []frontierItem // domains by the lowest whole-clear bound below them
	goneCellsAt uint32         // the epoch goneCell was summed at
	goneCell    []int32        // per cell: GPUs gone workloads free there
	goneCells   []int          // cells with goneCell set
	goneRunning bool           // some gone workload is not draining
	coverItems  []coverItem
	coveredAt   []uint32 // per candidate: the coverCost call that counted it
}

// eachCandidateIn calls fn once for each candidate the rules allow with
// GPUs on dom's nodes (each part of an elastic workload with GPUs
// there), in node order, until fn returns false.
func (s *Searcher) eachCandidateIn(dom topology.DomainID, fn func(ci int32) bool) {
	s.cellEpoch++
	if s.cellEpoch == 0 {
		clear(s.nodeSeen)
		clear(s.coveredAt)
		s.cellEpoch = 1
	}
	lo, hi := s.fleet.Nodes(dom)
	for n := lo; n < hi; n++ {
		for _, pos := range s.index.onNode[n] {
			ci := s.classify(pos)
			if ci < 0 {
				continue
			}
			last := ci
			if s.cands[ci].part == surplusPart {
				last = ci + 1
			}
			for ; ci <= last; ci++ {
				if int(ci) >= len(s.coveredAt) {
					s.coveredAt = append(s.coveredAt, make([]uint32, int(ci)+1-len(s.coveredAt)+len(s.cands))...)
				}
				if s.coveredAt[ci] == s.cellEpoch {
					continue
				}
				if c := &s.cands[ci]; c.part != wholeCand && !s.holdsIn(c, lo, hi) {
					continue
				}
				s.coveredAt[ci] = s.cellEpoch
				if !fn(ci) {
					return
				}
			}
		}
	}
}

// holdsIn reports whether c frees GPUs on a node of [lo, hi).
func (s *Searcher) holdsIn(c *cand, lo, hi topology.NodeID) bool {
	for _, ng := range s.nodesOf(c) {
		if ng.Node >= lo && ng.Node < hi {
			return true
		}
	}
	return false
}
