package fleet

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// Defragmentation. Departures leave free GPUs scattered 1-3 per node,
// and a gang that needs whole nodes inside one leaf or spine then waits
// although the fleet has room. A move drains a preemptible workload that
// checkpoints, under its drain contract, so that it restarts elsewhere
// from its checkpoint; the moves of a plan open one domain. A plan moves
// only work that has room outside the domain now (checked by placing
// each mover around it, one after the other), never work that does not
// checkpoint, never a booking's work, and never work of higher priority
// than the gang it is for.
//
// Automatically (Policy.DefragBudget > 0), a gang that is blocked by
// fragmentation, not by capacity (its quota fits and the fleet's free
// GPUs would hold it together), gets the cheapest plan that opens a
// domain of its required level, if the work it loses stays within the
// budget per hour: its movers drain and the domain's GPUs are nominated
// for it at once. On request, PlanDefrag prices opening a domain ("one
// free spine by 18:00") and Defragment carries out the plan.

// DefragPlan opens one domain by moving work out of it.
type DefragPlan struct {
	// The request: a domain of Level with GPUs free GPUs of Flavor (0:
	// the whole domain), moving work of priority at most Priority.
	Level    string
	Flavor   string
	GPUs     int
	Priority int32
	Domain   string
	// Moves are the workloads to drain, cheapest first.
	Moves []Move
	// LostGPUSeconds is the work the moves lose: since each mover's last
	// checkpoint, plus its restart.
	LostGPUSeconds float64
	// FreeGPUs is what the domain will have free once they are gone.
	FreeGPUs int

	price float64 // LostGPUSeconds with work of the request's own priority weighted up (movePrice)
}

// Move is one workload a plan drains, and where it would fit now.
type Move struct {
	ID   string     // the workload to drain
	From []NodeGPUs // the GPUs it holds now, per node
	// To is its new place per node; Pods the same pod by pod, as it will
	// be admitted there.
	To             []NodeGPUs
	Pods           []PodAssignment
	LostGPUSeconds float64

	assign placement.Assignment // Pods, as placed
}

// PlanDefrag finds the cheapest set of moves that leaves a domain of
// level with at least gpus free GPUs of flavor in whole free nodes (gpus
// 0: the whole domain), for work of priority at most priority. It changes
// nothing. It is refused for an unknown level or flavor, a negative
// amount, or when no domain can be opened.
func (s *Scheduler) PlanDefrag(now time.Time, level, flavor string, gpus int, priority int32) (DefragPlan, error) {
	if err := s.tick("plan-defrag", now); err != nil {
		return DefragPlan{}, err
	}
	l, ok := s.fleet.Level(level)
	switch {
	case !ok:
		return DefragPlan{}, &Error{Op: "plan-defrag", Detail: fmt.Sprintf("level %q", level), Err: fmt.Errorf("%w: %w", ErrInvalid, topology.ErrUnknownLevel)}
	case l == 0 || int(l) >= s.fleet.Depth():
		return DefragPlan{}, refuse("plan-defrag", "", ErrInvalid, "level %q: a plan opens a domain below the fleet and above a node", level)
	}
	if gpus < 0 {
		return DefragPlan{}, refuse("plan-defrag", "", ErrInvalid, "negative GPUs %d", gpus)
	}
	g, ok := s.groupOfFlavor(flavor)
	if !ok {
		return DefragPlan{}, refuse("plan-defrag", "", ErrInvalid, "no nodes of flavor %q", flavor)
	}
	p, ok := s.planDefrag(now, l, g, gpus, priority, "")
	if !ok {
		return DefragPlan{}, refuse("plan-defrag", "", ErrNeverFits, "no %s can be opened for %d GPUs by moving work", level, gpus)
	}
	p.Flavor, p.GPUs, p.Priority = flavor, gpus, priority
	return p, nil
}

