package preempt

import (
	"math"
	"slices"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Inside one cell the search frees room node by node, cheapest first,
// found best-first down the topology from the Index's per-domain prices.

// frontierItem is a domain or node on the best-first frontier of
// fillCell, by price: a lower bound from the Index for a domain or a
// node not yet looked at, the exact price of room for one more pod for a
// node looked at.
type frontierItem struct {
	weight int32 // fillCellFrugal: other queues' GPUs the slot takes; 0 otherwise
	prio   int32
	whole  uint8 // 1: the room takes a whole eviction at prio (a bound: see wholeBound)
	cold   uint8 // 1: no warm node for the preemptor there (see warm.go)
	cost   float64
	kind   uint8 // frontierDomain, frontierNodeBound, frontierNode
	id     int32 // DomainID or NodeID
}

const (
	frontierDomain uint8 = iota
	frontierNodeBound
	frontierNode
)

func frontierLess(a, b *frontierItem) bool {
	if a.weight != b.weight {
		return a.weight < b.weight
	}
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.whole != b.whole {
		return a.whole < b.whole
	}
	if a.cold != b.cold {
		return a.cold < b.cold
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
		clear(s.coveredAt)
		s.cellEpoch = 1
	}
	s.frontier = s.frontier[:0]
	k, sizes := sh.podGPUs, x.podSizes
	dom := sh.firstCell + topology.DomainID(d)
	nodeLevel := topology.Level(f.Depth())
	nodeBase := f.NodeDomain(0)
	wb := s.wholeBound()
	lazy := s.boundTouched()
	for _, n := range s.touched {
		if nd, ngi := s.cell(n); nd == d && ngi == gi {
			if lazy {
				if p, ok, known := s.touchedBound(n); known {
					if ok {
						s.push(frontierItem{prio: p, whole: wb, cold: s.coldNode(n), kind: frontierNodeBound, id: int32(n)})
					} else {
						s.nodeSeen[n] = s.cellEpoch
					}
					continue
				}
			}
			s.nodeSeen[n] = s.cellEpoch
			if p, w, c, ok := s.nodeSlot(n, a, false); ok {
				s.push(frontierItem{prio: p, whole: w, cold: s.coldNode(n), cost: c, kind: frontierNode, id: int32(n)})
			}
		}
	}
	if sh.level == nodeLevel {
		s.push(frontierItem{prio: x.firstSlot[int(dom)*sizes+k-1], whole: wb, cold: s.coldDomain(dom), kind: frontierNodeBound, id: int32(dom - nodeBase)})
	} else {
		s.push(frontierItem{prio: x.firstSlot[int(dom)*sizes+k-1], whole: wb, cold: s.coldDomain(dom), kind: frontierDomain, id: int32(dom)})
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
				if p == noPrice || !x.holds(ch, s.takesFrom) || len(s.avoid) > 0 && s.avoidedDomain(ch) {
					// Nothing there the attempt may take: the work of
					// queues the rules leave alone is never looked at.
					continue
				}
				if !leafs {
					s.push(frontierItem{prio: p, whole: wb, cold: s.coldDomain(ch), kind: frontierDomain, id: int32(ch)})
					continue
				}
				n := topology.NodeID(ch - nodeBase)
				if s.nodeSeen[n] == s.cellEpoch {
					continue
				}
				if nd, ngi := s.cell(n); nd != d || ngi != gi {
					continue
				}
				s.push(frontierItem{prio: p, whole: wb, cold: s.coldNode(n), kind: frontierNodeBound, id: int32(n)})
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
			if p, w, c, ok := s.nodeSlot(n, a, false); ok {
				s.push(frontierItem{prio: p, whole: w, cold: s.coldNode(n), cost: c, kind: frontierNode, id: int32(n)})
			}
		case frontierNode:
			n := topology.NodeID(it.id)
			if !s.takeSlot(n, a, it) {
				continue
			}
			if p, w, c, ok := s.nodeSlot(n, a, false); ok {
				s.push(frontierItem{prio: p, whole: w, cold: s.coldNode(n), cost: c, kind: frontierNode, id: int32(n)})
			}
		}
	}
	return true
}

