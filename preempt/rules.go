package preempt

import (
	"math"
	"time"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
)

// queueRules is what the preemptor's rules say of one queue's work, for
// one call: decided once per queue, so each candidate is checked in O(1).
type queueRules struct {
	allowed    bool      // its work may be victims at all
	excluded   Exclusion // why not, when !allowed
	other      bool      // not the preemptor's queue
	lca        quota.NodeID
	pSide      quota.NodeID // the child of lca on the preemptor's path
	cSide      quota.NodeID // the child of lca on this queue's path
	hier       bool         // the preemptor has hierarchical advantage over it
	share      quota.Share  // fair sharing: cSide's share at the start
	maxPrio    int64        // candidates have at most this priority
	equalNewer bool         // at maxPrio, only work started after the preemptor's submission
	whileBMax  int64        // borrowWithinCohort: at most this priority while the preemptor borrows
}

// Exclusion is the rule or limit that keeps a running workload from
// being a victim.
type Exclusion uint8

const (
	// ExcludedNotPreemptible: its drain contract forbids eviction.
	ExcludedNotPreemptible Exclusion = iota + 1
	// ExcludedMinRuntime: it started less than its MinRuntime ago.
	ExcludedMinRuntime
	// ExcludedPriority: the queue's priority rule (withinQueue,
	// reclaimWithinCohort, or borrowWithinCohort's threshold).
	ExcludedPriority
	// ExcludedNotBorrowing: another queue within its quota (or under a
	// cohort that is), whose work is not reclaimable.
	ExcludedNotBorrowing
	// ExcludedQueueRule: the preemptor's rules never take from its own
	// queue (withinQueue Never) or from other queues (reclaimWithinCohort
	// Never).
	ExcludedQueueRule
	// ExcludedOtherFlavorOrTree: another flavor, or another quota tree.
	ExcludedOtherFlavorOrTree
	// ExcludedClaimed: already draining for an accepted nomination, or
	// chosen earlier this cycle (exclude).
	ExcludedClaimed
	numExclusions
)

// String names the exclusion as Explain prints it, e.g. "min runtime".
func (e Exclusion) String() string {
	switch e {
	case ExcludedNotPreemptible:
		return "not preemptible"
	case ExcludedMinRuntime:
		return "min runtime"
	case ExcludedPriority:
		return "priority"
	case ExcludedNotBorrowing:
		return "queue not borrowing"
	case ExcludedQueueRule:
		return "queue rule never"
	case ExcludedOtherFlavorOrTree:
		return "other flavor or tree"
	case ExcludedClaimed:
		return "draining or claimed"
	}
	return "unknown exclusion"
}

// Valid reports whether e is one of the defined exclusions.
func (e Exclusion) Valid() bool { return e >= ExcludedNotPreemptible && e < numExclusions }

// setupQueues decides the rules for every queue of the preemptor's tree.
func (s *Searcher) setupQueues() {
	t, q := s.tree, s.req.Queue
	n := t.NumNodes()
	if cap(s.queues) < n {
		s.queues = make([]queueRules, n)
	}
	s.queues = s.queues[:n]
	root := t.Root(q)
	first, end := t.Subtree(root)
	s.maxVictim = math.MinInt64
	for id := quota.NodeID(0); id < quota.NodeID(n); id++ {
		qr := &s.queues[id]
		*qr = queueRules{excluded: ExcludedOtherFlavorOrTree, lca: quota.None}
		if id < first || id >= end || !t.IsQueue(id) {
			continue
		}
		s.classifyQueue(id, qr)
		if qr.allowed {
			s.maxVictim = max(s.maxVictim, qr.maxPrio)
		}
	}
}