// Defragment carries out a plan: its moves drain now, with their grace,
// reason defrag, and each mover's new place is reserved for it
// (Drain.MoveTo), so that it restarts there once it has exited. It is
// refused whole, changing nothing, when a mover no longer runs where the
// plan saw it, a new place is no longer free, or the plan is not one
// PlanDefrag makes (a workload moved twice, pods that do not add up).
func (s *Scheduler) Defragment(now time.Time, plan DefragPlan) ([]Drain, error) {
	s.calls++
	to, err := s.checkDefrag(now, plan)
	if err != nil {
		return nil, err
	}
	s.advance(now)
	var out []Drain
	for i, m := range plan.Moves {
		e := s.work[m.ID]
		r, err := s.books.DrainFor(m.ID, now, now.Add(e.grace()), gang.DrainDefrag)
		if err != nil {
			panic("fleet: draining a checked mover: " + err.Error())
		}
		if err := s.books.ReserveMove(m.ID, to[i]); err != nil {
			panic("fleet: reserving a checked move: " + err.Error())
		}
		d := Drain{ID: m.ID, Deadline: r.Drain.Deadline, Reason: gang.DrainDefrag, LostGPUSeconds: m.LostGPUSeconds,
			MoveTo: slices.Clone(m.To)}
		out = append(out, d)
		ev := s.event(EventDrainStarted, now, e)
		ev.Reason, ev.Deadline, ev.LostGPUSeconds = d.Reason.String(), d.Deadline, d.LostGPUSeconds
		s.emit(ev)
	}
	return out, nil
}

// checkDefrag checks a plan whole against the present state and returns
// each mover's new place, changing nothing.
func (s *Scheduler) checkDefrag(now time.Time, plan DefragPlan) ([]placement.Assignment, error) {
	if err := s.tick("defragment", now); err != nil {
		return nil, err
	}
	want := map[topology.NodeID]int{}
	to := make([]placement.Assignment, len(plan.Moves))
	seen := make(map[string]bool, len(plan.Moves))
	for i, m := range plan.Moves {
		if seen[m.ID] {
			return nil, refuse("defragment", m.ID, ErrInvalid, "moves[%d] moves it a second time", i)
		}
		seen[m.ID] = true
		e, ok := s.work[m.ID]
		if !ok || e.state() != gang.Admitted || !slices.Equal(s.nodeViews(e.rec.Nodes), m.From) {
			return nil, refuse("defragment", m.ID, ErrBadState, "no longer runs where the plan saw it")
		}
		a, err := s.assignment("defragment", e, m.Pods)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(s.nodeViews(a.NodeGPUs()), m.To) {
			return nil, refuse("defragment", m.ID, ErrInvalid, "its pods do not add up to its new place")
		}
		to[i] = a
		for _, x := range a.NodeGPUs() {
			want[x.Node] += x.GPUs
		}
	}
	for n, g := range want {
		if s.fleet.Health(n) != topology.Healthy || s.fleet.Free(n) < g {
			return nil, refuse("defragment", "", ErrBadState, "node %s no longer has the %d free GPUs the plan moves to", s.fleet.NodeName(n), g)
		}
	}
	return to, nil
}

// groupOfFlavor is the first fleet group of a flavor.
func (s *Scheduler) groupOfFlavor(flavor string) (topology.GroupID, bool) {
	for g := range topology.GroupID(s.fleet.NumGroups()) {
		if s.fleet.GroupFlavor(g) == flavor {
			return g, true
		}
	}
	return 0, false
}

// nodeClear is what emptying one node of a domain would take: its
// movers are movers[at:at+count] of the request's mover list.
type nodeClear struct {
	n         topology.NodeID
	cost      float64
	at, count int
	shared    bool // a mover also holds GPUs on another node
}

// defragDomain is a domain a request may open, with a lower bound on its
// price.
type defragDomain struct {
	d     topology.DomainID
	need  int
	bound float64
}

