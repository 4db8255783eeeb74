package preempt

import (
	"cmp"
	"math"
	"slices"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// search runs one attempt, on the fast path: victims for quota first, in
// eviction order (they may sit anywhere); then each cell the bounds keep
// is filled node by node, cheapest room first (fillCell), its set filled
// back and scored; the best cell's set is placed once on the scratch
// fleet. The simulation is left as it was. quotaShort says the attempt
// failed for quota (its candidates ran out before quota fit).
func (s *Searcher) search(a attempt) (plan Plan, found, quotaShort bool, np *NoPlan) {
	if !s.shape.fast {
		return s.searchPlacing(a)
	}
	if !s.pickForQuota(a) {
		return Plan{}, false, true, nil
	}
	s.quotaPicks = append(s.quotaPicks[:0], s.taken...)
	s.best = s.best[:0]
	best := struct {
		at   int
		cell cellBound
		prio int32
		cost float64
	}{at: -1}
	bounded := !s.unbounded && !s.noBounds
	s.cellBounds()
	// evaluated: the simulation holds the last cell's set, not the quota
	// victims alone; current: that set is the best one.
	evaluated, current := false, false
	for j := 0; ; j++ {
		b, more := s.nextCell()
		if !more {
			break
		}
		// Cells go lowest bound first; once a cell's bound is above the
		// best set's highest priority, or its cost bound above the best
		// set's cost, it cannot beat it.
		if best.at >= 0 && bounded && (b.prio > best.prio || b.prio == best.prio && b.cost > best.cost+1e-9*(1+math.Abs(best.cost))) {
			if b.prio > best.prio {
				break
			}
			continue
		}
		if evaluated {
			s.untakeAll()
			s.takeAll(s.quotaPicks)
		}
		evaluated, current = true, false
		ok := s.fillCell(b.cell, b.groupSlot, a)
		if !ok && len(s.quotaPicks) > 0 {
			// The victims picked for quota may have used up what a queue
			// borrows (it stops being reclaimable) on work that frees no
			// room here: free the cell first, then top quota up.
			s.untakeAll()
			ok = s.fillCell(b.cell, b.groupSlot, a) && s.topUpQuota(a)
		}
		if ok {
			s.fillBack(a.allowBorrow)
			mp, cost := s.score(s.taken)
			// The cell whose set is cheapest: lowest highest victim
			// priority, then lowest cost, then fewest victims, then the
			// lowest cell.
			if best.at < 0 || mp < best.prio || mp == best.prio && (cost < best.cost || cost == best.cost &&
				(len(s.taken) < len(s.best) || len(s.taken) == len(s.best) && cellBefore(b, best.cell))) {
				best.at, best.cell, best.prio, best.cost = j, b, mp, cost
				s.best = append(s.best[:0], s.taken...)
				current = true
			}
		}
	}
	if best.at < 0 {
		s.untakeAll()
		return Plan{}, false, false, nil
	}
	if !current {
		s.untakeAll()
		s.takeAll(s.best)
	}
	if np := s.releaseFreed(); np != nil {
		s.untakeAll()
		return Plan{}, false, false, np
	}
	target, err := s.placer.Place(s.scratchFleet, s.req.W)
	if err != nil {
		// The estimate and the placer disagree (a fleet the counters do
		// not model, such as mixed node sizes in one domain): fall back to
		// placing after each pick.
		s.giveBack()
		s.untakeAll()
		s.shape.fast = false
		return s.searchPlacing(a)
	}
	plan = s.plan(target, a.allowBorrow)
	s.giveBack()
	s.untakeAll()
	return plan, true, false, nil
}

func cellBefore(a, b cellBound) bool {
	return a.cell < b.cell || a.cell == b.cell && a.groupSlot < b.groupSlot
}

// topUpQuota takes candidates in eviction order, past those already
// taken, until quota fits, and reports whether it does.
func (s *Searcher) topUpQuota(a attempt) bool {
	if s.quotaOK(a.allowBorrow) {
		return true
	}
	m := s.openAttempt(a)
	for !s.quotaOK(a.allowBorrow) {
		ci, from := s.next(&m)
		if ci < 0 {
			return false
		}
		c := &s.cands[ci]
		if c.taken || !s.keep(c, a) {
			continue
		}
		if !s.valid(c) {
			if qr := &s.queues[c.run.Queue]; qr.other && !s.borrowingQueue(c.run.Queue, qr.lca) {
				m.drop(from)
			}
			continue
		}
		s.take(ci)
	}
	return true
}

// pickForQuota takes candidates in eviction order until quota fits, and
// reports whether it does. A queue whose work stops being reclaimable
// (it no longer borrows) is dropped: borrowing only falls as victims go.
//
// Candidates are taken in growing runs, with one tree change per queue
// per run (see takeRun); the victims are those of the one-by-one walk.
func (s *Searcher) pickForQuota(a attempt) bool {
	m := s.openAttempt(a)
	run := 8
	for !s.quotaOK(a.allowBorrow) {
		chunk, from := s.chunk[:0], s.chunkFrom[:0]
		for len(chunk) < run {
			ci, fr := s.next(&m)
			if ci < 0 {
				break
			}
			if c := &s.cands[ci]; c.taken || !s.keep(c, a) {
				continue
			}
			chunk, from = append(chunk, ci), append(from, fr)
		}
		s.chunk, s.chunkFrom = chunk, from
		if len(chunk) == 0 {
			s.untakeAll()
			return false
		}
		if !s.req.FairSharing && s.takeRun(chunk, a.allowBorrow) {
			run = min(2*run, 1024)
			continue
		}
		for i, ci := range chunk {
			if s.quotaOK(a.allowBorrow) {
				break
			}
			c := &s.cands[ci]
			if !s.valid(c) {
				if qr := &s.queues[c.run.Queue]; qr.other && !s.borrowingQueue(c.run.Queue, qr.lca) {
					m.drop(from[i])
				}
				continue
			}
			s.take(ci)
		}
		run = 8
	}
	return true
}

// takeRun takes a run of candidates at once and keeps the shortest prefix
// after which quota fits (all of it when quota does not fit yet), and
// reports true; or takes nothing and reports false when some other
// queue of the run stops borrowing within it (the run is then walked one
// by one). Since borrowing only falls as victims go, a queue still
// borrowing after the run borrowed at each of its picks; since fitting is
// monotone in the prefix, the prefix is found by halving.
func (s *Searcher) takeRun(run []int32, allowBorrow bool) bool {
	base := len(s.taken)
	s.takeAll(run)
	for _, ci := range run {
		c := &s.cands[ci]
		if qr := &s.queues[c.run.Queue]; qr.other && !s.borrowingQueue(c.run.Queue, qr.lca) {
			s.untakeTail(len(s.taken) - base)
			return false
		}
	}
	if !s.quotaOK(allowBorrow) {
		return true
	}
	// Quota fits with the whole run and not without it: find the shortest
	// prefix that fits.
	lo, hi := 0, len(run) // !fits(prefix lo), fits(prefix hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		s.takePrefix(base, run, mid)
		if s.quotaOK(allowBorrow) {
			hi = mid
		} else {
			lo = mid
		}
	}
	s.takePrefix(base, run, hi)
	return true
}