func (s *Searcher) classifyQueue(id quota.NodeID, qr *queueRules) {
	t, q, prio := s.tree, s.req.Queue, int64(s.prio)
	qr.excluded = 0
	if id == q {
		switch s.rules.WithinQueue {
		case quota.WithinQueueLowerPriority:
			qr.maxPrio = prio - 1
		case quota.WithinQueueLowerOrNewerEqualPriority:
			qr.maxPrio, qr.equalNewer = prio, true
		default:
			qr.excluded = ExcludedQueueRule
			return
		}
		qr.allowed = true
		return
	}
	pol := s.rules.ReclaimWithinCohort
	if pol == quota.ReclaimNever {
		qr.excluded = ExcludedQueueRule
		return
	}
	qr.other = true
	qr.lca, qr.pSide, qr.cSide = s.lca(q, id)
	qr.hier = s.advantage >= 0 && t.Depth(qr.lca) <= s.advantage
	qr.maxPrio = math.MaxInt32
	if pol == quota.ReclaimLowerPriority {
		qr.maxPrio = prio - 1
	}
	qr.whileBMax = math.MinInt32 - 1
	if s.rules.BorrowWithinCohort.Policy == quota.BorrowLowerPriority {
		qr.whileBMax = prio - 1
		if th, ok := s.rules.BorrowWithinCohort.Threshold(); ok {
			qr.whileBMax = min(qr.whileBMax, int64(th))
		}
	}
	if s.req.FairSharing {
		qr.hier = false
		qr.share = t.DominantShare(qr.cSide)
	}
	if !s.borrowingQueue(id, qr.lca) {
		qr.excluded = ExcludedNotBorrowing
		return
	}
	qr.allowed = true
}

// classify returns the candidate for the Index entry at pos, looking at
// it (and pricing it) once per call, or -1 when a rule that holds for the
// whole call excludes it.
func (s *Searcher) classify(pos int32) int32 {
	if s.seenAt[pos] == s.epoch {
		return s.candAt[pos]
	}
	s.seenAt[pos] = s.epoch
	c, why := s.classifyEntry(pos)
	if why != 0 {
		s.candAt[pos] = -int32(why)
		return -1
	}
	s.candAt[pos] = int32(len(s.cands))
	s.cands = append(s.cands, c)
	if c.part == surplusPart {
		s.cands = append(s.cands, s.restOf(&s.cands[len(s.cands)-1]))
	}
	return s.candAt[pos]
}

// classifyIn is classify for a key of band b: the rest of a workload
// offered in two parts for a key of a whole band.
func (s *Searcher) classifyIn(pos int32, b uint64) int32 {
	ci := s.classify(pos)
	if ci >= 0 && b&1 != 0 && s.cands[ci].part == surplusPart {
		return ci + 1
	}
	return ci
}

// restOf is the rest part of surplus candidate sc.
func (s *Searcher) restOf(sc *cand) cand {
	e := &s.index.entries[sc.entry]
	c := *sc
	c.part, c.whole, c.gpus = restPart, true, int(e.gpus-e.parts.shrinkGPUs)
	c.cost = s.partCost(&e.run, e.parts.rest)
	if !(c.cost >= 0) {
		s.unbounded = true
	}
	return c
}

// partCost is the CostModel's price of the GPUs nodes of r alone.
func (s *Searcher) partCost(r *Running, nodes []placement.NodeGPUs) float64 {
	s.partRun = *r
	s.partRun.Nodes = nodes
	c := s.cost.Cost(&s.partRun, s.req.Now)
	s.partRun = Running{}
	return c
}

// exclusionOf returns why the entry at pos is not a candidate (0 when it
// is one).
func (s *Searcher) exclusionOf(pos int32) Exclusion {
	if s.classify(pos) >= 0 {
		return 0
	}
	return Exclusion(-s.candAt[pos])
}