// planDefrag ranks the domains of level l by a lower bound on the price
// of opening them, then plans them in that order and keeps the cheapest
// plan (then fewest moves, then the earlier domain), stopping at the
// first domain whose bound is above the best plan's price. A domain to
// open whole, all of whose nodes are healthy and of group g, is bounded
// in O(1) from the victim index's aggregates (the highest priority that
// must move, and the work its running candidates lose); any other is
// bounded from the work on its nodes. So a request costs the level's
// domains, plus the nodes of the domains it prices exactly and the
// placements of their movers: one domain, when the bounds are tight.
func (s *Scheduler) planDefrag(now time.Time, l topology.Level, g topology.GroupID, gpus int, priority int32, forID string) (DefragPlan, bool) {
	f := s.fleet
	lo, hi := f.DomainsAt(l)
	restart := s.restartOverhead()
	perNode := f.MaxGPUsPerNode()
	doms := s.defrag.doms[:0]
	for d := lo; d < hi; d++ {
		st := f.Stats(d, g)
		need := gpus
		if need == 0 {
			need = st.HealthyGPUs
		}
		if st.HealthyGPUs < need || need == 0 {
			continue
		}
		bound := 0.0
		if need == st.HealthyGPUs && need == f.Stats(d, topology.AllGroups).GPUs {
			prio, cost, ok := s.books.Index().ClearBound(d, now, restart)
			if !ok || prio > priority {
				continue
			}
			bound = cost
		} else {
			// Room for need GPUs in whole free nodes takes at least
			// need/per-node of them, free or emptied.
			cost, ok := s.books.Index().CheapestNodesBound(d, (need+perNode-1)/perNode, now, restart)
			if !ok {
				continue
			}
			bound = cost
		}
		doms = append(doms, defragDomain{d: d, need: need, bound: bound})
	}
	slices.SortFunc(doms, func(a, b defragDomain) int {
		return cmp.Or(cmp.Compare(a.bound, b.bound), cmp.Compare(a.d, b.d))
	})
	s.defrag.doms = doms
	best, found := DefragPlan{}, false
	for _, x := range doms {
		if found && x.bound > best.price {
			break
		}
		p, ok := s.openDomain(now, x, g, priority, forID, best.price, found)
		if !ok {
			continue
		}
		if !found || p.price < best.price || p.price == best.price && len(p.Moves) < len(best.Moves) {
			best, found = p, true
		}
	}
	return best, found
}

// clearable returns the whole free GPUs of domain d's healthy nodes of
// group g, and its other nodes that moves could empty, cheapest first
// (then ID), with their movers: every workload on them may move
// (preemptible, checkpointing, not a booking's, of priority at most
// priority, not forID). When all is set (the domain must be emptied
// whole), it reports false at the first node that cannot be.
func (s *Scheduler) clearable(now time.Time, d topology.DomainID, g topology.GroupID, priority int32, forID string, all bool) (whole int, nodes []nodeClear, movers []*entry, ok bool) {
	f := s.fleet
	lo, hi := f.Nodes(d)
	movers, nodes = s.defrag.movers[:0], s.defrag.nodes[:0]
	defer func() { s.defrag.movers, s.defrag.nodes = movers, nodes }()
	for n := lo; n < hi; n++ {
		if f.Health(n) != topology.Healthy || f.NodeGroup(n) != g {
			continue
		}
		if f.Free(n) == f.Capacity(n) {
			whole += f.Capacity(n)
			continue
		}
		var nc nodeClear
		if nc, movers, ok = s.readNode(now, n, priority, forID, movers); ok {
			nodes = append(nodes, nc)
		} else if all {
			return 0, nil, nil, false
		}
	}
	slices.SortFunc(nodes, func(a, b nodeClear) int {
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.n, b.n))
	})
	return whole, nodes, movers, true
}