// takePrefix leaves exactly run[:p] taken after s.taken[:base].
func (s *Searcher) takePrefix(base int, run []int32, p int) {
	switch have := len(s.taken) - base; {
	case p < have:
		s.untakeTail(have - p)
	case p > have:
		s.takeAll(run[have:p])
	}
}

func (s *Searcher) score(set []int32) (maxPrio int32, cost float64) {
	for j, ci := range set {
		c := &s.cands[ci]
		if j == 0 || c.prio > maxPrio {
			maxPrio = c.prio
		}
		cost += c.cost
	}
	return maxPrio, cost
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
		if need <= 0 || total > 2*need {
			continue
		}
		b.cost = s.coverCost(dom, need)
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

// coverCost is the cheapest fractional cover of need GPUs by the
// candidates on dom's nodes, each counted with its GPUs there.
func (s *Searcher) coverCost(dom topology.DomainID, need int) float64 {
	f := s.fleet
	s.cellEpoch++
	if s.cellEpoch == 0 {
		clear(s.nodeSeen)
		s.cellEpoch = 1
	}
	items := s.coverItems[:0]
	lo, hi := f.Nodes(dom)
	for n := lo; n < hi; n++ {
		for _, pos := range s.index.onNode[n] {
			ci := s.classify(pos)
			if ci < 0 {
				continue
			}
			if int(ci) >= len(s.coveredAt) {
				s.coveredAt = append(s.coveredAt, make([]uint32, int(ci)+1-len(s.coveredAt)+len(s.cands))...)
			}
			if s.coveredAt[ci] == s.cellEpoch {
				continue
			}
			s.coveredAt[ci] = s.cellEpoch
			c := &s.cands[ci]
			in := 0
			for _, ng := range c.run.Nodes {
				if ng.Node >= lo && ng.Node < hi {
					in += ng.GPUs
				}
			}
			items = append(items, coverItem{gpus: in, cost: c.cost})
		}
	}
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

// frontierItem is a domain or node on the best-first frontier of
// fillCell, by price: a lower bound from the Index for a domain or a
// node not yet looked at, the exact price of room for one more pod for a
// node looked at.
type frontierItem struct {
	prio int32
	cost float64
	kind uint8 // frontierDomain, frontierNodeBound, frontierNode
	id   int32 // DomainID or NodeID
}

const (
	frontierDomain uint8 = iota
	frontierNodeBound
	frontierNode
)

func frontierLess(a, b *frontierItem) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.cost != b.cost {
		return a.cost < b.cost
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.id < b.id
}

func (s *Searcher) push(it frontierItem) { s.frontier = pushItem(s.frontier, it) }

func (s *Searcher) pop() frontierItem {
	top, h := popItem(s.frontier)
	s.frontier = h
	return top
}

func pushItem(h []frontierItem, it frontierItem) []frontierItem {
	h = append(h, it)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !frontierLess(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func popItem(h []frontierItem) (frontierItem, []frontierItem) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && frontierLess(&h[l], &h[m]) {
			m = l
		}
		if r < len(h) && frontierLess(&h[r], &h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}

// fillCell takes victims in cell d (group slot gi) until it holds the
// gang: each step frees room for one more pod on the node where that is
// cheapest (see nodeSlot). Nodes are found best-first down the topology:
// a domain's bound is the Index's lowest price of one more pod on any of
// its nodes, so only domains that may hold a cheap node are opened, and
// only their nodes' candidates are looked at. Nodes whose room the
// search already changed are priced exactly from the start.
func (s *Searcher) fillCell(d int, gi int32, a attempt) bool {
	if s.cellFits(d, gi) {
		return true
	}
	s.attempt = a
	f, x, sh := s.fleet, s.index, &s.shape
	s.cellEpoch++
	if s.cellEpoch == 0 {
		clear(s.nodeSeen)
		s.cellEpoch = 1
	}
	s.frontier = s.frontier[:0]
	k, sizes := sh.podGPUs, x.podSizes
	dom := sh.firstCell + topology.DomainID(d)
	nodeLevel := topology.Level(f.Depth())
	nodeBase := f.NodeDomain(0)
	for _, n := range s.touched {
		if nd, ngi := s.cell(n); nd == d && ngi == gi {
			s.nodeSeen[n] = s.cellEpoch
			if p, c, ok := s.nodeSlot(n, a, false); ok {
				s.push(frontierItem{prio: p, cost: c, kind: frontierNode, id: int32(n)})
			}
		}
	}
	if sh.level == nodeLevel {
		s.push(frontierItem{prio: x.firstSlot[int(dom)*sizes+k-1], kind: frontierNodeBound, id: int32(dom - nodeBase)})
	} else {
		s.push(frontierItem{prio: x.firstSlot[int(dom)*sizes+k-1], kind: frontierDomain, id: int32(dom)})
	}
	for !s.cellFits(d, gi) {
		if len(s.frontier) == 0 {
			return false
		}
		it := s.pop()
		switch it.kind {
		case frontierDomain:
			lo, hi := f.Children(topology.DomainID(it.id))
			leafs := f.DomainLevel(lo) == nodeLevel
			for ch := lo; ch < hi; ch++ {
				p := x.firstSlot[int(ch)*sizes+k-1]
				if p == noPrice || !x.holds(ch, s.takesFrom) {
					// Nothing there the attempt may take: the work of
					// queues the rules leave alone is never looked at.
					continue
				}
				if !leafs {
					s.push(frontierItem{prio: p, kind: frontierDomain, id: int32(ch)})
					continue
				}
				n := topology.NodeID(ch - nodeBase)
				if s.nodeSeen[n] == s.cellEpoch {
					continue
				}
				if nd, ngi := s.cell(n); nd != d || ngi != gi {
					continue
				}
				s.push(frontierItem{prio: p, kind: frontierNodeBound, id: int32(n)})
			}
		case frontierNodeBound:
			n := topology.NodeID(it.id)
			if s.nodeSeen[n] == s.cellEpoch {
				continue
			}
			s.nodeSeen[n] = s.cellEpoch
			if nd, ngi := s.cell(n); nd != d || ngi != gi {
				continue
			}
			if p, c, ok := s.nodeSlot(n, a, false); ok {
				s.push(frontierItem{prio: p, cost: c, kind: frontierNode, id: int32(n)})
			}
		case frontierNode:
			n := topology.NodeID(it.id)
			p, c, ok := s.nodeSlot(n, a, false)
			if !ok {
				continue
			}
			if p != it.prio || c != it.cost {
				// Its room changed since it was priced (a victim on
				// several nodes, a queue back within quota).
				s.push(frontierItem{prio: p, cost: c, kind: frontierNode, id: int32(n)})
				continue
			}
			if _, _, ok := s.nodeSlot(n, a, true); !ok {
				continue // a pick no longer passes the rules: the node is out
			}
			if p, c, ok := s.nodeSlot(n, a, false); ok {
				s.push(frontierItem{prio: p, cost: c, kind: frontierNode, id: int32(n)})
			}
		}
	}
	return true
}

// takesFrom reports whether the current attempt may take work of queue
// slot qs (fillCell's filter of domains).
func (s *Searcher) takesFrom(qs int) bool {
	nf := s.index.tree.NumFlavors()
	if quota.FlavorID(qs%nf) != s.flavor {
		return false
	}
	qr := &s.queues[qs/nf]
	return qr.allowed && (!qr.other || s.attempt.others != othersHier || qr.hier)
}

// nodeSlot prices room for one more pod of the gang on node n: its
// candidates the attempt may take, in eviction order, until the node's
// free GPUs reach the next multiple of the pod size; the price is their
// highest priority and their cost. Another queue's work counts only while
// its queue would still borrow after the slot's earlier picks (its
// borrowing falls by what they free). With take, it takes them, checking
// each pick's rules on the simulation as it goes, and takes nothing (and
// reports false) when one no longer passes.
func (s *Searcher) nodeSlot(n topology.NodeID, a attempt, take bool) (prio int32, cost float64, ok bool) {
	f := s.fleet
	k := s.shape.podGPUs
	avail := f.Free(n) + int(s.freed[n])
	target := (avail/k + 1) * k
	if target > f.Capacity(n) || f.Health(n) != topology.Healthy {
		return 0, 0, false
	}
	list := s.nodeCands[:0]
	for _, pos := range s.index.onNode[n] {
		ci := s.classify(pos)
		if ci < 0 {
			continue
		}
		if c := &s.cands[ci]; !c.taken && s.keep(c, a) && s.valid(c) {
			list = append(list, ci)
		}
	}
	cs := s.cands
	slices.SortFunc(list, func(a, b int32) int { return compareCandidates(&cs[a], &cs[b]) })
	s.nodeCands = list
	s.slotPicks = s.slotPicks[:0]
	prio = math.MinInt32
	base := len(s.taken)
	for _, ci := range list {
		c := &s.cands[ci]
		if c.other && !s.borrowsAfter(c.run.Queue) {
			continue // its queue will be back within quota by then
		}
		if take {
			if !s.valid(c) {
				for _, ci := range slices.Backward(s.taken[base:]) {
					s.untake(ci)
				}
				s.taken = s.taken[:base]
				return 0, 0, false
			}
			s.take(ci)
		} else if c.other {
			s.slotPicks = append(s.slotPicks, removal{c.run.Queue, int64(c.gpus)})
		}
		for _, ng := range c.run.Nodes {
			if ng.Node == n {
				avail += ng.GPUs
			}
		}
		prio = max(prio, c.prio)
		cost += c.cost
		if avail >= target {
			return prio, cost, true
		}
	}
	if take {
		for _, ci := range slices.Backward(s.taken[base:]) {
			s.untake(ci)
		}
		s.taken = s.taken[:base]
	}
	return 0, 0, false
}

// borrowsAfter reports whether queue q (and every cohort up to the common
// ancestor with the preemptor) would still borrow after the picks already
// priced for the current slot (s.slotPicks).
func (s *Searcher) borrowsAfter(q quota.NodeID) bool {
	lca := s.queues[q].lca
	for n := q; n != lca; n, _ = s.tree.Parent(n) {
		took := int64(0)
		for _, p := range s.slotPicks {
			if p.q == n || s.under(p.q, n) {
				took += p.g
			}
		}
		if s.tree.Borrowed(n, s.flavor)-took <= 0 {
			return false
		}
	}
	return true
}

// under reports whether queue q is in the subtree of n.
func (s *Searcher) under(q, n quota.NodeID) bool {
	first, end := s.tree.Subtree(n)
	return q >= first && q < end
}

// searchPlacing is Kueue's classical search: pick candidates in order and
// place after each pick once quota fits, then fill back. It serves the
// shapes the fast path's counters do not model (segments, spread, pod
// sets of different sizes). O(candidates) placements.
func (s *Searcher) searchPlacing(a attempt) (Plan, bool, bool, *NoPlan) {
	if np := s.releaseFreed(); np != nil {
		return Plan{}, false, false, np
	}
	defer s.giveBack()
	m := s.openAttempt(a)
	quotaShort := false
	for !s.fitsPlacing(a.allowBorrow) {
		ci, from := s.next(&m)
		if ci < 0 {
			quotaShort = !s.quotaOK(a.allowBorrow)
			break
		}
		c := &s.cands[ci]
		if c.taken || !s.keep(c, a) {
			continue
		}
		if !s.valid(c) {
			if qr := &s.queues[c.run.Queue]; qr.other && !s.borrowingQueue(c.run.Queue, qr.lca) {
				m.drop(from)
			}
			continue
		}
		s.takePlacing(ci)
	}
	if !s.fitsPlacing(a.allowBorrow) {
		s.untakeAllPlacing()
		return Plan{}, false, quotaShort, nil
	}
	for j := len(s.taken) - 1; j >= 0; j-- {
		ci := s.taken[j]
		s.untakePlacing(ci)
		if s.fitsPlacing(a.allowBorrow) {
			s.taken = slices.Delete(s.taken, j, j+1)
			continue
		}
		s.retakePlacing(ci)
	}
	target, err := s.placer.Place(s.scratchFleet, s.req.W)
	if err != nil {
		panic("preempt: placement changed its answer on the same fleet: " + err.Error())
	}
	plan := s.plan(target, a.allowBorrow)
	s.untakeAllPlacing()
	return plan, true, false, nil
}

func (s *Searcher) fitsPlacing(allowBorrow bool) bool {
	if !s.quotaOK(allowBorrow) {
		return false
	}
	_, err := s.placer.Place(s.scratchFleet, s.req.W)
	return err == nil
}

func (s *Searcher) takePlacing(ci int32) {
	s.take(ci)
	s.releaseNodes(&s.cands[ci], 1)
}

func (s *Searcher) untakePlacing(ci int32) {
	s.untake(ci)
	s.releaseNodes(&s.cands[ci], -1)
}

func (s *Searcher) retakePlacing(ci int32) {
	c := &s.cands[ci]
	s.removeUsage(c)
	c.taken = true
	s.freeAll(c, 1)
	s.releaseNodes(c, 1)
}

func (s *Searcher) untakeAllPlacing() {
	for _, ci := range slices.Backward(s.taken) {
		s.untakePlacing(ci)
	}
	s.taken = s.taken[:0]
}

func (s *Searcher) releaseNodes(c *cand, sign int) {
	for _, x := range c.run.Nodes {
		if !s.releaseOn(x.Node, sign*x.GPUs) {
			panic("preempt: the scratch fleet refused GPUs checked against the live fleet")
		}
	}
}

// fitsAlready returns a plan without victims when the request fits once
// the gone workloads are gone.
func (s *Searcher) fitsAlready() (Plan, bool, *NoPlan) {
	if !s.quotaOK(true) || s.shape.fast && !s.topologyOK() {
		return Plan{}, false, nil
	}
	if np := s.releaseFreed(); np != nil {
		return Plan{}, false, np
	}
	a, err := s.placer.Place(s.scratchFleet, s.req.W)
	s.giveBack()
	if err != nil {
		return Plan{}, false, nil
	}
	return Plan{Beneficiary: s.req.W.ID, Target: a.Clone(), ReadyBy: s.req.Now,
		Borrowing: s.tree.Fits(s.req.Queue, s.flavor, s.needGPUs).Borrowing()}, true, nil
}

// plan builds the result from the taken victims, with the simulation in
// its final state (victims gone).
func (s *Searcher) plan(a placement.Assignment, allowBorrow bool) Plan {
	now := s.req.Now
	borrowing := s.tree.Fits(s.req.Queue, s.flavor, s.needGPUs).Borrowing()
	p := Plan{Beneficiary: s.req.W.ID, Target: a.Clone(), ReadyBy: now, Borrowing: borrowing,
		Victims: make([]Victim, 0, len(s.taken))}
	for _, ci := range s.taken {
		c := &s.cands[ci]
		v := Victim{ID: c.id, Nodes: c.run.Nodes, GPUs: c.gpus, Cost: c.cost, Priority: c.prio}
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
		g := c.run.Grace
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