// classifyEntry applies the rules that do not change during the search.
// Who may be a victim (Kueue's meaning of the queue's rules, see
// quota.Rules):
//   - the same flavor and the same quota tree as the preemptor; a whole
//     workload, never some of its pods; not already gone (claimed by an
//     accepted nomination, or in exclude);
//   - Preemptible, and started at least MinRuntime ago (both skipped for
//     a workload already draining);
//   - in the preemptor's queue: withinQueue (LowerPriority: strictly
//     lower; LowerOrNewerEqualPriority: also equal priority queued after
//     req.Submitted, by Running.Submitted);
//   - in another queue: reclaimWithinCohort is not Never, its queue and
//     every cohort between it and the lowest common ancestor with the
//     preemptor borrow (checked again before each pick, see valid), and
//     the policy's priority rule holds (LowerPriority: strictly lower;
//     Any), with or without hierarchical advantage (as in Kueue,
//     advantage exempts only from borrowWithinCohort's threshold);
//   - hierarchical advantage: the request fits, without borrowing, in the
//     subtree quota of some node A on the preemptor's path (its queue or a
//     cohort), counting A's usage as Kueue does; it then has advantage
//     over borrowers whose common ancestor with it is above A.
func (s *Searcher) classifyEntry(pos int32) (cand, Exclusion) {
	if why := s.ruleOut(pos); why != 0 {
		return cand{}, why
	}
	e := &s.index.entries[pos]
	r := &e.run
	qr := &s.queues[r.Queue]
	c := cand{entry: pos, run: r, id: r.W.ID, prio: e.prio, gpus: int(e.gpus), draining: r.Draining,
		other: qr.other, share: qr.share, hier: qr.hier, whole: !r.Draining, whileB: qr.other && int64(e.prio) <= qr.whileBMax}
	if e.parts != nil {
		c.part, c.whole, c.gpus = surplusPart, false, int(e.parts.shrinkGPUs)
		c.cost = s.partCost(r, e.parts.shrink)
	} else {
		c.cost = s.cost.Cost(r, s.req.Now)
	}
	if !(c.cost >= 0) {
		s.unbounded = true
	}
	return c, 0
}

// ruleOut returns the rule that excludes the entry at pos for the whole
// call, or 0.
func (s *Searcher) ruleOut(pos int32) Exclusion {
	e := &s.index.entries[pos]
	r := &e.run
	if s.goneAt[pos] == s.epoch {
		return ExcludedClaimed
	}
	if r.Flavor != s.flavor {
		return ExcludedOtherFlavorOrTree
	}
	qr := &s.queues[r.Queue]
	switch {
	case qr.excluded == ExcludedOtherFlavorOrTree:
		return ExcludedOtherFlavorOrTree
	case !e.cand:
		return ExcludedNotPreemptible
	case !qr.allowed:
		return qr.excluded
	}
	p := int64(e.prio)
	if p > qr.maxPrio || p == qr.maxPrio && qr.equalNewer && !queuedAt(r).After(s.submitted) {
		return ExcludedPriority
	}
	if !r.Draining && s.req.Now.Before(r.Started.Add(r.MinRuntime)) {
		// Just-started work is protected from flapping.
		return ExcludedMinRuntime
	}
	return 0
}

// queuedAt is a running workload's queue-order time, which
// WithinQueueLowerOrNewerEqualPriority compares (Kueue compares
// queue-order timestamps, not start times).
func queuedAt(r *Running) time.Time {
	if r.Submitted.IsZero() {
		return r.Started
	}
	return r.Submitted
}

// keep applies the attempt's restriction on other queues' work.
func (s *Searcher) keep(c *cand, a attempt) bool {
	switch {
	case !c.other || a.others == othersAll:
		return true
	case a.others == othersHierOrWhileB:
		return c.hier || c.whileB
	}
	return c.hier
}