// readNode appends to movers the workloads on node n, a partly used
// node, and reports what emptying it takes (false: it cannot be emptied,
// movers unchanged).
func (s *Scheduler) readNode(now time.Time, n topology.NodeID, priority int32, forID string, movers []*entry) (nodeClear, []*entry, bool) {
	nc := nodeClear{n: n, at: len(movers)}
	held := 0
	for _, id := range s.books.HoldersOn(n) {
		e := s.work[id]
		if !s.movable(e, priority, forID) {
			return nodeClear{}, movers[:nc.at], false
		}
		nc.cost += s.movePrice(e, now, priority)
		nc.shared = nc.shared || len(e.rec.Nodes) > 1
		movers = append(movers, e)
		for _, x := range e.rec.Nodes {
			if x.Node == n {
				held += x.GPUs
			}
		}
	}
	// GPUs a nomination reserved there are not any mover's to give.
	if held != s.fleet.Allocated(n) {
		return nodeClear{}, movers[:nc.at], false
	}
	nc.count = len(movers) - nc.at
	return nc, movers, true
}

// openDomain plans opening x, unless its exact price is above limit
// (when found). A request for part of the domain reads its cheapest
// nodes first, in the victim index's order (see cheapestClearable), and
// all of them only when those do not settle the plan.
func (s *Scheduler) openDomain(now time.Time, x defragDomain, g topology.GroupID, priority int32, forID string, limit float64, found bool) (DefragPlan, bool) {
	all := x.need == s.fleet.Stats(x.d, g).HealthyGPUs
	if !all {
		st := s.fleet.Stats(x.d, g)
		whole := st.FreeGPUs - st.Stranded
		per := s.fleet.MaxGPUsPerNode()
		for k := st.FreeNodes + 2*((max(0, x.need-whole)+per-1)/per) + 16; k < 4*st.Nodes; k *= 4 {
			nodes, movers, complete := s.cheapestClearable(now, x.d, g, priority, forID, k)
			if p, ok, sure := s.openWith(now, x, whole, nodes, movers, priority, limit, found, complete); sure {
				return p, ok
			}
			if complete {
				break
			}
		}
	}
	whole, nodes, movers, ok := s.clearable(now, x.d, g, priority, forID, all)
	if !ok {
		return DefragPlan{}, false
	}
	p, ok, _ := s.openWith(now, x, whole, nodes, movers, priority, limit, found, true)
	return p, ok
}

// openWith plans opening x from whole free GPUs and nodes, the cheapest
// that moves could empty (all of them when complete, else the first of
// them in order): sure is false when the plan would need nodes beyond
// them.
func (s *Scheduler) openWith(now time.Time, x defragDomain, whole int, nodes []nodeClear, movers []*entry, priority int32, limit float64, found, complete bool) (p DefragPlan, ok, sure bool) {
	left, exact := x.need-whole, 0.0
	for _, nc := range nodes {
		if left <= 0 {
			break
		}
		exact += nc.cost
		left -= s.fleet.Capacity(nc.n)
	}
	if left > 0 {
		return DefragPlan{}, false, complete
	}
	// The cheapest nodes' prices add up to a bound on the plan's only
	// when no mover is on two of them: one that is costs once, and a plan
	// that skips a node may find the rest of it moved already.
	if found && exact > limit && !slices.ContainsFunc(nodes, func(nc nodeClear) bool { return nc.shared }) {
		return DefragPlan{}, false, true
	}
	p, ok = s.planDomain(now, x.d, x.need, whole, nodes, movers, priority)
	return p, ok, ok || complete
}

