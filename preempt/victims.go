package preempt

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Searcher finds victim sets. It keeps scratch buffers between calls so
// that a steady-state search allocates only the returned plan. It is not
// safe for concurrent use.
type Searcher struct {
	opt    Options
	cost   CostModel
	placer *placement.Placer

	// the call being served
	f      *topology.Fleet
	t      *quota.Tree
	req    Request
	fl     quota.FlavorID
	need   int64
	prio   int32
	rules  quota.Rules
	subm   time.Time
	adv    int // depth of the hierarchical-advantage node; -1 for none
	within bool
	byID   bool // running is sorted by ID: candidate indexes order IDs

	// topology estimate (fast path)
	fast     bool
	lvl      topology.Level
	dlo      topology.DomainID
	ndom     int
	k, pods  int
	gslot    []int32 // per group: its slot among eligible groups, or -1
	ngs      int
	freed    []int32           // per node: GPUs freed by gone workloads and taken candidates
	touched  []topology.NodeID // nodes with freed GPUs, once each (marked)
	marked   []bool
	slots    []int32 // per domain x eligible group: pods that would fit
	fitCount int     // slots that hold the whole gang

	cands    []cand
	order    []int32 // every candidate, in eviction order
	list     []int32 // the candidates of the current attempt
	domStart []int32
	domList  []int32 // per domain: positions in list of candidates freeing GPUs there
	hits     []domHit
	goneFree []int32 // per domain x eligible group: GPUs freed by gone workloads
	bounded  bool    // every cost is 0 or more: domains can be pruned by bounds
	noBounds bool    // tests: try every domain, as the reference
	bounds   []domBound
	items    []boundItem
	taken    []int32
	best     []int32
	gone     []int32 // indexes into running of workloads counted as gone
	running  []Running
	perQ     []int64
	keys     []sortKey
	keys2    []sortKey      // radixSortKeys' other buffer
	radix    [16][256]int32 // radixSortKeys' byte histograms
	undo     []placement.NodeGPUs

	tree   *quota.Tree // private scratch copy of the live tree
	treeOf *quota.Tree // the live tree it was cloned from
	all    []Running
	dirty  bool
}

type cand struct {
	r      *Running
	id     string
	prio   int32
	cost   float64
	gpus   int
	other  bool // another queue than the preemptor's
	hier   bool // the preemptor has hierarchical advantage over it
	whileB bool // allowed by borrowWithinCohort
	lca    quota.NodeID
	pSide  quota.NodeID // the child of lca on the preemptor's path
	cSide  quota.NodeID // the child of lca on the candidate's path
	share  quota.Share  // cSide's share at the start (fair sharing order)
	taken  bool
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
	return s
}

type attempt struct {
	allowBorrow bool
	keep        func(c *cand) bool
}