// takeSlot takes the room for one more pod on node n that item it
// priced, and reports whether it did: when the room's price changed
// since (a victim on several nodes, a queue back within quota) it takes
// nothing and pushes n again at its new price; when it can no longer be
// made (a pick no longer passes the rules) the node is out. Taking first
// and checking the price after spares pricing the node once more: the
// picks nodeSlot takes are those it prices, and its price is theirs;
// when the take fails or its price differs, the node is priced and then
// taken as before.
func (s *Searcher) takeSlot(n topology.NodeID, a attempt, it frontierItem) bool {
	base := len(s.taken)
	p, w, c, ok := s.nodeSlot(n, a, true)
	if ok && p == it.prio && w == it.whole && c == it.cost {
		return true
	}
	if ok {
		for _, ci := range slices.Backward(s.taken[base:]) {
			s.untake(ci)
		}
		s.taken = s.taken[:base]
	}
	// Otherwise price it first, then take.
	p, w, c, ok = s.nodeSlot(n, a, false)
	if !ok {
		return false
	}
	if p != it.prio || w != it.whole || c != it.cost {
		s.push(frontierItem{prio: p, whole: w, cold: s.coldNode(n), cost: c, kind: frontierNode, id: int32(n)})
		return false
	}
	_, _, _, ok = s.nodeSlot(n, a, true)
	return ok
}

// boundTouched reports whether fillCell may bound the nodes whose room
// the search changed from the Index instead of pricing each at once:
// when nothing is gone, every candidate is whole, costs are not negative
// and every victim taken so far was picked for quota (so it counts in
// the price of room on its node, see nodeSlot).
func (s *Searcher) boundTouched() bool {
	if len(s.gone) > 0 || s.index.splits > 0 || s.unbounded || s.noBounds {
		return false
	}
	for _, ci := range s.taken {
		if !s.cands[ci].forQuota {
			return false
		}
	}
	return true
}

// touchedBound is a lower bound on nodeSlot's price of room for one more
// pod on node n, a node whose room the victims picked for quota changed:
// nodeSlot's victims there, those picked for quota among them, bring the
// node's free GPUs from the live figure to the next multiple of the pod
// size above what is freed, so the Index's reach at that multiple (the
// lowest priority at which the node's candidates can free that much)
// bounds their highest priority. ok is false when nodeSlot can make no
// room there (the multiple is above the node's capacity, or its
// candidates cannot reach it); known is false when the Index has no
// figure for that multiple (the node must be priced).
func (s *Searcher) touchedBound(n topology.NodeID) (p int32, ok, known bool) {
	f, x := s.fleet, s.index
	k := s.shape.podGPUs
	target := ((f.Free(n)+int(s.freed[n]))/k + 1) * k
	switch {
	case target > f.Capacity(n) || f.Health(n) != topology.Healthy:
		return 0, false, true
	case target > x.podSizes:
		return 0, false, false
	}
	p = x.reach[int(n)*x.podSizes+target-1]
	return p, p != noPrice, true
}