// cheapestClearable is clearable's nodes, read only among domain d's k
// cheapest by the victim index's bounds: those whose exact price is below
// the bound of every node left unread, so they are the first nodes of
// clearable's order (all of them when complete).
func (s *Scheduler) cheapestClearable(now time.Time, d topology.DomainID, g topology.GroupID, priority int32, forID string, k int) (nodes []nodeClear, movers []*entry, complete bool) {
	f := s.fleet
	cheap, more := s.books.Index().CheapestNodes(d, k, now, s.restartOverhead(), s.defrag.cheap[:0])
	s.defrag.cheap = cheap
	frontier := math.Inf(1)
	if more {
		frontier = cheap[len(cheap)-1].GPUSeconds
	}
	movers, nodes = s.defrag.movers[:0], s.defrag.nodes[:0]
	for _, c := range cheap {
		n := c.Node
		if f.Health(n) != topology.Healthy || f.NodeGroup(n) != g || f.Free(n) == f.Capacity(n) {
			continue
		}
		var nc nodeClear
		var ok bool
		if nc, movers, ok = s.readNode(now, n, priority, forID, movers); ok {
			nodes = append(nodes, nc)
		}
	}
	slices.SortFunc(nodes, func(a, b nodeClear) int {
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.n, b.n))
	})
	end := len(nodes)
	for end > 0 && nodes[end-1].cost >= frontier {
		end--
	}
	s.defrag.movers, s.defrag.nodes = movers, nodes
	return nodes[:end], movers, !more
}

// movable reports whether a defragmentation may move e for work of
// priority at most priority (and not for e itself).
func (s *Scheduler) movable(e *entry, priority int32, forID string) bool {
	r := e.rec
	return e.w.ID != forID && r.State == gang.Admitted && r.Policy.Preemptible && e.w.Drain.CheckpointInterval > 0 &&
		e.w.Booking == "" && e.priority <= priority && len(r.Lost) == 0 && !r.HasClaims() && r.SplitOf() == "" &&
		!r.Shrunk() // a mover is placed whole: one running below its size would grow
}

// planDomain empties domain d's nodes, cheapest first, until its whole
// free nodes (whole GPUs of them to start with) hold need GPUs: every
// mover must fit outside d now, beside the movers already placed (tried
// on the scratch fleet and given back); a node one of whose movers does
// not fit is skipped.
func (s *Scheduler) planDomain(now time.Time, d topology.DomainID, need, whole int, nodes []nodeClear, movers []*entry, priority int32) (DefragPlan, bool) {
	f := s.fleet
	plan := DefragPlan{Level: f.LevelName(f.DomainLevel(d)), Domain: f.DomainName(d)}
	scratch := s.books.Scratch()
	placed := s.defrag.placed[:0] // the movers' new places, taken on the scratch fleet
	giveBack := func(from int) {
		for _, x := range placed[from:] {
			if err := scratch.Release(x.Node, x.GPUs); err != nil {
				panic("fleet: giving back a defragmentation trial: " + err.Error())
			}
		}
		placed = placed[:from]
	}
	defer func() {
		giveBack(0)
		s.defrag.placed = placed
	}()
	// The movers' new pods, all in one list the plan keeps: move i's are
	// pods[at[i]:at[i+1]].
	// Sized for the cheapest nodes that would do if all their movers fit,
	// not for every node of d.
	n, k, room := 0, 0, whole
	for _, nc := range nodes {
		if room >= need {
			break
		}
		for _, e := range movers[nc.at : nc.at+nc.count] {
			n += len(e.rec.Assign.Pods)
		}
		k += nc.count
		room += f.Capacity(nc.n)
	}
	pods := make([]placement.Pod, 0, n)
	at := append(make([]int, 0, k+1), 0)
	plan.Moves = make([]Move, 0, k)
	// A mover on several nodes of d is planned with the first of them; a
	// later node finds it already moved.
	moved := make(map[string]bool, k)
	got := whole
	for _, nc := range nodes {
		if got >= need {
			break
		}
		mark, movesAt := len(placed), len(plan.Moves)
		fits := true
		for _, e := range movers[nc.at : nc.at+nc.count] {
			if moved[e.w.ID] {
				continue
			}
			// Movers go around the domain and the blocks bookings hold
			// against them, as any of their placements would.
			avoid := append(s.defrag.avoid[:0], d)
			if len(s.held.list) > 0 {
				avoid = append(avoid, s.holdsAgainst(now, e)...)
			}
			s.defrag.avoid = avoid
			a, err := s.placer.PlaceAvoiding(scratch, &e.w, avoid...)
			if err != nil {
				fits = false
				break
			}
			for i := range a.Pods {
				// Movers hold whole GPUs, kept by count: the indexes the
				// scratch fleet happened to give are not the fleet's.
				a.Pods[i].GPUMask = 0
			}
			for _, p := range a.Pods {
				if p.GPUs == 0 {
					continue
				}
				if err := scratch.Allocate(p.Node, p.GPUs); err != nil {
					panic("fleet: a defragmentation trial on a checked placement: " + err.Error())
				}
				placed = append(placed, placement.NodeGPUs{Node: p.Node, GPUs: p.GPUs})
			}
			// The placer reuses a.Pods on its next call: keep a copy.
			pods = append(pods, a.Pods...)
			at = append(at, len(pods))
			a.Pods = nil
			plan.Moves = append(plan.Moves, Move{ID: e.w.ID, LostGPUSeconds: s.moveCost(e, now), assign: a})
			plan.price += s.movePrice(e, now, priority)
			moved[e.w.ID] = true
		}
		if !fits {
			giveBack(mark)
			for _, m := range plan.Moves[movesAt:] {
				delete(moved, m.ID)
				plan.price -= s.movePrice(s.work[m.ID], now, priority)
			}
			plan.Moves = plan.Moves[:movesAt]
			at = at[:movesAt+1]
			pods = pods[:at[movesAt]]
			continue
		}
		got += f.Capacity(nc.n)
	}
	if got < need {
		return DefragPlan{}, false
	}
	s.moveViews(plan.Moves, pods, at)
	for _, m := range plan.Moves {
		plan.LostGPUSeconds += m.LostGPUSeconds
	}
	plan.FreeGPUs = got
	return plan, true
}