// Victims finds a 1-minimal set of running workloads whose eviction lets
// req.W fit in quota and in topology, or returns a *NoPlan.
//
// f and t are left exactly as they were: the search removes usage and
// releases GPUs and puts them back (both are exact). exclude lists IDs
// already chosen as victims earlier in this cycle: they count as gone
// (their quota and GPUs freed) and are never returned again; workloads
// tracked by req.Nominations are treated the same way.
//
// Who may be a victim (Kueue's meaning of the queue's rules, see
// quota.Rules):
//   - the same flavor and the same quota tree as the preemptor; a whole
//     workload, never some of its pods;
//   - Preemptible, and started at least MinRuntime ago (both skipped for
//     a workload already draining);
//   - in the preemptor's queue: withinQueue (LowerPriority: strictly
//     lower; LowerOrNewerEqualPriority: also equal priority started after
//     req.Submitted);
//   - in another queue: reclaimWithinCohort is not Never, its queue and
//     every cohort between it and the lowest common ancestor with the
//     preemptor borrow (checked again before each pick, so a tenant stops
//     losing work once it is back within quota), and the policy's
//     priority rule holds (LowerPriority: strictly lower; Any), with or
//     without hierarchical advantage (as in Kueue, advantage exempts only
//     from borrowWithinCohort's threshold);
//   - hierarchical advantage: the request fits, without borrowing, in the
//     subtree quota of some node A on the preemptor's path (its queue or a
//     cohort), counting A's usage as Kueue does; it then has advantage
//     over borrowers whose common ancestor with it is above A;
//   - borrowWithinCohort: when it is LowerPriority, other queues'
//     candidates must have hierarchical advantage or a priority lower
//     than the preemptor's and at most the threshold, and the preemptor
//     may end up borrowing; failing that, every candidate is tried in an
//     attempt where the preemptor ends within its quota. When it is
//     Never, other queues' work is taken only in an attempt where the
//     preemptor ends within its quota (when it is below its nominal
//     quota) or in a borrowing attempt restricted to its own queue and
//     hierarchical-advantage candidates; the borrowing attempt goes first
//     when there are advantage candidates (Kueue's order);
//   - fair sharing (req.FairSharing): its own queue by withinQueue, other
//     borrowing queues by reclaimWithinCohort's priority rule, taken from
//     the highest dominant share first, and only while the preemptor's
//     share after admission stays at or below the target's share after
//     the eviction (Kueue's strategy S2-a), unless the preemptor stays
//     within its nominal quota.
//
// Which: candidates are ordered once (see less). For a gang that must sit
// inside one domain of its required level, every domain is tried: quota
// victims in order, then the domain's own candidates in order, until quota
// fits and the domain holds the gang (counted incrementally from the
// victims' nodes with the fleet's histograms, not by placement); each
// domain's set is filled back, and the domain whose set has the lowest
// highest victim priority, then the lowest cost, wins. One placement on
// the fleet with the victims released validates the set and gives Target.
// Workloads with segments, spread or pod sets of different sizes take a
// slower path that places after each pick (as Kueue does).
func (s *Searcher) Victims(v View, req Request, exclude map[string]bool) (Plan, error) {
	if s.dirty {
		return Plan{}, &NoPlan{Why: WhyInvalid, Detail: "scratch fleet not rebuilt", cause: ErrDirtyScratch}
	}
	switch {
	case v.Fleet == nil || v.Tree == nil || v.Index == nil:
		return Plan{}, &NoPlan{Why: WhyInvalid, Detail: "view without fleet, tree or index"}
	case v.Index.fleet.NumNodes() != v.Fleet.NumNodes() || v.Index.tree.NumNodes() != v.Tree.NumNodes():
		return Plan{}, &NoPlan{Why: WhyInvalid, Detail: "index made for another fleet or tree"}
	case v.Scratch != nil && v.Scratch.NumNodes() != v.Fleet.NumNodes():
		return Plan{}, &NoPlan{Why: WhyInvalid, Detail: "scratch fleet of another shape"}
	}
	// The tree is copied into the Searcher's own scratch tree (O(queues)):
	// the live one is only read.
	if s.treeOf != v.Tree {
		s.tree, s.treeOf = v.Tree.Clone(), v.Tree
	} else {
		v.Tree.CopyTo(s.tree)
	}
	f := v.Scratch
	if f == nil {
		f = v.Fleet.Clone()
	}
	s.all = s.all[:0]
	v.Index.ascend(func(r *Running) bool {
		s.all = append(s.all, *r)
		return true
	})
	s.dirty = true // cleared only if the scratch fleet is given back
	plan, err := s.victimsOn(f, s.tree, req, s.all, exclude)
	s.dirty = false
	clear(s.all)
	return plan, err
}

// ScratchDirty reports whether an interrupted search left View.Scratch
// changed; Victims then refuses (ErrDirtyScratch).
func (s *Searcher) ScratchDirty() bool { return s.dirty }

// ScratchRebuilt tells the Searcher that the caller rebuilt its scratch
// fleet (for example as a fresh Fleet.Clone) after ScratchDirty.
func (s *Searcher) ScratchRebuilt() { s.dirty = false }

func (s *Searcher) victimsOn(f *topology.Fleet, t *quota.Tree, req Request, running []Running, exclude map[string]bool) (Plan, error) {
	s.f, s.t, s.req, s.running = f, t, req, running
	s.taken, s.gone = s.taken[:0], s.gone[:0]
	defer func() { s.f, s.t, s.req, s.running = nil, nil, Request{}, nil }()
	if np := s.validateRequest(); np != nil {
		return Plan{}, np
	}
	if np := s.setup(running, exclude); np != nil {
		return Plan{}, np
	}
	defer s.restore()
	if plan, ok := s.fitsAlready(); ok {
		return plan, nil
	}
	if len(s.cands) == 0 {
		return Plan{}, s.noPlan(WhyNoCandidates, "")
	}
	why := WhyQuota
	for _, a := range s.attempts() {
		s.list = s.list[:0]
		for _, i := range s.order {
			if a.keep(&s.cands[i]) {
				s.list = append(s.list, i)
			}
		}
		if !s.quotaReachable(a.allowBorrow) {
			continue
		}
		why = WhyTopology
		if plan, ok := s.search(a.allowBorrow); ok {
			return plan, nil
		}
	}
	return Plan{}, s.noPlan(why, "")
}

func (s *Searcher) tracked(id string) bool {
	return s.req.Claims != nil && s.req.Claims.Tracked(id)
}

func (s *Searcher) unclaimed(id string, n topology.NodeID, gpus int) int {
	if s.req.Claims == nil || !s.req.Claims.Tracked(id) {
		return gpus
	}
	return min(gpus, max(0, s.req.Claims.Unclaimed(id, n, gpus)))
}

func (s *Searcher) noPlan(why Why, detail string) *NoPlan {
	id := ""
	if s.req.W != nil {
		id = s.req.W.ID
	}
	return &NoPlan{Workload: id, Why: why, Candidates: len(s.cands), Detail: detail}
}