// valid applies the rules that change as victims are picked: another
// queue's work only while that queue (and every cohort up to the common
// ancestor) still borrows, and, under fair sharing while the preemptor
// would borrow, one of the configured strategies (the fair walk itself,
// pickFair, applies them in Kueue's order; this serves the victims a
// domain needs beyond it).
func (s *Searcher) valid(c *cand) bool {
	if c.part == restPart {
		return s.validRest(c)
	}
	if !c.other {
		return true
	}
	if !s.borrowingQueue(c.run.Queue, s.queues[c.run.Queue].lca) {
		return false
	}
	return s.validShare(c)
}

// validRest is valid for the rest of an elastic workload, which completes
// one eviction with its surplus: it is taken with its surplus, and checked
// as the workload's whole eviction, with its surplus still running
// before it (whether taken or not).
func (s *Searcher) validRest(c *cand) bool {
	if !c.other {
		return true
	}
	sc := &s.cands[s.candAt[c.entry]]
	if sc.taken {
		s.addUsage(sc)
	}
	ok := s.borrowingQueue(c.run.Queue, s.queues[c.run.Queue].lca)
	if sc.taken {
		s.removeUsage(sc)
	}
	return ok && s.validShare(c)
}

// validShare applies, under fair sharing while the preemptor would
// borrow, the strategies to another queue's candidate c; the rest of an
// elastic workload as the workload's whole eviction: the target's share
// before it counts its surplus still running, after it neither part.
func (s *Searcher) validShare(c *cand) bool {
	qr := &s.queues[c.run.Queue]
	if s.req.FairSharing && !s.withinNominal {
		// The request is added at the preemptor's queue, so that what
		// reaches its side of the tree passes the lending limits in
		// between.
		t := s.tree
		if t.AddUsage(s.req.Queue, s.flavor, s.needGPUs) != nil {
			return false // beyond MaxAmount: it cannot fit anyway
		}
		ps := t.DominantShare(qr.pSide)
		if err := t.RemoveUsage(s.req.Queue, s.flavor, s.needGPUs); err != nil {
			panic("preempt: undoing the request: " + err.Error())
		}
		var sc *cand // the surplus of a rest
		if c.part == restPart {
			sc = &s.cands[s.candAt[c.entry]]
			if sc.taken {
				s.addUsage(sc)
			}
		}
		old := t.DominantShare(qr.cSide)
		s.removeUsage(c)
		if sc != nil {
			s.removeUsage(sc)
		}
		ts := t.DominantShare(qr.cSide)
		if sc != nil && !sc.taken {
			s.addUsage(sc)
		}
		s.addUsage(c)
		for _, st := range s.strategies {
			if st.passes(ps, old, ts) {
				return true
			}
		}
		return false
	}
	return true
}

// borrowingQueue reports whether queue q and every cohort between it and
// lca still borrow: Kueue's rule that stops reclaiming from a tenant once
// it is back within its quota.
func (s *Searcher) borrowingQueue(q, lca quota.NodeID) bool {
	for n := q; n != lca; n, _ = s.tree.Parent(n) {
		if s.tree.Borrowed(n, s.flavor) <= 0 {
			return false
		}
	}
	return true
}

// advantageDepth is the depth of the parent of the lowest node A on the
// preemptor's path (its queue included) whose subtree quota holds A's
// usage plus what the request adds there (Kueue's QuantitiesFitInQuota
// walk: each node passes up what its unused local quota does not cover);
// the preemptor then has hierarchical advantage over borrowers whose
// common ancestor with it is above A. -1 when there is none.
func (s *Searcher) advantageDepth() int {
	t, q := s.tree, s.req.Queue
	rest := s.needGPUs
	for n := q; ; {
		p, ok := t.Parent(n)
		if !ok {
			return -1
		}
		if t.Usage(n, s.flavor)+rest <= t.SubtreeQuota(n, s.flavor) {
			return t.Depth(p)
		}
		rest -= max(0, t.LocalQuota(n, s.flavor)-t.Usage(n, s.flavor))
		n = p
	}
}