// moveViews fills in each move's assignment (move i's pods are
// pods[at[i]:at[i+1]]) and its From, To and Pods, in three lists the
// plan keeps, so that a plan of many moves allocates a few times, not a
// few times a move.
func (s *Scheduler) moveViews(moves []Move, pods []placement.Pod, at []int) {
	f := s.fleet
	nFrom := 0
	for _, m := range moves {
		nFrom += len(s.work[m.ID].rec.Nodes)
	}
	from := make([]NodeGPUs, 0, nFrom)
	to := make([]NodeGPUs, 0, len(pods))
	views := make([]PodAssignment, 0, len(pods))
	merged := s.defrag.merged
	for i := range moves {
		m := &moves[i]
		e := s.work[m.ID]
		m.assign.Pods = pods[at[i]:at[i+1]:at[i+1]]
		lo := len(from)
		for _, x := range e.rec.Nodes {
			from = append(from, NodeGPUs{Node: f.NodeName(x.Node), GPUs: x.GPUs})
		}
		m.From = from[lo:len(from):len(from)]
		merged = merged[:0]
		lo, vlo := len(to), len(views)
		for _, p := range m.assign.Pods {
			views = append(views, PodAssignment{PodSet: e.w.PodSets[p.PodSet].Name, Index: p.Index, Node: f.NodeName(p.Node), GPUs: p.GPUs})
			if p.GPUs > 0 {
				merged = append(merged, placement.NodeGPUs{Node: p.Node, GPUs: p.GPUs})
			}
		}
		slices.SortFunc(merged, func(a, b placement.NodeGPUs) int { return cmp.Compare(a.Node, b.Node) })
		for j, x := range merged {
			if j > 0 && merged[j-1].Node == x.Node {
				to[len(to)-1].GPUs += x.GPUs
				continue
			}
			to = append(to, NodeGPUs{Node: f.NodeName(x.Node), GPUs: x.GPUs})
		}
		m.To, m.Pods = to[lo:len(to):len(to)], views[vlo:len(views):len(views)]
	}
	s.defrag.merged = merged
}

// restartOverhead is the work a mover redoes when it restarts.
func (s *Scheduler) restartOverhead() time.Duration {
	if s.cfg.Policy.RestartOverhead == 0 {
		return 3 * time.Minute
	}
	return s.cfg.Policy.RestartOverhead
}