// fillCellFrugal is fillCell's last resort, for when what other queues
// may lose (they stop being reclaimable once back within quota) runs out
// before the cell holds the gang: room is freed where it takes the fewest
// of other queues' GPUs first, then the cheapest, so that the budget
// buys as many pods as it can. It prices every node of the cell holding
// work the attempt may take (a failure path: O(those nodes)).
func (s *Searcher) fillCellFrugal(d int, gi int32, a attempt) bool {
	if s.cellFits(d, gi) {
		return true
	}
	f, x, sh := s.fleet, s.index, &s.shape
	s.attempt = a
	s.frontier = s.frontier[:0]
	dom := sh.firstCell + topology.DomainID(d)
	nodeLevel := topology.Level(f.Depth())
	// Every node below dom holding work the attempt may take.
	s.nodeCands = s.nodeCands[:0]
	stack := append(s.dfs[:0], frontierItem{id: int32(dom)})
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		dm := topology.DomainID(top.id)
		if !x.holds(dm, s.takesFrom) {
			continue
		}
		if f.DomainLevel(dm) == nodeLevel {
			n := topology.NodeID(dm - f.NodeDomain(0))
			if nd, ngi := s.cell(n); nd == d && ngi == gi {
				if p, w, c, ok := s.nodeSlot(n, a, false); ok {
					s.push(frontierItem{weight: s.slotWeight, prio: p, whole: w, cold: s.coldNode(n), cost: c, kind: frontierNode, id: int32(n)})
				}
			}
			continue
		}
		lo, hi := f.Children(dm)
		for ch := hi - 1; ch >= lo; ch-- {
			stack = append(stack, frontierItem{id: int32(ch)})
		}
	}
	s.dfs = stack[:0]
	for !s.cellFits(d, gi) {
		if len(s.frontier) == 0 {
			return false
		}
		it := s.pop()
		n := topology.NodeID(it.id)
		p, w, c, ok := s.nodeSlot(n, a, false)
		if !ok {
			continue
		}
		if p != it.prio || w != it.whole || c != it.cost || s.slotWeight != it.weight {
			s.push(frontierItem{weight: s.slotWeight, prio: p, whole: w, cold: s.coldNode(n), cost: c, kind: frontierNode, id: int32(n)})
			continue
		}
		if _, _, _, ok := s.nodeSlot(n, a, true); !ok {
			continue
		}
		if p, w, c, ok := s.nodeSlot(n, a, false); ok {
			s.push(frontierItem{weight: s.slotWeight, prio: p, whole: w, cold: s.coldNode(n), cost: c, kind: frontierNode, id: int32(n)})
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
// highest priority, whether one of them goes whole (whole 1: the room
// takes a whole eviction, 0: shrinks alone make it), and their cost.
// The surplus and the rest of an elastic workload count as candidates of
// their own; the rest brings its surplus with it (priced with it, even
// when the surplus frees nothing on n). Another queue's work counts only
// while its queue would still borrow after the slot's earlier picks (its
// borrowing falls by what they free); the rest of an elastic workload,
// which completes one eviction with its surplus, while its queue would
// borrow with that surplus still running. With take, it takes them, checking
// each pick's rules on the simulation as it goes, and takes nothing (and
// reports false) when one no longer passes.
func (s *Searcher) nodeSlot(n topology.NodeID, a attempt, take bool) (prio int32, whole uint8, cost float64, ok bool) {
	f := s.fleet
	k := s.shape.podGPUs
	avail := f.Free(n) + int(s.freed[n])
	target := (avail/k + 1) * k
	if target > f.Capacity(n) || f.Health(n) != topology.Healthy {
		return 0, 0, 0, false
	}
	list := s.nodeCands[:0]
	// Victims picked for quota on this node free its room too, and stay
	// in the set with it (elsewhere, fill-back drops them): they count in
	// the price, so that a node is not preferred for room they seem to
	// give for free.
	prio = math.MinInt32
	for _, pos := range s.index.onNode[n] {
		ci := s.classify(pos)
		if ci < 0 {
			continue
		}
		last := ci
		if s.cands[ci].part == surplusPart {
			last = ci + 1 // and its rest
		}
		for ; ci <= last; ci++ {
			c := &s.cands[ci]
			if c.part != wholeCand {
				s.slotParts = true
				if s.wholeUnits && c.part == surplusPart && !c.taken {
					continue // its rest brings it along
				}
				if gpusOn(s.nodesOf(c), n) == 0 && !(s.wholeUnits && c.part == restPart && !s.cands[ci-1].taken) {
					continue
				}
			}
			if c.taken && c.forQuota {
				prio = max(prio, c.prio)
				whole = max(whole, b2u(c.whole))
				cost += c.cost
			}
			if c.taken || !s.keep(c, a) {
				continue
			}
			if !s.valid(c) {
				s.budgetShort = s.budgetShort || c.other
				continue
			}
			list = append(list, ci)
		}
	}
	if s.wholeUnits {
		slices.SortFunc(list, s.compareUnits)
	} else {
		cs := s.cands
		slices.SortFunc(list, func(a, b int32) int { return compareCandidates(&cs[a], &cs[b]) })
	}
	s.nodeCands = list
	s.slotPicks, s.slotFrom = s.slotPicks[:0], s.slotFrom[:0]
	s.slotWeight = 0
	base := len(s.taken)
	for _, ci := range list {
		c := &s.cands[ci]
		if c.taken {
			continue // a surplus its rest brought along
		}
		// The rest of a workload whose surplus is neither taken nor on
		// n (it would come first in the list), or neither taken nor in
		// the list (wholeUnits), brings it along: both are priced.
		var sc *cand
		if c.part == restPart && !s.cands[ci-1].taken && (s.wholeUnits || gpusOn(s.nodesOf(&s.cands[ci-1]), n) == 0) {
			sc = &s.cands[ci-1]
		}
		if c.other && !s.borrowsAfterPick(ci) {
			s.budgetShort = true
			continue // its queue will be back within quota by then
		}
		if take {
			if !s.valid(c) {
				s.budgetShort = s.budgetShort || c.other
				for _, ci := range slices.Backward(s.taken[base:]) {
					s.untake(ci)
				}
				s.taken = s.taken[:base]
				return 0, 0, 0, false
			}
			s.take(ci)
		} else if c.other {
			s.slotPicks = append(s.slotPicks, removal{c.run.Queue, int64(c.gpus)})
			s.slotFrom = append(s.slotFrom, ci)
			if sc != nil {
				s.slotPicks = append(s.slotPicks, removal{c.run.Queue, int64(sc.gpus)})
				s.slotFrom = append(s.slotFrom, ci-1)
			}
		}
		if c.other {
			s.slotWeight += int32(c.gpus)
			if c.part == restPart && s.cands[ci-1].taken && !slices.Contains(s.taken[base:], ci-1) {
				// The rest of a workload whose surplus went before
				// completes its eviction, judged as that whole eviction
				// (validRest): it spends the surplus's GPUs of its
				// queue's budget too, as the workload's eviction would
				// were it not elastic.
				s.slotWeight += int32(s.cands[ci-1].gpus)
			}
		}
		if c.part == wholeCand {
			avail += gpusOn(c.run.Nodes, n)
		} else {
			avail += gpusOn(s.nodesOf(c), n)
		}
		if sc != nil {
			avail += gpusOn(s.nodesOf(sc), n) // none unless wholeUnits
		}
		prio = max(prio, c.prio)
		whole = max(whole, b2u(c.whole))
		cost += c.cost
		if sc != nil {
			if c.other {
				s.slotWeight += int32(sc.gpus)
			}
			cost += sc.cost
		}
		if avail >= target {
			return prio, whole, cost, true
		}
	}
	if take {
		for _, ci := range slices.Backward(s.taken[base:]) {
			s.untake(ci)
		}
		s.taken = s.taken[:base]
	}
	return 0, 0, 0, false
}

// gpusOn is the GPUs of node n in nodes.
func gpusOn(nodes []placement.NodeGPUs, n topology.NodeID) int {
	g := 0
	for _, x := range nodes {
		if x.Node == n {
			g += x.GPUs
		}
	}
	return g
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// wholeBound is the whole mark of a bound read from the Index, which
// knows priorities only: 0 (a shrink may make the room) while some
// candidate is offered in two parts, 1 otherwise (every victim goes
// whole).
func (s *Searcher) wholeBound() uint8 {
	if s.index.splits > 0 {
		return 0
	}
	return 1
}

// compareUnits is compareCandidates with the rest of an elastic workload
// whose surplus is not taken standing for the workload's whole eviction,
// priced by both parts (nodeSlot's order when s.wholeUnits).
func (s *Searcher) compareUnits(a, b int32) int {
	x, y := s.cands[a], s.cands[b]
	if x.part == restPart && !s.cands[a-1].taken {
		x.cost += s.cands[a-1].cost
	}
	if y.part == restPart && !s.cands[b-1].taken {
		y.cost += s.cands[b-1].cost
	}
	return compareCandidates(&x, &y)
}

// borrowsAfterPick reports whether candidate ci's queue (and every cohort
// up to the common ancestor with the preemptor) would still borrow after
// the picks already priced for the current slot. The rest of an elastic
// workload completes one eviction with its surplus: it is judged with
// that surplus still running, taken or priced in the slot (as validRest
// judges it), not after it.
func (s *Searcher) borrowsAfterPick(ci int32) bool {
	c := &s.cands[ci]
	if c.part != restPart {
		return s.borrowsAfter(c.run.Queue, -1)
	}
	sc := &s.cands[ci-1]
	if !sc.taken {
		return s.borrowsAfter(c.run.Queue, ci-1)
	}
	s.addUsage(sc)
	ok := s.borrowsAfter(c.run.Queue, -1)
	s.removeUsage(sc)
	return ok
}

// borrowsAfter reports whether queue q (and every cohort up to the common
// ancestor with the preemptor) would still borrow after the picks already
// priced for the current slot (s.slotPicks), but those of candidate
// except.
func (s *Searcher) borrowsAfter(q quota.NodeID, except int32) bool {
	lca := s.queues[q].lca
	for n := q; n != lca; n, _ = s.tree.Parent(n) {
		took := int64(0)
		for j, p := range s.slotPicks {
			if s.slotFrom[j] != except && (p.q == n || s.under(p.q, n)) {
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

// nodeWalk is fillCell's best-first walk inside one cell.
type nodeWalk struct {
	slotWeight  int32 // other queues' GPUs of the slot nodeSlot priced last
	budgetShort bool  // a node's room needed work of a queue no longer reclaimable
	dfs         []frontierItem
	attempt     attempt // the attempt being served
	frontier    []frontierItem
	nodeSeen    []uint32 // per node: the cell walk (cellEpoch) that priced it
	cellEpoch   uint32
	nodeCands   []int32   // nodeSlot's candidates of one node
	slotPicks   []removal // other queues' GPUs priced so far for one node's slot
	slotFrom    []int32   // the candidate of each of slotPicks
	// slotParts: nodeSlot met a part of an elastic workload since the
	// search last cleared it.
	slotParts bool
	// wholeUnits: nodeSlot offers each elastic workload whole, its rest
	// bringing its surplus along, in the place of its whole eviction.
	wholeUnits bool
}
