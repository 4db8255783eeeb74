package preempt

import (
	"math"
	"slices"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// search runs one attempt, on the fast path: victims for quota first, in
// eviction order (they may sit anywhere); then each cell the bounds keep
// is filled node by node, cheapest room first (fillCell), its set filled
// back and scored; the best cell's set is placed once on the scratch
// fleet. The simulation is left as it was. quotaShort says the attempt
// failed for quota (its candidates ran out before quota fit).
func (s *Searcher) search(a attempt) (plan Plan, found, quotaShort bool, np *NoPlan) {
	s.hopeless = false
	if !s.shape.fast {
		return s.searchPlacing(a)
	}
	if s.req.FairSharing {
		if !s.pickFair(false) {
			s.untakeAll()
			return Plan{}, false, true, nil
		}
	} else if !s.pickForQuota(a) {
		return Plan{}, false, true, nil
	}
	s.quotaPicks = append(s.quotaPicks[:0], s.taken...)
	for _, ci := range s.quotaPicks {
		s.cands[ci].forQuota = true
	}
	defer func() {
		for _, ci := range s.quotaPicks {
			s.cands[ci].forQuota = false
		}
	}()
	s.best = s.best[:0]
	best := struct {
		at    int
		cell  cellBound
		rank  int64 // highest victim rank (see rank)
		cold  int   // pods of the preemptor no warm node holds (see warm.go)
		cost  float64
		count int
	}{at: -1}
	wb := int64(s.wholeBound())
	bounded := !s.unbounded && !s.noBounds
	skipShort := s.skipsShortCells()
	s.cellBounds()
	// evaluated: some cell was tried (filled, or left out as roomShort);
	// filled: the simulation may hold the last cell's set, not the quota
	// victims alone; current: that set is the best one.
	evaluated, filled, current, restart := false, false, false, false
	for j := 0; ; j++ {
		b, more := s.nextCell()
		if bounded && s.unbounded {
			restart = true
			break
		}
		if !more {
			break
		}
		if bounded && b.prio != freePrice && int64(b.prio) > s.maxVictim {
			// Any set that makes the cell hold the gang evicts work of
			// the bound's priority or above, which no rule lets go: the
			// cell is not filled only to fail.
			continue
		}
		// Cells go lowest bound first; once a cell's bound is above the
		// best set's highest rank, or its cost bound above the best
		// set's cost, it cannot beat it. The bound knows priorities only:
		// while some candidate can shrink, a cell at the best set's
		// priority may still beat a set that evicts whole at it.
		// A cold best set is no bound on cost while warm nodes may be
		// freed elsewhere.
		br := int64(b.prio)*2 + wb
		if b.prio == freePrice {
			br = freeRank // draining work alone may make the room
		}
		if best.at >= 0 && bounded && (br > best.rank || br == best.rank && best.cold == 0 && b.cost > best.cost+1e-9*(1+math.Abs(best.cost))) {
			if br > best.rank {
				break
			}
			continue
		}
		if filled {
			s.untakeAll()
			s.takeAll(s.quotaPicks)
			filled = false
		}
		evaluated, current = true, false
		if skipShort && s.roomShort(b) {
			// Filled, it would fail: the same as a failed fill, which
			// ends with the quota victims alone taken again. The
			// simulation holds them alone still.
			s.attempt = a
			s.roomSkips++
			continue
		}
		filled = true
		s.slotParts = false
		ok := s.fillCellAll(b, a)
		if !ok && s.slotParts {
			// Elastic work met in parts: a surplus taken on its own, at
			// its place before whole evictions, can spend what its queue
			// may lose (its borrowing, its share) that the workload's
			// whole eviction, at its own place, would leave to other
			// work. Try the cell again with elastic workloads whole.
			s.untakeAll()
			s.takeAll(s.quotaPicks)
			s.wholeUnits = true
			ok = s.fillCellAll(b, a)
			s.wholeUnits = false
		}
		consider := func() {
			if s.index.splits > 0 {
				s.picked = append(s.picked[:0], s.taken...)
			}
			s.fillBack(a.allowBorrow)
			s.upgradeSurpluses(a.allowBorrow, s.picked)
			mr, cost, count := s.score(s.taken)
			cold := s.coldSet()
			// The cell whose set is cheapest: lowest highest victim
			// rank (priority, then a shrink before a whole eviction),
			// then a warm node for the preemptor, then lowest cost, then
			// fewest victims, then the lowest cell.
			if best.at < 0 || mr < best.rank || mr == best.rank && (cold < best.cold || cold == best.cold && (cost < best.cost || cost == best.cost &&
				(count < best.count || count == best.count && cellBefore(b, best.cell)))) {
				best.at, best.cell, best.rank, best.cold, best.cost, best.count = j, b, mr, cold, cost, count
				s.best = append(s.best[:0], s.taken...)
				current = true
			}
		}
		// Kueue's own walk (the quota victims, then the cell's candidates
		// in eviction order), where it is cheap: its set is kept when it
		// is better, so no plan is worse than Kueue's. When the quota
		// victims alone make the cell hold the gang, it is the same walk.
		inOrder := !ok || len(s.taken) > len(s.quotaPicks)
		if ok {
			consider()
		}
		if inOrder {
			s.untakeAll()
			s.takeAll(s.quotaPicks)
			current = false
			if s.fillCellInOrder(b.cell, b.groupSlot, a, len(s.best)+16) {
				consider()
			}
		}
		// The quota victims chose the node in eviction order; when that
		// leaves no warm node for the preemptor, free the room first,
		// warm nodes first, then top quota up.
		if s.warm.on && best.at >= 0 && best.cold > 0 && len(s.quotaPicks) > 0 {
			s.untakeAll()
			current = false
			if s.fillCell(b.cell, b.groupSlot, a) && s.topUpQuota(a) {
				consider()
			}
		}
	}
	if restart {
		// A cost met since the walk began is negative or NaN (see
		// unbounded): the order the cells came in and the bounds they
		// were pruned by hold only for costs of 0 or more. Search
		// again, unbounded from the start.
		s.untakeAll()
		for _, ci := range s.quotaPicks {
			s.cands[ci].forQuota = false
		}
		return s.search(a)
	}
	if best.at < 0 {
		// A cell is left out only when its bound, which holds whatever
		// the victims picked for quota, is above every priority the rules
		// let go: with none tried, no attempt can do better.
		s.hopeless = !evaluated
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
	shrunk := s.shrinkTaken(a.allowBorrow)
	target, err := s.place()
	if err != nil {
		// The estimate and the placer disagree (a fleet the counters do
		// not model, such as mixed node sizes in one domain): fall back to
		// placing after each pick.
		s.undoShrinks()
		s.giveBack()
		s.untakeAll()
		s.shape.fast = false
		return s.searchPlacing(a)
	}
	plan = s.plan(target)
	if shrunk {
		s.applyShrinks(&plan)
	}
	s.undoShrinks()
	s.giveBack()
	s.untakeAll()
	return plan, true, false, nil
}

// fillCellAll takes victims, after the quota victims already taken,
// until cell b holds the gang and quota fits, and reports whether they
// do: by fillCell; failing that, the cell freed first and quota topped
// up after; failing that, when what other queues may lose ran out, by
// fillCellFrugal.
func (s *Searcher) fillCellAll(b cellBound, a attempt) bool {
	s.budgetShort = false
	if s.fillCell(b.cell, b.groupSlot, a) {
		return true
	}
	if len(s.quotaPicks) > 0 {
		// The victims picked for quota may have used up what a queue
		// borrows (it stops being reclaimable) on work that frees no
		// room here: free the cell first, then top quota up.
		s.untakeAll()
		if s.fillCell(b.cell, b.groupSlot, a) && s.topUpQuota(a) {
			return true
		}
	}
	if s.budgetShort {
		// What other queues may lose ran out: spend it frugally.
		s.untakeAll()
		return s.fillCellFrugal(b.cell, b.groupSlot, a) && s.topUpQuota(a)
	}
	return false
}

// fillCellInOrder takes, after the quota victims, the cell's candidates
// in eviction order until it holds the gang (Kueue's walk), and reports
// whether it does. It walks the whole fleet's order lazily for a gang
// without a required level, at most limit candidates; a cell's own
// candidates otherwise, when it has at most inOrderMax of them (a larger
// cell is left to fillCell alone).
func (s *Searcher) fillCellInOrder(d int, gi int32, a attempt, limit int) bool {
	if s.cellFits(d, gi) {
		return true
	}
	if s.shape.numCells == 1 {
		m := s.openAttempt(a)
		for n := 0; !s.cellFits(d, gi); n++ {
			ci, _ := s.next(&m)
			if ci < 0 || n >= limit {
				return false
			}
			if c := &s.cands[ci]; !c.taken && s.keep(c, a) && s.valid(c) {
				s.take(ci)
			}
		}
		return true
	}
	dom := s.shape.firstCell + topology.DomainID(d)
	list := s.nodeCands[:0]
	s.eachCandidateIn(dom, func(ci int32) bool {
		if c := &s.cands[ci]; !c.taken && s.keep(c, a) {
			list = append(list, ci)
		}
		return len(list) <= inOrderMax
	})
	if len(list) > inOrderMax {
		s.nodeCands = list
		return false
	}
	cs := s.cands
	slices.SortFunc(list, func(a, b int32) int { return compareCandidates(&cs[a], &cs[b]) })
	s.nodeCands = list
	for _, ci := range list {
		if s.cellFits(d, gi) {
			return true
		}
		if s.valid(&s.cands[ci]) {
			s.take(ci)
		}
	}
	return s.cellFits(d, gi)
}

// inOrderMax bounds the candidates of a cell Kueue's walk is tried on.
const inOrderMax = 64

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
		// A run is at least as long as the GPUs quota is still short by:
		// no shorter one can make it fit.
		short := s.quotaShort()
		chunk, from := s.chunk[:0], s.chunkFrom[:0]
		var gpus int64
		for len(chunk) < run || gpus < short {
			ci, fr := s.next(&m)
			if ci < 0 {
				break
			}
			c := &s.cands[ci]
			if c.taken || !s.keep(c, a) {
				continue
			}
			chunk, from = append(chunk, ci), append(from, fr)
			gpus += int64(c.gpus)
		}
		s.chunk, s.chunkFrom = chunk, from
		if len(chunk) == 0 {
			s.untakeAll()
			return false
		}
		if !s.req.FairSharing && s.takeRun(chunk, short, a.allowBorrow) {
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
// monotone in the prefix, the prefix is found by halving, above the
// longest prefix whose GPUs are fewer than short (quotaShort before the
// run: such a prefix cannot make quota fit).
func (s *Searcher) takeRun(run []int32, short int64, allowBorrow bool) bool {
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
	for sum := int64(0); lo+1 < hi; lo++ {
		if sum += int64(s.cands[run[lo]].gpus); sum >= short {
			break
		}
	}
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

// upgradeSurpluses tries, for each surplus of the filled-back set taken
// alone whose rest ranks below the set's highest rank, evicting that
// workload whole: with its rest taken, the set is filled back again, the
// other victims first, so that a workload of lower priority going whole
// may spare a victim of higher priority (a shrink can need more victims
// than the eviction it replaces); failing that, the same from the
// victims picked before the first fill-back (picked), since the one
// that spares it may be one that fill-back dropped. It keeps the set of
// lower rank, then cost, and leaves the victims in the order they were
// taken.
func (s *Searcher) upgradeSurpluses(allowBorrow bool, picked []int32) {
	if s.index.splits == 0 {
		return
	}
	for i := 0; i < len(s.taken); i++ {
		ci := s.taken[i]
		c := &s.cands[ci]
		if c.part != surplusPart || s.cands[ci+1].taken {
			continue
		}
		rk, cost, _ := s.score(s.taken)
		if rank(c.prio, true) >= rk {
			continue
		}
		before := append(s.upgradeBuf[:0], s.taken...)
		s.upgradeBuf = before
		if s.goWhole(ci, before, rk, cost, allowBorrow) || s.upgradeFrom(ci, picked, rk, cost, allowBorrow) {
			i = -1 // the set changed: look again
			continue
		}
		s.takeAll(before)
	}
}

// retakeInOrder lists the victims of order still taken in that order,
// the rest of surplus ci right after it when it is taken too: the
// victims back in the order they were taken, the workload where its
// surplus was.
func (s *Searcher) retakeInOrder(order []int32, ci int32) {
	s.taken = s.taken[:0]
	for _, x := range order {
		if s.cands[x].taken {
			s.taken = append(s.taken, x)
			if x == ci && s.cands[ci+1].taken {
				s.taken = append(s.taken, ci+1)
			}
		}
	}
}

// upgradeFrom takes the victims picked, with surplus ci among them, and
// goes whole from there (goWhole) when the rules let ci's rest go.
// Otherwise it leaves nothing taken and reports false.
func (s *Searcher) upgradeFrom(ci int32, picked []int32, rk int64, cost float64, allowBorrow bool) bool {
	list := s.upgradeTry[:0]
	for _, x := range picked {
		if x != ci+1 {
			list = append(list, x)
		}
	}
	s.upgradeTry = list
	s.takeAll(list)
	if !s.cands[ci].taken || !s.valid(&s.cands[ci+1]) {
		s.untakeAll()
		return false
	}
	return s.goWhole(ci, list, rk, cost, allowBorrow)
}

// goWhole takes the rest of surplus ci, taken with the victims of set,
// and fills the set back, the workload last (it comes first in the set,
// so that fill-back tries the others first). It keeps the set, in the
// order of set with the workload where its surplus was, when it scores
// below rank rk, then cost; otherwise it leaves nothing taken and
// reports false.
func (s *Searcher) goWhole(ci int32, set []int32, rk int64, cost float64, allowBorrow bool) bool {
	s.take(ci + 1)
	s.taken = append(s.taken[:0], ci, ci+1)
	for _, x := range set {
		if x != ci {
			s.taken = append(s.taken, x)
		}
	}
	s.fillBack(allowBorrow)
	if nr, nc, _ := s.score(s.taken); nr < rk || nr == rk && nc < cost {
		s.retakeInOrder(set, ci)
		return true
	}
	s.untakeAll()
	return false
}

// score is a set's highest victim rank, cost and number of victims (a
// workload's surplus and rest are one victim).
func (s *Searcher) score(set []int32) (maxRank int64, cost float64, victims int) {
	for j, ci := range set {
		c := &s.cands[ci]
		if r := c.rank(); j == 0 || r > maxRank {
			maxRank = r
		}
		cost += c.cost
		if c.part != restPart {
			victims++
		}
	}
	return maxRank, cost, victims
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
	a, err := s.place()
	s.giveBack()
	if err != nil {
		return Plan{}, false, nil
	}
	return Plan{Beneficiary: s.req.W.ID, Target: a.Clone(), ReadyBy: s.req.Now,
		Borrowing: s.tree.Fits(s.req.Queue, s.flavor, s.needGPUs).Borrowing()}, true, nil
}

// listVictims lists the taken candidates that are victims, in the order
// taken: the rest of an elastic workload is the same victim as its
// surplus, taken before it.
func (s *Searcher) listVictims() {
	if s.index.splits == 0 {
		s.victims = s.taken // every candidate is a workload
		return
	}
	s.victimBuf = s.victimBuf[:0]
	for _, ci := range s.taken {
		if s.cands[ci].part != restPart {
			s.victimBuf = append(s.victimBuf, ci)
		}
	}
	s.victims = s.victimBuf
}

// plan builds the result from the taken victims, with the simulation in
// its final state (victims gone). An elastic workload whose rest is taken
// goes whole, priced whole; its surplus alone is a shrink of its surplus
// pods (applyShrinks narrows it to the pods given up).
func (s *Searcher) plan(a placement.Assignment) Plan {
	now := s.req.Now
	borrowing := s.tree.Fits(s.req.Queue, s.flavor, s.needGPUs).Borrowing()
	s.listVictims()
	p := Plan{Beneficiary: s.req.W.ID, Target: a.Clone(), ReadyBy: now, Borrowing: borrowing,
		Victims: make([]Victim, 0, len(s.victims))}
	for _, ci := range s.victims {
		c := &s.cands[ci]
		v := Victim{ID: c.id, Nodes: s.nodesOf(c), GPUs: c.gpus, Cost: c.cost, Priority: c.prio}
		if c.part == surplusPart && s.cands[ci+1].taken {
			v.Nodes, v.GPUs, v.Cost = c.run.Nodes, gpusOf(c.run.Nodes), s.cost.Cost(c.run, now)
		}
		v.Reason = s.reason(c)
		g := c.run.Grace
		if g <= 0 {
			g = DefaultGrace
		}
		v.Deadline = now.Add(g)
		if v.Deadline.After(p.ReadyBy) {
			p.ReadyBy = v.Deadline
		}
		p.LostGPUSeconds += v.Cost
		p.Victims = append(p.Victims, v)
	}
	return p
}

// reason labels a victim as Kueue does: by the candidate's variant, not
// by the attempt that took it or by whether the preemptor ends up
// borrowing.
//   - the preemptor's own queue: InQueue;
//   - fair sharing: Reclaim while the preemptor (with the request) stays
//     within its nominal quota, FairSharing otherwise;
//   - classical: ReclaimWhileBorrowing for work that borrowWithinCohort
//     lets the preemptor take while borrowing (no hierarchical
//     advantage), Reclaim for the rest (advantage, or work only an
//     attempt within quota may take).
func (s *Searcher) reason(c *cand) Reason {
	switch {
	case !c.other:
		return InQueue
	case s.req.FairSharing && s.withinNominal:
		return Reclaim
	case s.req.FairSharing:
		return FairSharing
	case c.whileB && !c.hier:
		return ReclaimWhileBorrowing
	}
	return Reclaim
}