// moveCost is the work a mover loses: its GPUs times the time since its
// last checkpoint, plus a restart.
func (s *Scheduler) moveCost(e *entry, now time.Time) float64 {
	return float64(e.gpus()) * (e.w.Drain.Unsaved(now, e.rec.Started) + s.restartOverhead()).Seconds()
}

// ownWorkWeight weighs up, in the choice of movers, work of the request's
// own priority that does not borrow (a team's guaranteed work, moved for
// its own gang), against lower-priority and borrowed work: a plan moves
// it only when that saves four times the work.
const ownWorkWeight = 4

// movePrice is moveCost as plans compare it: weighted up for work of the
// request's priority or above that runs within its queue's quota. Every
// price is at least the cost, so the victim index's bounds on the cost
// bound prices too.
func (s *Scheduler) movePrice(e *entry, now time.Time, priority int32) float64 {
	c := s.moveCost(e, now)
	if e.priority >= priority && !e.rec.Borrowing {
		c *= ownWorkWeight
	}
	return c
}

// defragScratch is planDefrag's reused buffers.
type defragScratch struct {
	doms   []defragDomain
	nodes  []nodeClear
	movers []*entry
	placed []placement.NodeGPUs
	avoid  []topology.DomainID
	merged []placement.NodeGPUs
	cheap  []preempt.NodeBound
}

// defragFor opens a domain for a gang blocked by fragmentation, within the
// policy's budget: its movers drain and the domain's GPUs are nominated
// for it. It reports whether it did.
func (s *Scheduler) defragFor(now time.Time, e *entry, d *Decisions) bool {
	if s.cfg.Policy.DefragBudget <= 0 || e.sharing() || e.w.Topology.Required == "" || e.wait.noFit == nil ||
		e.wait.noFit.Cause != placement.CauseFragmented || len(e.w.PodSets) != 1 {
		return false
	}
	l, ok := s.fleet.Level(e.w.Topology.Required)
	if !ok || l == 0 {
		return false
	}
	g, ok := s.groupOf(e)
	if !ok {
		return false
	}
	plan, ok := s.planDefrag(now, l, g, e.gpus(), e.priority, e.w.ID)
	if !ok || len(plan.Moves) == 0 {
		return false
	}
	// The budget: GPU-hours lost to moves over the last hour.
	spent := 0.0
	s.pruneDefragSpent(now)
	for _, x := range s.defragSpent {
		spent += x.gpuSeconds
	}
	if (spent+plan.LostGPUSeconds)/3600 > s.cfg.Policy.DefragBudget {
		return false
	}
	dom, _ := s.fleet.Domain(l, plan.Domain)
	// The gang's target inside the domain once the movers are gone,
	// placed on the scratch fleet with their GPUs released.
	scratch := s.books.Scratch()
	var freed []placement.NodeGPUs
	for _, m := range plan.Moves {
		for _, x := range s.work[m.ID].rec.Nodes {
			if err := scratch.Release(x.Node, x.GPUs); err != nil {
				panic("fleet: a defragmentation trial: " + err.Error())
			}
			freed = append(freed, x)
		}
	}
	a, err := s.placer.PlaceWithin(scratch, &e.w, dom)
	if err == nil {
		a = a.Clone()
	}
	for _, x := range freed {
		if err := scratch.Allocate(x.Node, x.GPUs); err != nil {
			panic("fleet: giving back a defragmentation trial: " + err.Error())
		}
	}
	if err != nil {
		return false
	}
	lp := ledger.Plan{Targets: []ledger.Target{{Beneficiary: e.w.ID, Assign: a}}}
	for _, m := range plan.Moves {
		lp.Victims = append(lp.Victims, ledger.Victim{ID: m.ID, Deadline: now.Add(s.work[m.ID].grace()), Reason: gang.DrainDefrag})
	}
	got, err := s.books.Nominate(now, lp)
	if err != nil {
		return false
	}
	cost := map[string]float64{}
	for _, m := range plan.Moves {
		cost[m.ID] = m.LostGPUSeconds
		if err := s.books.ReserveMove(m.ID, m.assign); err != nil {
			panic("fleet: reserving a planned move: " + err.Error())
		}
	}
	s.reportDrains(now, got, cost, d)
	s.reportNominations(lp.Targets, d)
	s.defragSpent = append(s.defragSpent, defragCost{at: now, gpuSeconds: plan.LostGPUSeconds})
	e.wait = waitVerdict{cycle: s.cycles, at: now, reason: WaitVictims}
	return true
}