func (s *Searcher) validateRequest() *NoPlan {
	r, t := s.req, s.t
	s.cands = s.cands[:0]
	switch {
	case r.W == nil:
		return s.noPlan(WhyInvalid, "no workload")
	case r.Queue < 0 || int(r.Queue) >= t.NumNodes() || !t.IsQueue(r.Queue):
		return s.noPlan(WhyInvalid, "not a queue")
	case r.Flavor < 0 || int(r.Flavor) >= t.NumFlavors() || !t.Serves(r.Queue, r.Flavor):
		return s.noPlan(WhyInvalid, "flavor not served by the queue")
	case r.W.GPUs() <= 0:
		return s.noPlan(WhyInvalid, "workload without GPUs")
	}
	s.fl, s.need, s.prio = r.Flavor, int64(r.W.GPUs()), r.W.Priority
	s.rules = t.Rules(r.Queue)
	s.subm = r.Submitted
	if s.subm.IsZero() {
		s.subm = r.Now
	}
	return s.setupTopology()
}

// setupTopology decides between the fast path and the placing path and
// prepares the per-domain counters of the fast path.
func (s *Searcher) setupTopology() *NoPlan {
	f, w := s.f, s.req.W
	s.lvl = 0
	if w.Topology.Required != "" {
		l, ok := f.Level(w.Topology.Required)
		if !ok {
			return s.noPlan(WhyInvalid, "unknown required level "+w.Topology.Required)
		}
		s.lvl = l
	}
	s.k, s.pods = w.PodSets[0].GPUsPerPod, 0
	s.fast = !w.Topology.Segment.Enabled() && w.Spread.MaxPerNode == 0 && w.Spread.MaxPerDomain == 0
	for _, ps := range w.PodSets {
		if ps.GPUsPerPod != s.k {
			s.fast = false
		}
		s.pods += ps.Count
	}
	if s.k <= 0 || s.k > f.MaxGPUsPerNode() {
		return s.noPlan(WhyInvalid, "a pod needs more GPUs than any node has")
	}
	s.gslot = slices.Grow(s.gslot[:0], f.NumGroups())[:f.NumGroups()]
	s.ngs = 0
	for g := range topology.GroupID(f.NumGroups()) {
		s.gslot[g] = -1
		if w.Flavor != "" && f.GroupFlavor(g) != w.Flavor {
			continue
		}
		if len(w.Pools) > 0 && !slices.Contains(w.Pools, f.GroupPool(g)) {
			continue
		}
		s.gslot[g] = int32(s.ngs)
		s.ngs++
	}
	lo, hi := f.DomainsAt(s.lvl)
	s.dlo, s.ndom = lo, int(hi-lo)
	s.slots = slices.Grow(s.slots[:0], s.ndom*s.ngs)[:s.ndom*s.ngs]
	s.fitCount = 0
	for d := range s.ndom {
		for g := range topology.GroupID(f.NumGroups()) {
			if gi := s.gslot[g]; gi >= 0 {
				v := int32(f.PodsThatFit(s.dlo+topology.DomainID(d), g, s.k))
				s.slots[d*s.ngs+int(gi)] = v
				if int(v) >= s.pods {
					s.fitCount++
				}
			}
		}
	}
	if n := f.NumNodes(); len(s.freed) < n {
		s.freed = make([]int32, n)
		s.marked = make([]bool, n)
	}
	s.touched = s.touched[:0]
	s.undo = s.undo[:0]
	return nil
}