// lca returns the lowest common ancestor of queues a and b and its
// children towards a and b.
func (s *Searcher) lca(a, b quota.NodeID) (l, aSide, bSide quota.NodeID) {
	t := s.tree
	aSide, bSide = a, b
	for t.Depth(a) > t.Depth(b) {
		aSide = a
		a, _ = t.Parent(a)
	}
	for t.Depth(b) > t.Depth(a) {
		bSide = b
		b, _ = t.Parent(b)
	}
	for a != b {
		aSide, bSide = a, b
		a, _ = t.Parent(a)
		b, _ = t.Parent(b)
	}
	return a, aSide, bSide
}

// attempt is one pass of the search: whether the preemptor may end up
// borrowing, and which of other queues' work it may take.
type attempt struct {
	allowBorrow bool
	others      otherQueues
}

type otherQueues uint8

const (
	othersAll          otherQueues = iota
	othersHierOrWhileB             // borrowWithinCohort LowerPriority: advantage or below the threshold
	othersHier                     // hierarchical advantage only
)

// attempts lists the passes in Kueue's order:
//   - borrowWithinCohort LowerPriority: other queues' candidates must have
//     hierarchical advantage or a priority lower than the preemptor's and
//     at most the threshold, and the preemptor may end up borrowing;
//     failing that, every candidate in a pass where the preemptor ends
//     within its quota;
//   - borrowWithinCohort Never: other queues' work is taken only in a
//     pass where the preemptor ends within its quota (when it is below
//     its nominal quota) or in a borrowing pass restricted to its own
//     queue and hierarchical-advantage candidates; the borrowing pass goes
//     first when there are advantage candidates;
//   - fair sharing: one pass over every candidate.
func (s *Searcher) attempts() []attempt {
	all := attempt{true, othersAll}
	if s.req.FairSharing {
		return append(s.passes[:0], all)
	}
	other, hier := s.hasOtherCandidates()
	under := s.tree.InUse(s.req.Queue, s.flavor) < s.tree.Nominal(s.req.Queue, s.flavor)
	ps := s.passes[:0]
	switch {
	case !other:
		ps = append(ps, all)
	case s.rules.BorrowWithinCohort.Policy == quota.BorrowLowerPriority:
		ps = append(ps, attempt{true, othersHierOrWhileB}, attempt{false, othersAll})
	case under && !hier:
		ps = append(ps, attempt{false, othersAll}, attempt{true, othersHier})
	case under:
		ps = append(ps, attempt{true, othersHier}, attempt{false, othersAll})
	default:
		ps = append(ps, attempt{true, othersHier})
	}
	s.passes = ps
	return ps
}

// hasOtherCandidates reports whether some other queue has a candidate,
// and whether one has hierarchical advantage: it looks at each allowed
// queue's work in order until one passes the rules (usually the first),
// without pricing anything. Once per call.
func (s *Searcher) hasOtherCandidates() (other, hier bool) {
	if s.othersAt == s.epoch {
		return s.others, s.othersHier
	}
	for q := range s.queues {
		qr := &s.queues[q]
		if !qr.allowed || !qr.other || other && (hier || !qr.hier) {
			continue
		}
		if s.anyCandidate(quota.NodeID(q), qr.maxPrio) {
			other = true
			hier = hier || qr.hier
		}
	}
	s.othersAt, s.others, s.othersHier = s.epoch, other, hier
	return other, hier
}

// anyCandidate reports whether queue q has a candidate of priority at
// most maxPrio.
func (s *Searcher) anyCandidate(q quota.NodeID, maxPrio int64) bool {
	t := s.index.byQueue[s.index.queueSlot(q, s.flavor)]
	if t == nil {
		return false
	}
	found := false
	t.Ascend(func(k orderKey) bool {
		if int64(bandPrio(k.band)) > maxPrio {
			return k.band < runningBand // a draining band: the running ones may still hold one
		}
		found = s.ruleOut(k.pos) == 0
		return !found
	})
	return found
}