// defragCost is the work one automatic plan cost, for the hourly budget.
type defragCost struct {
	at         time.Time
	gpuSeconds float64
}

// pruneDefragSpent forgets the plans an hour or more before now.
func (s *Scheduler) pruneDefragSpent(now time.Time) {
	s.defragSpent = slices.DeleteFunc(s.defragSpent, func(x defragCost) bool { return now.Sub(x.at) >= time.Hour })
}

// defragSpends is the budget's record as Snapshot shows it: the plans
// within the hour before the latest call, or nil.
func (s *Scheduler) defragSpends() []DefragSpend {
	var out []DefragSpend
	for _, x := range s.defragSpent {
		if s.now.Sub(x.at) < time.Hour {
			out = append(out, DefragSpend{At: x.at, LostGPUSeconds: x.gpuSeconds})
		}
	}
	return out
}

// setDefragSpent replaces the budget's record with spent, once checked:
// each plan within the hour before now, oldest first, its cost finite and
// not negative. Otherwise it changes nothing and says which entry is wrong
// (its index, the field, what is wrong with it).
func (s *Scheduler) setDefragSpent(now time.Time, spent []DefragSpend) (i int, field, detail string) {
	rec := make([]defragCost, 0, len(spent))
	for i, x := range spent {
		switch {
		case x.At.After(now):
			return i, "At", fmt.Sprintf("%s is after %s, the time of the record", x.At.Format(time.RFC3339), now.Format(time.RFC3339))
		case now.Sub(x.At) >= time.Hour:
			return i, "At", fmt.Sprintf("%s is an hour or more before %s: the budget no longer counts it, leave it out",
				x.At.Format(time.RFC3339), now.Format(time.RFC3339))
		case i > 0 && x.At.Before(spent[i-1].At):
			return i, "At", "before the plan listed ahead of it: list them oldest first"
		case math.IsNaN(x.LostGPUSeconds) || math.IsInf(x.LostGPUSeconds, 0) || x.LostGPUSeconds < 0:
			return i, "LostGPUSeconds", fmt.Sprintf("%v: want a finite number of GPU-seconds, 0 or more", x.LostGPUSeconds)
		}
		rec = append(rec, defragCost{at: x.At, gpuSeconds: x.LostGPUSeconds})
	}
	s.defragSpent = rec
	return 0, "", ""
}

// AdoptDefragSpent puts back, on a scheduler a host rebuilds by adoption,
// what automatic defragmentation spent within the last hour
// (Snapshot().DefragSpent, or the LostGPUSeconds of the defrag drains of
// each cycle, summed per cycle), so that the rebuilt scheduler does not
// give Policy.DefragBudget a fresh hour. spent is oldest first, each entry
// within the hour before now; otherwise the call is refused (ErrInvalid)
// and changes nothing. It replaces what the scheduler had recorded.
func (s *Scheduler) AdoptDefragSpent(now time.Time, spent []DefragSpend) error {
	if err := s.tick("adopt-defrag", now); err != nil {
		return err
	}
	if i, field, detail := s.setDefragSpent(now, spent); field != "" {
		return refuse("adopt-defrag", "", ErrInvalid, "spent[%d].%s: %s", i, field, detail)
	}
	s.advance(now)
	return nil
}