// setup classifies running workloads into gone ones and candidates,
// checks them against the fleet and the tree, and applies the gone ones.
func (s *Searcher) setup(running []Running, exclude map[string]bool) *NoPlan {
	f, t, q := s.f, s.t, s.req.Queue
	s.gone = s.gone[:0]
	// Check every offered workload against the fleet and the tree before
	// changing anything: GPUs per node within what is allocated, usage per
	// queue within what is recorded.
	s.byID = true
	for i := range running {
		r := &running[i]
		if r.W == nil || r.W.ID == "" {
			s.clearFreed()
			return s.noPlan(WhyInvalid, "running workload without spec or ID")
		}
		if i > 0 && s.byID && running[i-1].W.ID >= r.W.ID {
			s.byID = false
		}
		if r.Queue < 0 || int(r.Queue) >= t.NumNodes() || r.Flavor < 0 || int(r.Flavor) >= t.NumFlavors() {
			s.clearFreed()
			return s.noPlan(WhyInvalid, "running workload "+r.W.ID+": unknown queue or flavor")
		}
		for _, x := range r.Nodes {
			if x.Node < 0 || int(x.Node) >= f.NumNodes() || x.GPUs <= 0 {
				s.clearFreed()
				return s.noPlan(WhyInvalid, "running workload "+r.W.ID+": bad node entry")
			}
			if s.freed[x.Node] == 0 {
				s.touched = append(s.touched, x.Node)
			}
			s.freed[x.Node] += int32(x.GPUs)
		}
	}
	bad := topology.NodeID(-1)
	for _, n := range s.touched {
		if int(s.freed[n]) > f.Allocated(n) {
			bad = n
		}
		s.freed[n] = 0
	}
	s.touched = s.touched[:0]
	if bad >= 0 {
		return s.noPlan(WhyInvalid, "running workloads hold more GPUs than allocated on "+f.NodeName(bad))
	}
	for i := range running {
		r := &running[i]
		if r.W.ID == s.req.W.ID {
			return s.noPlan(WhyInvalid, "the preemptor is running")
		}
		if exclude[r.W.ID] || s.tracked(r.W.ID) {
			s.gone = append(s.gone, int32(i))
		}
	}
	// Gone workloads leave the tree for the whole search.
	for j, i := range s.gone {
		r := &running[i]
		if err := t.RemoveUsage(r.Queue, r.Flavor, int64(gpusOf(r.Nodes))); err != nil {
			for _, k := range s.gone[:j] {
				r := &running[k]
				_ = t.AddUsage(r.Queue, r.Flavor, int64(gpusOf(r.Nodes)))
			}
			s.gone = s.gone[:0]
			return s.noPlan(WhyInvalid, "running workload "+r.W.ID+": "+err.Error())
		}
	}
	for _, i := range s.gone {
		r := &running[i]
		for _, x := range r.Nodes {
			s.free(x.Node, s.unclaimed(r.W.ID, x.Node, x.GPUs))
		}
	}
	// What gone workloads free per domain and group, for the bounds.
	s.goneFree = slices.Grow(s.goneFree[:0], s.ndom*s.ngs)[:s.ndom*s.ngs]
	clear(s.goneFree)
	for _, n := range s.touched {
		if gi := s.gslot[f.NodeGroup(n)]; gi >= 0 && s.fast {
			s.goneFree[int(f.DomainOf(n, s.lvl)-s.dlo)*s.ngs+int(gi)] += s.freed[n]
		}
	}
	s.adv = s.advantageDepth()
	inUse, nominal := t.InUse(q, s.fl), t.Nominal(q, s.fl)
	s.within = inUse+s.need <= nominal
	// Candidates.
	for i := range running {
		r := &running[i]
		if r.Flavor != s.fl || exclude[r.W.ID] || s.tracked(r.W.ID) || t.Root(r.Queue) != t.Root(q) {
			continue
		}
		if c, ok := s.classify(r); ok {
			s.cands = append(s.cands, c)
		}
	}
	s.bounded = !s.noBounds
	for i := range s.cands {
		if !(s.cands[i].cost >= 0) {
			s.bounded = false
		}
	}
	// Usage of every candidate must be removable: try it once, per queue.
	s.list = s.list[:0]
	for i := range s.cands {
		s.list = append(s.list, int32(i))
	}
	if err := s.removeAll(s.list); err != nil {
		np := s.noPlan(WhyInvalid, err.Error())
		s.restore()
		return np
	}
	s.addAll()
	s.sortCandidates()
	return nil
}

// clearFreed zeroes the per-node sums of the validation in setup, so that
// a refused call leaves them clean for the next one.
func (s *Searcher) clearFreed() {
	for _, n := range s.touched {
		s.freed[n] = 0
	}
	s.touched = s.touched[:0]
}

// classify applies the rules that do not change during the search.
func (s *Searcher) classify(r *Running) (cand, bool) {
	t, q, now := s.t, s.req.Queue, s.req.Now
	if !r.Draining {
		// The drain contract: work that cannot be stopped safely is never
		// a victim, and just-started work is protected from flapping.
		if !r.Preemptible || now.Before(r.Started.Add(r.MinRuntime)) {
			return cand{}, false
		}
	}
	c := cand{r: r, id: r.W.ID, prio: r.W.Priority, gpus: gpusOf(r.Nodes), lca: quota.None}
	if c.gpus == 0 {
		return cand{}, false
	}
	p := r.W.Priority
	if r.Queue == q {
		switch s.rules.WithinQueue {
		case quota.WithinQueueLowerPriority:
			if p >= s.prio {
				return cand{}, false
			}
		case quota.WithinQueueLowerOrNewerEqualPriority:
			if p > s.prio || p == s.prio && !r.Started.After(s.subm) {
				return cand{}, false
			}
		default:
			return cand{}, false
		}
	} else {
		pol := s.rules.ReclaimWithinCohort
		if pol == quota.ReclaimNever {
			return cand{}, false
		}
		c.other = true
		c.lca, c.pSide, c.cSide = s.lca(q, r.Queue)
		c.hier = s.adv >= 0 && t.Depth(c.lca) <= s.adv
		prioOK := pol == quota.ReclaimAny || p < s.prio
		if th, ok := s.rules.BorrowWithinCohort.Threshold(); s.rules.BorrowWithinCohort.Policy == quota.BorrowLowerPriority {
			c.whileB = p < s.prio && (!ok || p <= th)
		}
		if s.req.FairSharing {
			c.hier = false
			c.share = t.DominantShare(c.cSide)
		}
		if !prioOK {
			return cand{}, false
		}
		if !s.borrowing(&c) {
			return cand{}, false
		}
	}
	c.cost = s.cost.Cost(r, now)
	return c, true
}

