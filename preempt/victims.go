package preempt

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Searcher finds victim sets. It keeps scratch state between calls (its
// own copy of the quota tree, per-node and per-entry marks, buffers) so
// that a steady-state search allocates only the returned plan. It is not
// safe for concurrent use.
type Searcher struct {
	opt       Options
	cost      CostModel
	placer    *placement.Placer
	lazyCost  bool // the cost model is DefaultCost: bands are priced as reached
	wholeBand int  // bands up to this size are priced whole anyway
	noBounds  bool // tests: try every cell, as the reference
	// noRoomSkip (tests) fills every cell, even one whose room cannot
	// reach the gang (see roomShort).
	noRoomSkip bool
	roomSkips  int // cells left out so, over the Searcher's life (tests)
	// roomAnswers counts the requests answered without a search because
	// every cell was roomShort (roomOutOfReach), over its life (tests).
	roomAnswers int
	// noQuotaAnswer (tests) searches even when the per-queue sums say
	// no attempt's victims can make quota fit (see quotaOutOfReach).
	noQuotaAnswer bool
	// quotaAnswers counts the requests answered so, over its life.
	quotaAnswers int
	// explainAs, when set (tests), counts a NoPlan's candidates instead
	// of explain: the reference it must agree with.
	explainAs func(*Searcher, *NoPlan)
	dirty     bool        // the scratch fleet may differ from the live one
	tree      *quota.Tree // the Searcher's own copy of the live tree
	treeOf    *quota.Tree // the live tree it was copied from

	avoid    []avoidSpan         // Request.Avoid, nested ones left out
	avoidIDs []topology.DomainID // their IDs, for the placer

	callState    // the call being served
	entryMarks   // what the call decided of each Index entry
	simulation   // the victims taken and what they free (scratch.go)
	cellWalk     // the cells to try (cells.go)
	nodeWalk     // the walk inside one cell (nodes.go)
	streamBufs   // the eviction order's streams (order.go)
	scratchBook  // what is released on the scratch fleet (scratch.go)
	quotaBuffers // usage changes in flight (usage.go)
	fairWalk     // fair sharing's walk (fair.go)
	shrinkWalk   // the taken victims that shrink instead (shrink.go)
	roomMarks    // roomShort's scratch (roomshort.go)

	partRun Running // partCost's copy of a workload priced by part of its GPUs
}

// callState is the call being served: its inputs and what follows from
// them for the whole call.
type callState struct {
	fleet         *topology.Fleet // live: read only
	scratchFleet  *topology.Fleet // View.Scratch, or a clone
	index         *Index
	req           Request
	warm          warmMarks // the preemptor's warm nodes (warm.go)
	exclude       map[string]bool
	flavor        quota.FlavorID
	needGPUs      int64
	prio          int32
	rules         quota.Rules
	submitted     time.Time
	advantage     int  // depth of the hierarchical-advantage node; -1 for none
	withinNominal bool // the request fits the preemptor's nominal quota
	unbounded     bool // some cost is negative or NaN: no pruning by bounds
	queues        []queueRules
	// maxVictim is the highest priority the rules let any queue's work
	// be a victim at (setupQueues).
	maxVictim int64
	// hopeless: the last search tried no cell, every cell's bound being
	// above maxVictim (or there being none), so no attempt can make one
	// hold the gang.
	hopeless   bool
	passes     []attempt
	shape      gangShape // what the gang needs (see setupShape)
	othersAt   uint32    // the epoch others and othersHier were found at
	others     bool      // some other queue has a candidate
	othersHier bool      // one with hierarchical advantage
}

// entryMarks is what the call decided of each Index entry, marked with
// the call's epoch so that nothing is cleared per call.
type entryMarks struct {
	epoch  uint32
	seenAt []uint32 // looked at (classified)
	candAt []int32  // its candidate index, or -Exclusion
	goneAt []uint32 // counted as gone
	gone   []int32  // entry positions of workloads counted as gone
	cands  []cand   // the candidates looked at, in the order first seen
}

// NewSearcher returns a Searcher with the given options.
func NewSearcher(opt Options) *Searcher {
	if opt.RestartOverhead <= 0 {
		opt.RestartOverhead = 3 * time.Minute
	}
	s := &Searcher{opt: opt, cost: opt.Cost, placer: placement.NewPlacer(opt.Placement)}
	if s.cost == nil {
		s.cost = DefaultCost{RestartOverhead: opt.RestartOverhead}
	}
	_, s.lazyCost = s.cost.(DefaultCost)
	s.strategies, s.badList = resolveStrategies(opt.FairSharingStrategies)
	s.badList = !s.badList
	s.wholeBand = wholeBand
	return s
}

// Victims finds a 1-minimal set of running workloads whose eviction (or,
// for elastic ones, whose shrinking: see Running.Shrinkable) lets req.W
// fit in quota and in topology, or returns a *NoPlan saying why none
// exists (and, per rule, how many workloads the rules excluded).
//
// The search is pure: it reads v.Fleet, v.Tree and v.Index and changes
// none of them. Quota what-ifs run on the Searcher's own copy of the
// tree. The one placement that validates a plan and gives Plan.Target
// runs on v.Scratch, which the caller keeps equal to v.Fleet: the search
// releases there the GPUs of the gone workloads and of the victims,
// places, and allocates them back before returning, also when placement
// (or a Scorer) panics. Should giving back fail, the Searcher stays dirty
// (ScratchDirty) and refuses every later search with ErrDirtyScratch
// until the caller rebuilds the scratch fleet and calls ScratchRebuilt.
// The CostModel sees only the candidate and now; a placement Scorer sees
// only the scratch fleet, never the live one perturbed.
//
// exclude lists IDs already chosen as victims earlier in this cycle: they
// count as gone (their quota and GPUs freed) and are never returned
// again; draining workloads that req.Claims tracks are treated the same
// way (only the GPUs no nomination claims count as freed).
//
// The rules deciding who may be a victim are on classifyEntry and
// attempts, the eviction order on compareCandidates.
//
// Which, on the fast path (one pod size, no segments or spread): victims
// are picked in eviction order until quota fits (they may sit anywhere);
// then, for each domain of the gang's required level (the whole fleet
// without one) that bounds from the Index's aggregates do not rule out,
// the domain's nodes are freed cheapest first (the price of room for one
// more pod on a node: the highest priority, then whether it takes a
// whole eviction rather than shrinks alone, then the cost, of the
// candidates there that free it, in eviction order), found best-first
// down the topology from the Index's per-domain prices, until the domain
// holds the gang; each domain's set is filled back (newest first, every
// victim without which it still fits goes; an elastic workload's rest
// before its surplus, so that it shrinks where that is enough), and the
// domain whose set has the lowest highest victim rank (priority, then a
// shrink below a whole eviction), then the lowest cost, then the fewest
// victims, then the lowest ID, wins. One placement on the scratch
// fleet validates it and gives Target. Workloads with segments, spread or
// pod sets of different sizes take a slower path that places after each
// pick (as Kueue does).
//
// Cost: O(queues) to set up, plus what the decision visits: the bands of
// candidates picked for quota, the bounds of the domains of the required
// level, and the topology and candidates below the domains tried. It does
// not grow with the running workloads the decision does not touch.
func (s *Searcher) Victims(v View, req Request, exclude map[string]bool) (Plan, error) {
	id := ""
	if req.W != nil {
		id = req.W.ID
	}
	switch {
	case s.dirty:
		return Plan{}, &NoPlan{Workload: id, Why: WhyInvalid, Detail: "scratch fleet not rebuilt", cause: ErrDirtyScratch}
	case v.Fleet == nil || v.Tree == nil || v.Index == nil:
		return Plan{}, &NoPlan{Workload: id, Why: WhyInvalid, Detail: "view without fleet, tree or index"}
	case v.Index.fleet.NumNodes() != v.Fleet.NumNodes() || v.Index.fleet.NumDomains() != v.Fleet.NumDomains() ||
		v.Index.tree.NumNodes() != v.Tree.NumNodes() || v.Index.tree.NumFlavors() != v.Tree.NumFlavors():
		return Plan{}, &NoPlan{Workload: id, Why: WhyInvalid, Detail: "index made for another fleet or tree"}
	case v.Scratch != nil && (v.Scratch.NumNodes() != v.Fleet.NumNodes() || v.Scratch.NumDomains() != v.Fleet.NumDomains()):
		return Plan{}, &NoPlan{Workload: id, Why: WhyInvalid, Detail: "scratch fleet of another shape"}
	}
	s.begin(v, req, exclude)
	defer s.end()
	if np := s.validateRequest(); np != nil {
		return Plan{}, np
	}
	if np := s.setupGone(); np != nil {
		return Plan{}, np
	}
	s.setupQueues()
	s.setupCells()
	if plan, ok, np := s.fitsAlready(); np != nil || ok {
		if np != nil {
			return Plan{}, np
		}
		return plan, nil
	}
	// The gate stands for Kueue's "does not fit": one verdict whether or
	// not some workload could be evicted.
	if np := s.borrowGate(); np != nil {
		return Plan{}, np
	}
	if other, _ := s.hasOtherCandidates(); !other && !s.hasOwnCandidates() {
		return Plan{}, s.noPlan(WhyNoCandidates)
	}
	plan, why, np := s.searchAttempts()
	switch {
	case np != nil:
		return Plan{}, np
	case why == 0:
		return plan, nil
	}
	return Plan{}, s.noPlan(why)
}

// searchAttempts runs the attempts in turn and returns the first plan
// found (why 0), or why none was: WhyQuota when every attempt ran out
// of candidates before quota fit, WhyTopology otherwise; or a NoPlan of
// a search's own.
func (s *Searcher) searchAttempts() (Plan, Why, *NoPlan) {
	why, answered := WhyQuota, false
	if !s.req.FairSharing && s.shape.fast {
		reach := s.outOfReach()
		room, tried := false, false
		if !reach {
			room, tried = s.roomOutOfReach()
		}
		if (reach || room) && s.orderFree() {
			// No attempt can find a plan: only why is left to learn
			// (see reach.go and roomshort.go), and the sums say it.
			if !s.quotaOutOfReach() {
				if room {
					s.hopeless = !tried
					s.roomAnswers++
				}
				return Plan{}, WhyTopology, nil
			}
			if !s.noQuotaAnswer {
				s.quotaAnswers++
				if !verifyQuotaAnswers {
					return Plan{}, WhyQuota, nil
				}
				answered = true // the searches below must agree
			}
		}
	}
	plan, why, np := s.eachAttempt(why)
	if answered {
		checkQuotaAnswer(s.req.W.ID, why, np)
	}
	return plan, why, np
}

// eachAttempt searches each attempt whose quota is reachable, and
// returns the first plan found, or why (WhyTopology once an attempt
// fits quota but finds no room).
func (s *Searcher) eachAttempt(why Why) (Plan, Why, *NoPlan) {
	for _, a := range s.attempts() {
		if !s.quotaReachable(a) {
			continue
		}
		plan, found, quotaShort, np := s.search(a)
		if np != nil {
			return Plan{}, 0, np
		}
		if found {
			return plan, 0, nil
		}
		if !quotaShort {
			why = WhyTopology
			if s.hopeless {
				// No attempt can find a plan, and none can change why.
				break
			}
		}
	}
	return Plan{}, why, nil
}

// ScratchDirty reports whether an interrupted search left View.Scratch
// changed; Victims then refuses (ErrDirtyScratch).
func (s *Searcher) ScratchDirty() bool { return s.dirty }

// ScratchRebuilt tells the Searcher that the caller rebuilt its scratch
// fleet (for example as a fresh Fleet.Clone) after ScratchDirty.
func (s *Searcher) ScratchRebuilt() {
	for _, n := range s.releasedOn {
		s.released[n] = 0
	}
	s.releasedOn = s.releasedOn[:0]
	s.dirty = false
}

// begin takes the call's inputs and copies the live tree into the
// Searcher's own (O(queues)).
func (s *Searcher) begin(v View, req Request, exclude map[string]bool) {
	s.fleet, s.index, s.req, s.exclude = v.Fleet, v.Index, req, exclude
	s.scratchFleet = v.Scratch
	if s.treeOf != v.Tree {
		s.tree, s.treeOf = v.Tree.Clone(), v.Tree
	} else {
		v.Tree.CopyTo(s.tree)
	}
	s.epoch++
	if s.epoch == 0 {
		// Marks of 2^32 calls ago would read as this call's again: the
		// per-entry ones and the two once-per-call sums.
		clear(s.seenAt)
		clear(s.goneAt)
		clear(s.cellAt)
		s.othersAt, s.goneCellsAt = 0, 0
		s.epoch = 1
	}
	if n := len(v.Index.entries); len(s.seenAt) < n {
		s.seenAt = slices.Grow(s.seenAt, n-len(s.seenAt))[:n]
		s.candAt = slices.Grow(s.candAt, n-len(s.candAt))[:n]
		s.goneAt = slices.Grow(s.goneAt, n-len(s.goneAt))[:n]
	}
	if n := v.Fleet.NumNodes(); len(s.freed) < n {
		s.freed = make([]int32, n)
		s.marked = make([]bool, n)
		s.nodeSeen = make([]uint32, n)
		s.released = make([]int32, n)
	}
	s.cands, s.gone, s.taken, s.quotaPicks, s.touched = s.cands[:0], s.gone[:0], s.taken[:0], s.quotaPicks[:0], s.touched[:0]
	s.unbounded = false
	s.markWarm()
}

// end clears what the call set (the scratch fleet was given back by
// then) and drops references to the caller's values.
func (s *Searcher) end() {
	for _, n := range s.touched {
		s.freed[n] = 0
		s.marked[n] = false
	}
	s.touched = s.touched[:0]
	clear(s.cands)
	s.cands = s.cands[:0]
	s.pendingQ = s.pendingQ[:0]
	clear(s.pending)
	if len(s.releasedOn) > 0 {
		// A panic (in placement, or a Scorer) left GPUs released on the
		// scratch fleet: give them back. Should that fail too, the
		// Searcher stays dirty.
		s.giveBack()
	}
	s.fleet, s.scratchFleet, s.index, s.req, s.exclude = nil, nil, nil, Request{}, nil
}

func (s *Searcher) noPlan(why Why) *NoPlan {
	np := &NoPlan{Workload: s.req.W.ID, Why: why}
	if s.explainAs != nil {
		s.explainAs(s, np)
	} else {
		s.explain(np)
	}
	return np
}

func (s *Searcher) invalid(detail string) *NoPlan {
	id := ""
	if s.req.W != nil {
		id = s.req.W.ID
	}
	return &NoPlan{Workload: id, Why: WhyInvalid, Detail: detail}
}

func (s *Searcher) validateRequest() *NoPlan {
	r, t := s.req, s.tree
	switch {
	case r.W == nil:
		return s.invalid("no workload")
	case r.Queue < 0 || int(r.Queue) >= t.NumNodes() || !t.IsQueue(r.Queue):
		return s.invalid("not a queue")
	case r.Flavor < 0 || int(r.Flavor) >= t.NumFlavors() || !t.Serves(r.Queue, r.Flavor):
		return s.invalid("flavor not served by the queue")
	case r.W.GPUs() <= 0:
		return s.invalid("workload without GPUs")
	case r.FairSharing && s.badList:
		return s.invalid(fmt.Sprintf("fair-sharing strategies %v: one strategy, or LessThanOrEqualToFinalShare then LessThanInitialShare", s.opt.FairSharingStrategies))
	}
	if _, running := s.index.slot[r.W.ID]; running {
		return s.invalid("the preemptor is running")
	}
	s.flavor, s.needGPUs, s.prio = r.Flavor, int64(r.W.GPUs()), r.W.Priority
	s.rules = t.Rules(r.Queue)
	s.submitted = r.Submitted
	switch {
	case r.Starved:
		s.submitted = time.Time{} // queued before every candidate
	case s.submitted.IsZero():
		s.submitted = r.Now
	}
	if np := s.setupAvoid(); np != nil {
		return np
	}
	return s.setupShape()
}

// setupGone counts as gone the workloads in exclude and the draining ones
// Claims tracks: their usage leaves the tree and their unclaimed GPUs are
// freed, for the whole search.
func (s *Searcher) setupGone() *NoPlan {
	x := s.index
	mark := func(pos int32) {
		if s.goneAt[pos] != s.epoch {
			s.goneAt[pos] = s.epoch
			s.gone = append(s.gone, pos)
		}
	}
	if s.req.Claims != nil {
		x.draining.Ascend(func(k orderKey) bool {
			if s.req.Claims.Tracked(k.id) {
				mark(k.pos)
			}
			return true
		})
	}
	for id := range s.exclude { // a set: the order does not matter
		if pos, ok := x.slot[id]; ok && s.exclude[id] {
			mark(pos)
		}
	}
	slices.Sort(s.gone) // so the tree sees the same removals in the same order
	for _, pos := range s.gone {
		r := &x.entries[pos].run
		if err := s.tree.RemoveUsage(r.Queue, r.Flavor, int64(x.entries[pos].gpus)); err != nil {
			// The Searcher's tree is copied again at the next call:
			// nothing to undo.
			return s.invalid("running workload " + r.W.ID + ": " + err.Error())
		}
	}
	for _, pos := range s.gone {
		r := &x.entries[pos].run
		for _, ng := range r.Nodes {
			g := ng.GPUs
			if s.req.Claims != nil && s.req.Claims.Tracked(r.W.ID) {
				g = min(g, max(0, s.req.Claims.Unclaimed(r.W.ID, ng.Node, ng.GPUs)))
			}
			s.free(ng.Node, g)
		}
	}
	s.advantage = s.advantageDepth()
	t, q := s.tree, s.req.Queue
	s.withinNominal = t.InUse(q, s.flavor)+s.needGPUs <= t.Nominal(q, s.flavor)
	return nil
}