// advantageDepth is the depth of the parent of the lowest node A on the
// preemptor's path (its queue included) whose subtree quota holds A's
// usage plus what the request adds there (Kueue's QuantitiesFitInQuota
// walk: each node passes up what its unused local quota does not cover);
// the preemptor then has hierarchical advantage over borrowers whose
// common ancestor with it is above A. -1 when there is none.
func (s *Searcher) advantageDepth() int {
	t, q := s.t, s.req.Queue
	rest := s.need
	for n := q; ; {
		p, ok := t.Parent(n)
		if !ok {
			return -1
		}
		if t.Usage(n, s.fl)+rest <= t.SubtreeQuota(n, s.fl) {
			return t.Depth(p)
		}
		rest -= max(0, t.LocalQuota(n, s.fl)-t.Usage(n, s.fl))
		n = p
	}
}

// lca returns the lowest common ancestor of queues a and b and its
// children towards a and b.
func (s *Searcher) lca(a, b quota.NodeID) (l, aSide, bSide quota.NodeID) {
	t := s.t
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

// borrowing reports whether c's queue and every cohort between it and the
// common ancestor with the preemptor still borrow: Kueue's rule that stops
// reclaiming from a tenant once it is back within its quota.
func (s *Searcher) borrowing(c *cand) bool {
	for n := c.r.Queue; n != c.lca; n, _ = s.t.Parent(n) {
		if s.t.Borrowed(n, s.fl) <= 0 {
			return false
		}
	}
	return true
}

// sortCandidates puts the candidates in eviction order, the one order of
// the package:
//  1. already draining first: their GPUs are coming back anyway;
//  2. other queues' borrowed work before the preemptor's own queue;
//  3. under fair sharing, higher dominant share of the candidate's side
//     of the tree first;
//  4. lower priority first;
//  5. lower cost first;
//  6. ID.
func (s *Searcher) sortCandidates() {
	s.order = s.order[:0]
	cs := s.cands
	if s.req.FairSharing {
		for i := range cs {
			s.order = append(s.order, int32(i))
		}
		slices.SortFunc(s.order, func(i, j int32) int { return less(&cs[i], &cs[j]) })
		return
	}
	// Without shares, criteria 1, 2 and 4 pack into one integer and the
	// cost maps to an order-preserving integer, so the sort compares flat
	// keys instead of chasing pointers. When running came sorted by ID,
	// candidates are in ID order and their index breaks ties without
	// comparing strings; otherwise only runs of equal keys are sorted by
	// ID afterwards.
	s.keys = s.keys[:0]
	for i := range cs {
		k := uint64(uint32(cs[i].prio) ^ 1<<31)
		if !cs[i].r.Draining {
			k |= 1 << 33
		}
		if !cs[i].other {
			k |= 1 << 32
		}
		s.keys = append(s.keys, sortKey{k, costKey(cs[i].cost), int32(i)})
	}
	s.keys = s.radixSortKeys(s.keys)
	if !s.byID {
		byID := func(a, b sortKey) int { return cmp.Or(cmp.Compare(cs[a.i].id, cs[b.i].id), cmp.Compare(a.i, b.i)) }
		for lo := 0; lo < len(s.keys); {
			hi := lo + 1
			for hi < len(s.keys) && s.keys[hi].k == s.keys[lo].k && s.keys[hi].cost == s.keys[lo].cost {
				hi++
			}
			if hi-lo > 1 {
				slices.SortFunc(s.keys[lo:hi], byID)
			}
			lo = hi
		}
	}
	for _, k := range s.keys {
		s.order = append(s.order, k.i)
	}
}

type sortKey struct {
	k    uint64
	cost uint64 // costKey
	i    int32
}

// radixMin is the number of keys from which radixSortKeys counts rather
// than compares: small searches keep the comparison sort, which has no
// histograms to clear and no second buffer to fill.
const radixMin = 192

// radixSortKeys sorts keys appended in index order by (k, cost, i) and
// returns the sorted slice (keys itself or the other scratch buffer). It
// is a stable least-significant-byte-first radix sort over the 16 bytes
// of k and cost, so equal keys keep their index order, and bytes where
// every key has the same value (most of k, and often the low bytes of
// integral costs) take no pass: O(n) per byte that varies instead of
// O(n log n) comparisons, which is most of setting up a search over a
// large fleet.
func (s *Searcher) radixSortKeys(keys []sortKey) []sortKey {
	n := len(keys)
	if n < radixMin {
		slices.SortFunc(keys, func(a, b sortKey) int {
			if a.k != b.k {
				return cmp.Compare(a.k, b.k)
			}
			if a.cost != b.cost {
				return cmp.Compare(a.cost, b.cost)
			}
			return cmp.Compare(a.i, b.i)
		})
		return keys
	}
	// The bytes where some key differs from the first: only those take a
	// pass.
	var diffCost, diffK uint64
	for _, x := range keys {
		diffCost |= x.cost ^ keys[0].cost
		diffK |= x.k ^ keys[0].k
	}
	h := &s.radix
	for d := range 16 {
		if diffOf(d, diffCost, diffK) {
			clear(h[d][:])
		}
	}
	for _, x := range keys {
		for b := range 8 {
			if diffCost>>(8*b)&0xff != 0 {
				h[b][byte(x.cost>>(8*b))]++
			}
		}
		for b := range 8 {
			if diffK>>(8*b)&0xff != 0 {
				h[8+b][byte(x.k>>(8*b))]++
			}
		}
	}
	s.keys2 = slices.Grow(s.keys2[:0], n)[:n]
	src, dst := keys, s.keys2
	for d := range 16 {
		if !diffOf(d, diffCost, diffK) {
			continue // every key has the same byte here
		}
		shift := 8 * (d % 8)
		var at [256]int32
		sum := int32(0)
		for v, c := range h[d] {
			at[v] = sum
			sum += c
		}
		if d < 8 {
			for _, x := range src {
				v := byte(x.cost >> shift)
				dst[at[v]] = x
				at[v]++
			}
		} else {
			for _, x := range src {
				v := byte(x.k >> shift)
				dst[at[v]] = x
				at[v]++
			}
		}
		src, dst = dst, src
	}
	// Keep both buffers for the next call, whichever holds the result.
	s.keys2 = dst[:0]
	return src
}

// diffOf reports whether byte d of the radix key (0-7: cost, 8-15: k,
// least significant first) differs between keys.
func diffOf(d int, diffCost, diffK uint64) bool {
	if d < 8 {
		return diffCost>>(8*d)&0xff != 0
	}
	return diffK>>(8*(d-8))&0xff != 0
}

// costKey maps a cost to an integer in the order cmp.Compare gives
// floats: NaN first, -0 equal to 0.
func costKey(c float64) uint64 {
	switch {
	case c != c:
		return 0
	case c == 0:
		c = 0
	}
	b := math.Float64bits(c)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

func less(a, b *cand) int {
	if a.r.Draining != b.r.Draining {
		if a.r.Draining {
			return -1
		}
		return 1
	}
	if a.other != b.other {
		if a.other {
			return -1
		}
		return 1
	}
	if c := b.share.Compare(a.share); c != 0 {
		return c
	}
	if c := cmp.Compare(a.prio, b.prio); c != 0 {
		return c
	}
	if c := cmp.Compare(a.cost, b.cost); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

func (s *Searcher) attempts() []attempt {
	all := func(*cand) bool { return true }
	if s.req.FairSharing {
		return []attempt{{true, all}}
	}
	other, hier := false, false
	for i := range s.cands {
		other = other || s.cands[i].other
		hier = hier || s.cands[i].hier
	}
	under := s.t.InUse(s.req.Queue, s.fl) < s.t.Nominal(s.req.Queue, s.fl)
	switch {
	case !other:
		return []attempt{{true, all}}
	case s.rules.BorrowWithinCohort.Policy == quota.BorrowLowerPriority:
		// Work above the threshold may go only if the preemptor then
		// stays within its quota: a second attempt that forbids borrowing.
		return []attempt{{true, func(c *cand) bool { return !c.other || c.hier || c.whileB }}, {false, all}}
	case under && !hier:
		return []attempt{{false, all}, {true, func(c *cand) bool { return !c.other || c.hier }}}
	case under:
		return []attempt{{true, func(c *cand) bool { return !c.other || c.hier }}, {false, all}}
	}
	return []attempt{{true, func(c *cand) bool { return !c.other || c.hier }}}
}

func (s *Searcher) quotaOK(allowBorrow bool) bool {
	v := s.t.Fits(s.req.Queue, s.fl, s.need)
	return v.Fits() && (allowBorrow || !v.Borrowing())
}

// quotaReachable reports whether evicting every candidate of the attempt
// could make quota fit, ignoring the per-pick rules: a cheap way to skip
// hopeless attempts.
func (s *Searcher) quotaReachable(allowBorrow bool) bool {
	if err := s.removeAll(s.list); err != nil {
		panic("preempt: usage checked at setup: " + err.Error())
	}
	ok := s.quotaOK(allowBorrow)
	s.addAll()
	return ok
}

// removeAll removes the usage of the given candidates, summed per queue so
// that it costs O(candidates + queues x depth). On error nothing changes.
func (s *Searcher) removeAll(list []int32) error {
	n := s.t.NumNodes()
	s.perQ = slices.Grow(s.perQ[:0], n)[:n]
	clear(s.perQ)
	for _, i := range list {
		s.perQ[s.cands[i].r.Queue] += int64(s.cands[i].gpus)
	}
	for q, g := range s.perQ {
		if g == 0 {
			continue
		}
		if err := s.t.RemoveUsage(quota.NodeID(q), s.fl, g); err != nil {
			for k := range q {
				if s.perQ[k] > 0 {
					_ = s.t.AddUsage(quota.NodeID(k), s.fl, s.perQ[k])
				}
			}
			return err
		}
	}
	return nil
}

// addAll reverses removeAll (perQ still holds its sums).
func (s *Searcher) addAll() {
	for q, g := range s.perQ {
		if g > 0 {
			if err := s.t.AddUsage(quota.NodeID(q), s.fl, g); err != nil {
				panic("preempt: undoing a removal: " + err.Error())
			}
		}
	}
}

// valid applies the rules that change as victims are picked.
func (s *Searcher) valid(c *cand) bool {
	if !c.other {
		return true
	}
	if !s.borrowing(c) {
		return false
	}
	if s.req.FairSharing && !s.within {
		// S2-a: the preemptor's share after admission must stay at or
		// below the target's share after the eviction. The request is
		// added at the preemptor's queue, so that what reaches its side
		// of the tree passes the lending limits in between.
		if s.t.AddUsage(s.req.Queue, s.fl, s.need) != nil {
			return false // beyond MaxAmount: it cannot fit anyway
		}
		ps := s.t.DominantShare(c.pSide)
		if err := s.t.RemoveUsage(s.req.Queue, s.fl, s.need); err != nil {
			panic("preempt: undoing the request: " + err.Error())
		}
		s.mustRemove(c)
		ts := s.t.DominantShare(c.cSide)
		s.mustAdd(c)
		return ps.Compare(ts) <= 0
	}
	return true
}

func (s *Searcher) mustRemove(c *cand) {
	if err := s.t.RemoveUsage(c.r.Queue, s.fl, int64(c.gpus)); err != nil {
		panic("preempt: usage checked at setup: " + err.Error())
	}
}

func (s *Searcher) mustAdd(c *cand) {
	if err := s.t.AddUsage(c.r.Queue, s.fl, int64(c.gpus)); err != nil {
		panic("preempt: usage checked at setup: " + err.Error())
	}
}

// free counts x more GPUs of node n as freed and updates the pods that
// would fit in its domain. Only healthy nodes of eligible groups matter.
func (s *Searcher) free(n topology.NodeID, x int) {
	if x == 0 || s.f.Health(n) != topology.Healthy {
		return
	}
	gi := s.gslot[s.f.NodeGroup(n)]
	if gi < 0 {
		return
	}
	if !s.marked[n] {
		// Marked rather than tested on freed: fill-back frees a node down
		// to 0 and back many times.
		s.marked[n] = true
		s.touched = append(s.touched, n)
	}
	old := s.f.Free(n) + int(s.freed[n])
	s.freed[n] += int32(x)
	nw := old + x
	if diff := nw/s.k - old/s.k; diff != 0 {
		i := int(s.f.DomainOf(n, s.lvl)-s.dlo)*s.ngs + int(gi)
		before := int(s.slots[i]) >= s.pods
		s.slots[i] += int32(diff)
		after := int(s.slots[i]) >= s.pods
		if before != after {
			if after {
				s.fitCount++
			} else {
				s.fitCount--
			}
		}
	}
}

func (s *Searcher) fitsIn(d int) bool {
	for gi := range s.ngs {
		if int(s.slots[d*s.ngs+gi]) >= s.pods {
			return true
		}
	}
	return false
}

// take evicts candidate i in the simulation and appends it to taken.
func (s *Searcher) take(i int32) {
	s.apply(i)
	s.taken = append(s.taken, i)
}

// apply removes candidate i's usage and frees its GPUs: counted in the
// estimate on the fast path, released on the fleet on the placing path.
func (s *Searcher) apply(i int32) {
	c := &s.cands[i]
	s.mustRemove(c)
	c.taken = true
	if s.fast {
		for _, x := range c.r.Nodes {
			s.free(x.Node, x.GPUs)
		}
		return
	}
	s.release(c.r.Nodes, false)
}

// unapply reverses apply.
func (s *Searcher) unapply(i int32) {
	c := &s.cands[i]
	s.mustAdd(c)
	c.taken = false
	if s.fast {
		for _, x := range c.r.Nodes {
			s.free(x.Node, -x.GPUs)
		}
		return
	}
	s.reacquire(c.r.Nodes)
}

// untakeAll reverses every take, newest first.
func (s *Searcher) untakeAll() {
	for _, i := range slices.Backward(s.taken) {
		s.unapply(i)
	}
	s.taken = s.taken[:0]
}

// fillBack walks the picked victims newest first and keeps out each one
// without which the request still fits, so the set is 1-minimal.
func (s *Searcher) fillBack(allowBorrow bool) {
	for j := len(s.taken) - 1; j >= 0; j-- {
		i := s.taken[j]
		if s.fast {
			// Topology first: it is O(nodes) and usually says "needed"
			// without touching the tree.
			c := &s.cands[i]
			s.freeAll(c, -1)
			if s.fitCount == 0 {
				s.freeAll(c, 1)
				continue
			}
			s.mustAdd(c)
			if s.quotaOK(allowBorrow) {
				c.taken = false
				s.taken = slices.Delete(s.taken, j, j+1)
				continue
			}
			s.mustRemove(c)
			s.freeAll(c, 1)
			continue
		}
		s.unapply(i)
		if s.fits(allowBorrow) {
			s.taken = slices.Delete(s.taken, j, j+1)
		} else {
			s.apply(i)
		}
	}
}

func (s *Searcher) freeAll(c *cand, sign int) {
	for _, x := range c.r.Nodes {
		s.free(x.Node, sign*x.GPUs)
	}
}

// release frees GPUs on the fleet itself (placing path and final
// validation), healthy nodes only, recording the undo.
func (s *Searcher) release(nodes []placement.NodeGPUs, record bool) {
	for _, x := range nodes {
		if s.f.Health(x.Node) != topology.Healthy {
			continue
		}
		if err := s.f.Release(x.Node, x.GPUs); err != nil {
			panic("preempt: GPUs checked at setup: " + err.Error())
		}
		if record {
			s.undo = append(s.undo, x)
		}
	}
}

// reacquire allocates back GPUs released by release.
func (s *Searcher) reacquire(nodes []placement.NodeGPUs) {
	for _, x := range slices.Backward(nodes) {
		if s.f.Health(x.Node) != topology.Healthy {
			continue
		}
		if err := s.f.Allocate(x.Node, x.GPUs); err != nil {
			panic("preempt: undoing a release: " + err.Error())
		}
	}
}

// placeOK asks the placer on the fleet as it now stands.
func (s *Searcher) placeOK() bool {
	_, err := s.placer.Place(s.f, s.req.W)
	return err == nil
}

func (s *Searcher) fits(allowBorrow bool) bool {
	if !s.quotaOK(allowBorrow) {
		return false
	}
	if s.fast {
		return s.fitCount > 0
	}
	return s.placeOK()
}

// fitsAlready returns a plan without victims when the request fits once
// the gone workloads are gone.
func (s *Searcher) fitsAlready() (Plan, bool) {
	if !s.quotaOK(true) || s.fast && s.fitCount == 0 {
		return Plan{}, false
	}
	s.releaseFreed()
	a, err := s.placer.Place(s.f, s.req.W)
	s.reacquireAll()
	if err != nil {
		return Plan{}, false
	}
	return Plan{Beneficiary: s.req.W.ID, Target: a.Clone(), ReadyBy: s.req.Now,
		Borrowing: s.t.Fits(s.req.Queue, s.fl, s.need).Borrowing()}, true
}

// releaseFreed releases on the fleet every GPU counted in freed.
func (s *Searcher) releaseFreed() {
	slices.Sort(s.touched)
	s.touched = slices.Compact(s.touched)
	for _, n := range s.touched {
		if g := int(s.freed[n]); g > 0 {
			s.release([]placement.NodeGPUs{{Node: n, GPUs: g}}, true)
		}
	}
}

// reacquireAll undoes every release on the fleet, newest first.
func (s *Searcher) reacquireAll() {
	for _, x := range slices.Backward(s.undo) {
		if err := s.f.Allocate(x.Node, x.GPUs); err != nil {
			panic("preempt: undoing a release: " + err.Error())
		}
	}
	s.undo = s.undo[:0]
}

// restore puts the fleet, the tree and the scratch state back as they
// were.
func (s *Searcher) restore() {
	if !s.fast {
		for _, i := range slices.Backward(s.taken) {
			s.reacquire(s.cands[i].r.Nodes)
		}
	}
	for _, i := range slices.Backward(s.taken) {
		s.cands[i].taken = false
		s.mustAdd(&s.cands[i])
	}
	s.taken = s.taken[:0]
	s.reacquireAll()
	for _, i := range slices.Backward(s.gone) {
		r := &s.running[i]
		if err := s.t.AddUsage(r.Queue, r.Flavor, int64(gpusOf(r.Nodes))); err != nil {
			panic("preempt: undoing a removal: " + err.Error())
		}
	}
	s.gone = s.gone[:0]
	for _, n := range s.touched {
		s.freed[n] = 0
		s.marked[n] = false
	}
	s.touched = s.touched[:0]
	s.cands = s.cands[:0]
	s.running = nil
}
