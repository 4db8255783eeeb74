package placement

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Scorer breaks ties between nodes that placement finds equally good (same
// free GPUs), for example to prefer nodes where a model's weights are
// already pulled so an inference replica starts fast. Higher is better.
//
// Placement asks about at most Options.MaxScored equal candidates per
// choice, so a Scorer can never make it scan the fleet. Score must be
// deterministic, must not modify f, and should be cheap (a map look-up).
type Scorer interface {
	Score(f *topology.Fleet, w *gang.Workload, n topology.NodeID) int
}

// Options tune a Placer. The zero value is the default policy.
type Options struct {
	// Scorer breaks ties between equally good nodes; nil means node ID order.
	Scorer Scorer
	// MaxScored bounds the equal candidates shown to Scorer per choice
	// (default 8).
	MaxScored int
	// Explain fills NoFit.Tried with the largest block per level. It scans
	// each level's domains, so a scheduler sets it only when a person asks.
	Explain bool
	// Terse makes a Place that finds no room return ErrNoFit itself
	// rather than a *NoFit: for a caller that only asks whether work fits
	// (a scheduler records why with another Placer). A request this fleet
	// can never meet still returns a *NoFit.
	Terse bool
	// Ranker, when set, decides among every feasible option of a one-pod
	// workload (see Ranker); Fragmentation is the built-in one.
	Ranker Ranker
	// MaxRanked bounds the options shown to Ranker per capacity class
	// and group (default 4).
	MaxRanked int
	// Uplinks, when set, says how many other gangs already cross each
	// leaf's uplinks, so that a gang placed above the leaf level takes,
	// among leaves equally good by the fewest-domains rule, those crossed
	// by the fewest gangs (see Crossings). nil: ties go to the lowest ID.
	Uplinks Uplinks
	// Warm, when set, says where model weights are present: a workload
	// naming its gang.Workload.Model, with interchangeable pods
	// (WarmEligible), goes to such nodes when they hold all its pods (see
	// Warm). nil: no preference.
	Warm Warm
	// MaxWarm bounds the warm nodes read per placement (default 256).
	MaxWarm int
}

// Uplinks reports how loaded the uplinks of the leaf-level domains are.
type Uplinks interface {
	// Crossing is the number of gangs spanning more than one leaf that
	// have a pod under leaf, a domain of the level just above the nodes.
	// It must be deterministic, must not change during a Place call and
	// should be cheap (a slice look-up); Crossings implements it.
	Crossing(leaf topology.DomainID) int
}

// Placer finds assignments. It keeps scratch buffers between calls so that
// steady-state placement does not allocate; it is not safe for concurrent
// use. The zero Placer is ready with default Options.
type Placer struct {
	opt Options

	f    *topology.Fleet
	w    *gang.Workload
	g    topology.GroupID
	k    int // GPUs per pod of the pod set being placed
	ps   int // index of that pod set
	idx  int // next pod index within it
	deep topology.Level

	maxPerNode, maxPerDom int
	spreadLevel           topology.Level // 0 when there is no per-domain spread
	segLevel              topology.Level
	mutating              bool // earlier pod sets are allocated on f

	pods    []Pod
	caps    []int
	spent   []int // placeSegments: segment domains filled, by index from the first
	cands   []candidate
	doms    []topology.DomainID // candidate domains, when trials mutate
	byPods  []domPods           // candidate domains with the pods they hold
	nodes   []candidate         // candidate nodes, when trials mutate
	groups  []topology.GroupID
	order   []int
	orderAt []int // the order a trial of other orders started from
	used    map[topology.NodeID]int
	usedDom map[topology.DomainID]int

	mark   int  // first pod of the current trial in pods
	shared bool // some pod set needs GPU-by-GPU or resource accounting
	share  int  // thousandths per pod of the current pod set
	mig    string
	res    []topology.ResourceAmount // resources per pod set, at resAt[ps]:resAt[ps+1]
	resAt  []int
	cur    []topology.ResourceAmount // the current pod set's
	podRes []gang.Resource           // the current pod set's, as its pods name them
	claim  []topology.ResourceAmount // scratch for trial claims
	best   []Pod                     // the best assignment across groups
	opts   []Option                  // one-pod candidates
	tiers  []int32                   // by group: its tier for this call, -1 when not a candidate
	granks []int32                   // by group: its model's rank among those accepted

	// out lists the node ranges PlaceAvoiding and PlaceWithin keep out of
	// bounds, sorted and disjoint (none for Place).
	out []nodeRange

	// Rank groups of every pod set at ranks[rankAt[ps]:rankAt[ps+1]]; the
	// current pod set's in force at active, smallest first. relax is how
	// many of each pod set's largest preferred groups the current trial
	// gives up, at most maxRelax (the most preferred groups of a pod set).
	ranks           []rankLevel
	rankAt          []int
	active          []rankLevel
	relax, maxRelax int
	grouped         bool // some pod set has rank groups or segments

	// crossing is set while a trial spans leaves with Options.Uplinks set:
	// ties among the leaves go to those crossed by fewer gangs.
	crossing bool

	// visitLimit, when positive, replaces the bound on the index entries
	// a one-pod walk reads per capacity class (tests set it).
	visitLimit int

	// touched[n] == trial when the current trial has emitted a pod on node
	// n, so that loadNode looks for the trial's pods only on such nodes.
	touched []uint32
	trialID uint32

	// node is emitOn's view of the node it places on (see loadNode),
	// kept here so that no call clears it anew.
	node nodeState

	// keepBlocks' scratch: the levels above the placement, the free
	// nodes each one's largest block loses (by the kept placement and by
	// a candidate), candidate domains and the nodes a trial takes.
	fit            topology.DomainID // tryLevel's best fit, before keepBlocks
	blocks         []blockLevel
	scores         []float64 // placeOne's: the Ranker's score per option
	bestLoss, loss []int
	keep           []topology.DomainID
	seen           []topology.NodeID
}

type candidate struct {
	n         topology.NodeID
	free, cap int
}

// NewPlacer returns a Placer with the given options.
func NewPlacer(opt Options) *Placer {
	return &Placer{opt: opt}
}

// Place finds an assignment for every pod of w on f, or returns a *NoFit.
// It does not change f. It is a convenience over Placer.Place that
// allocates a fresh Placer; schedulers keep one Placer instead.
func Place(f *topology.Fleet, w *gang.Workload, opt Options) (Assignment, error) {
	a, err := NewPlacer(opt).Place(f, w)
	return a, err
}

// nodeRange is the nodes [lo, hi) of a domain.
type nodeRange struct{ lo, hi topology.NodeID }

// PlaceAvoiding is Place with the nodes of the avoided domains treated as
// full: a scheduler that holds domains (for a blocked gang, for a booking)
// places other work around them, without changing the fleet. The policy
// is Place's, over the rest of the fleet.
func (p *Placer) PlaceAvoiding(f *topology.Fleet, w *gang.Workload, avoid ...topology.DomainID) (Assignment, error) {
	if f == nil || w == nil {
		return p.Place(f, w)
	}
	if nf := badDomain(f, w, nil, avoid); nf != nil {
		return Assignment{}, nf
	}
	p.bound(f, nil, avoid)
	defer func() { p.out = p.out[:0] }()
	return p.Place(f, w)
}

// PlaceWithin is Place inside domain d only (say, a booked block),
// minus the avoided domains: every other node is treated as full.
func (p *Placer) PlaceWithin(f *topology.Fleet, w *gang.Workload, d topology.DomainID, avoid ...topology.DomainID) (Assignment, error) {
	if f == nil || w == nil {
		return p.Place(f, w)
	}
	if nf := badDomain(f, w, &d, avoid); nf != nil {
		return Assignment{}, nf
	}
	p.bound(f, &d, avoid)
	defer func() { p.out = p.out[:0] }()
	return p.Place(f, w)
}

// badDomain refuses, as an invalid NoFit, a domain ID that is not one of
// f's.
func badDomain(f *topology.Fleet, w *gang.Workload, within *topology.DomainID, avoid []topology.DomainID) *NoFit {
	check := func(d topology.DomainID) *NoFit {
		if d >= 0 && int(d) < f.NumDomains() {
			return nil
		}
		nf := &NoFit{Cause: CauseInvalid, Detail: fmt.Sprintf("domain ID %d out of range", d)}
		if w != nil {
			nf.Workload, nf.Required, nf.Preferred = w.ID, w.Topology.Required, w.Topology.Preferred
			nf.Pods, nf.NeedGPUs = w.Pods(), w.GPUs()
		}
		return nf
	}
	if within != nil {
		if nf := check(*within); nf != nil {
			return nf
		}
	}
	for _, d := range avoid {
		if nf := check(d); nf != nil {
			return nf
		}
	}
	return nil
}

// bound sets out: the avoided domains' nodes, and everything outside
// within when it is set.
func (p *Placer) bound(f *topology.Fleet, within *topology.DomainID, avoid []topology.DomainID) {
	p.out = p.out[:0]
	for _, d := range avoid {
		lo, hi := f.Nodes(d)
		p.out = append(p.out, nodeRange{lo, hi})
	}
	if within != nil {
		lo, hi := f.Nodes(*within)
		p.out = append(p.out, nodeRange{0, lo}, nodeRange{hi, topology.NodeID(f.NumNodes())})
	}
	slices.SortFunc(p.out, func(a, b nodeRange) int { return cmp.Compare(a.lo, b.lo) })
	// Merge overlaps (domains nest, so one contains the other) and drop
	// empty ranges.
	merged := p.out[:0]
	for _, r := range p.out {
		switch {
		case r.hi <= r.lo:
		case len(merged) > 0 && r.lo <= merged[len(merged)-1].hi:
			merged[len(merged)-1].hi = max(merged[len(merged)-1].hi, r.hi)
		default:
			merged = append(merged, r)
		}
	}
	p.out = merged
}

// avoided reports whether node n is out of bounds for this call.
func (p *Placer) avoided(n topology.NodeID) bool {
	for _, r := range p.out {
		if n < r.lo {
			return false
		}
		if n < r.hi {
			return true
		}
	}
	return false
}

// Place finds an assignment for every pod of w on f, or returns a *NoFit.
// f is left exactly as it was. The returned Pods slice belongs to the
// Placer and is valid until its next call: Clone the assignment to keep it.
//
// For a workload of one pod set, Place is complete: when some placement
// meets the request (accepted models and pools, healthy nodes in bounds,
// required level, spread, every pod's GPUs, share or MIG slice and
// resources), it returns one. The bounds on what a search reads
// (MaxRanked, MaxScored, the walk of a capacity class) only order it.
// A malformed request (no workload, counts out of range, a resource
// amount that is not positive, two GPU forms in one pod set, negative
// spread limits) is refused with a NoFit of CauseInvalid whose Err says
// which (ErrBadRequest, ErrBadAmount, ErrBadShare, ...), never a panic.
//
// The policy, in order of precedence:
//
//  1. Flavor and pools filter nodes, and a gang stays inside one (flavor,
//     pool) group; groups are tried in the workload's pool preference
//     order (fleet order when it has none). Only healthy nodes are used.
//  2. Lowest span first: levels are tried from the preferred level (the
//     node level when none is set) up to the required level (the whole
//     fleet when none is set); the first level where one domain holds the
//     whole gang wins.
//  3. Best fit among the domains of that level: of those that hold the
//     gang, the one with the fewest free whole nodes (whole-node gangs),
//     or else the fewest pods of the gang's largest size that its free
//     GPUs still hold, then the fewest free GPUs; lowest ID on ties. Big
//     holes stay for big gangs, and leftovers smaller than a pod count
//     as waste, not as room (pods of 1 GPU: pods are free GPUs).
//     Large blocks stay whole: when the best fit lies under the one
//     domain of a level above that alone holds the level's largest free
//     block (the most healthy, fully free nodes, Fleet.LargestFreeBlock)
//     and the gang would take some of its free nodes, the gang goes to
//     another domain of the level whose placement leaves the largest
//     free block of every level above, the fleet included, at least as
//     large and one larger, if there is one: the first, in best-fit
//     order, that shrinks none of them, or else the last found that
//     improves on the one before. Best fit is the floor. The same holds
//     for a gang on one node, ahead of Scorer. The search runs only when
//     the best fit shrinks a block, and makes at most 8 trials for gangs
//     that are not whole-node (reads at most 64 nodes for one node).
//     Across GPU models, the tightness compared is the best fit's.
//  4. Inside the domain, as few child domains as possible: if one child
//     holds what remains, the best-fitting such child takes it; otherwise
//     the child that holds the most takes all it can, and so on down.
//     A 24-node gang takes 3 whole leaves, not 5 partial ones.
//  5. On a leaf's nodes, best fit by free GPUs: sub-node pods fill partly
//     used nodes first so whole nodes stay whole for training; whole-node
//     pods take free nodes in ID order. Scorer breaks ties. (On one node
//     the pods that fit grow with its free GPUs, so this is also the
//     fewest pods that fit.)
//  6. Segments are placed as units of Size pods, each unit inside one
//     domain of the segment level, by the same fewest-domains rule at
//     every level down to the segment level.
//  7. Pod sets are placed largest pods first, together: the gang fits in
//     one domain as a whole or not at all.
//  8. Pods are numbered in rank order: the pods of a pod set inside any
//     one domain hold consecutive indices (see Assignment.RankOrder).
//     Rank groups are placed as nested units like segments, each run of
//     Size ranks inside one domain of its level. A required group must
//     hold; preferred groups are honoured when the domain chosen by rules
//     2-3 allows it, or another domain of the same level does: at each
//     level, placement gives up the largest preferred groups one by one
//     before the next level up. The span outranks a preferred group.
//  9. With Options.Uplinks, a gang placed above the leaf level breaks
//     ties between equally good leaves toward those crossed by the fewest
//     other gangs, so concurrent cross-leaf gangs share few uplinks.
//  10. With Options.Warm, a workload naming its model, with
//     interchangeable pods, goes to nodes holding the model's weights
//     whenever they have room for all its pods, ahead of every rule above
//     but the groups' tiers (see WarmEligible).
func (p *Placer) Place(f *topology.Fleet, w *gang.Workload) (Assignment, error) {
	if p.opt.MaxScored <= 0 {
		p.opt.MaxScored = 8
	}
	if p.opt.MaxRanked <= 0 {
		p.opt.MaxRanked = 4
	}
	if p.opt.MaxWarm <= 0 {
		p.opt.MaxWarm = 256
	}
	if f == nil || w == nil {
		nf := &NoFit{Cause: CauseInvalid, Detail: "no fleet or no workload", Err: ErrBadRequest}
		if w != nil {
			nf.Workload = w.ID
		}
		return Assignment{}, nf
	}
	p.f, p.w, p.pods, p.deep = f, w, p.pods[:0], topology.Level(f.Depth())
	if len(p.touched) != f.NumNodes() {
		p.touched, p.trialID = make([]uint32, f.NumNodes()), 0
	}
	defer func() { p.f, p.w = nil, nil }()
	req, pref, nf := p.resolve()
	if nf != nil {
		return Assignment{}, nf
	}
	p.candidateGroups()
	if a, ok := p.placeWarm(); ok {
		return a, nil
	}
	if p.oneShared() {
		if a, ok := p.placeOne(); ok {
			return a, nil
		}
		return Assignment{}, p.failed(req, pref)
	}
	need := w.GPUs()
	var best Assignment
	bestTight, bestRank, bestRelax, found := 0, 0, 0, false
	for _, g := range p.groups {
		p.g = g
		if f.FreeGPUs(topology.Root, g) < need {
			continue
		}
		rank, _ := w.Accepts(f.GroupFlavor(g))
		if found && p.tier(g) != p.tier(best.Group) {
			break // a group of a more preferred pool or model has room
		}
		for l := pref; l >= req; l-- {
			if found && l < best.Level {
				break // a lower span is already found in another group
			}
			d, ok := p.tryLevel(l)
			if !ok {
				continue
			}
			a := Assignment{Workload: w.ID, Group: g, Domain: d, Level: l, Pods: p.pods}
			a.Span = p.span()
			if len(p.groups) == 1 {
				return a, nil
			}
			// Across GPU models: the lowest span, then the fewest preferred
			// rank groups given up, then the tightest fit counted in pods of
			// the gang's largest size that still fit in the best-fitting
			// domain (the one the group would take but for the largest
			// blocks), then the model's rank, then group order.
			relax := p.relax
			tight := p.tightness(p.fit)
			better := !found || l > best.Level
			switch {
			case better:
			case relax != bestRelax:
				better = relax < bestRelax
			case tight != bestTight:
				better = tight < bestTight
			default:
				better = rank < bestRank
			}
			if better {
				p.best = append(p.best[:0], p.pods...)
				best, bestTight, bestRank, bestRelax, found = a, tight, rank, relax, true
				best.Pods = p.best
			}
			p.pods = p.pods[:0]
			break
		}
	}
	if found {
		return best, nil
	}
	return Assignment{}, p.failed(req, pref)
}

// failed is Place's error when it finds no room: ErrNoFit when Terse, a
// *NoFit saying why otherwise.
func (p *Placer) failed(req, pref topology.Level) error {
	if p.opt.Terse {
		return ErrNoFit
	}
	return p.noFit(req, pref)
}

// tier is group g's preference tier: its pool's rank among the
// workload's pools and, with FlavorsInOrder, its model's rank. Placement
// takes the best fit among the groups of the first tier with room.
func (p *Placer) tier(g topology.GroupID) int {
	t := 0
	if len(p.w.Pools) > 0 {
		t = slices.Index(p.w.Pools, p.f.GroupPool(g))
	}
	if p.w.FlavorsInOrder {
		r, _ := p.w.Accepts(p.f.GroupFlavor(g))
		t = t*1024 + r
	}
	return t
}

// tightness counts the pods of the gang's largest pod set that domain d
// could still take: lower is a tighter fit.
func (p *Placer) tightness(d topology.DomainID) int {
	if p.used != nil {
		clear(p.used)
		clear(p.usedDom)
	}
	p.setPodSet(p.order[0])
	return p.capacity(d)
}

// resolve turns level names into levels and refuses requests this fleet
// can never meet. Unset levels mean "node level" (preferred: lowest span
// first) and "whole fleet" (required).
func (p *Placer) resolve() (req, pref topology.Level, nf *NoFit) {
	w, f := p.w, p.f
	invalid := p.invalid
	level := func(name string, unset topology.Level) (topology.Level, bool) {
		if name == "" {
			return unset, true
		}
		return f.Level(name)
	}
	var ok bool
	if req, ok = level(w.Topology.Required, 0); !ok {
		return 0, 0, invalid("unknown required level " + w.Topology.Required)
	}
	if pref, ok = level(w.Topology.Preferred, p.deep); !ok {
		return 0, 0, invalid("unknown preferred level " + w.Topology.Preferred)
	}
	if pref < req {
		return 0, 0, invalid("preferred level is above the required level")
	}
	if p.segLevel, ok = level(w.Topology.Segment.Level, 0); !ok {
		return 0, 0, invalid("unknown segment level " + w.Topology.Segment.Level)
	}
	if w.Topology.Segment.Size > 0 && p.segLevel < req {
		return 0, 0, invalid("segment level is above the required level")
	}
	if w.Spread.MaxPerNode < 0 || w.Spread.MaxPerDomain < 0 || w.Topology.Segment.Size < 0 {
		return 0, 0, p.invalidAs(fmt.Sprintf("spread limits %d per node, %d per domain, segment size %d: none is negative",
			w.Spread.MaxPerNode, w.Spread.MaxPerDomain, w.Topology.Segment.Size), ErrBadRequest)
	}
	p.maxPerNode, p.maxPerDom = w.Spread.MaxPerNode, w.Spread.MaxPerDomain
	p.spreadLevel = 0
	if w.Spread.MaxPerDomain > 0 {
		if p.spreadLevel, ok = level(w.Spread.Level, 0); !ok || p.spreadLevel == 0 {
			return 0, 0, invalid("unknown spread level " + w.Spread.Level)
		}
		if p.spreadLevel == p.deep {
			// A limit per node-level domain is a limit per node: the
			// per-domain accounting only counts domains above the nodes.
			if p.maxPerNode == 0 || p.maxPerDom < p.maxPerNode {
				p.maxPerNode = p.maxPerDom
			}
			p.spreadLevel, p.maxPerDom = 0, 0
		}
	}
	if len(w.PodSets) == 0 {
		return 0, 0, p.invalidAs("no pods", ErrBadRequest)
	}
	p.order = p.order[:0]
	p.shared = w.Shared()
	p.res, p.resAt = p.res[:0], append(p.resAt[:0], 0)
	p.ranks, p.rankAt, p.relax, p.maxRelax = p.ranks[:0], append(p.rankAt[:0], 0), 0, 0
	p.active = p.active[:0]
	segmented := w.SegmentedPodSet()
	for i, ps := range w.PodSets {
		switch {
		case ps.Count <= 0 || ps.Count > gang.MaxGPUs || ps.GPUsPerPod < 0:
			return 0, 0, p.invalidAs(fmt.Sprintf("pod set %s: %d pods of %d GPUs: counts are 1 to %d, GPUs not negative",
				ps.Name, ps.Count, ps.GPUsPerPod, gang.MaxGPUs), ErrBadRequest)
		case ps.GPUShare < 0 || ps.GPUShare > topology.MilliGPU:
			return 0, 0, p.invalidAs("pod set "+ps.Name+": a GPU share is 1 to 1000 thousandths", ErrBadShare)
		case ps.NoGPU() && len(ps.Resources) == 0:
			return 0, 0, p.invalidAs("empty pod set "+ps.Name, ErrBadRequest)
		}
		if ps.GPUsPerPod > f.MaxGPUsPerNode() {
			return 0, 0, invalid(fmt.Sprintf("pod set %s: %d GPUs a pod, more than any node has (%d)",
				ps.Name, ps.GPUsPerPod, f.MaxGPUsPerNode()))
		}
		if nf := p.resolveSharing(ps); nf != nil {
			return 0, 0, nf
		}
		if len(ps.RankGroups) > 0 {
			if nf := p.resolveRanks(ps, segmented == i); nf != nil {
				return 0, 0, nf
			}
		}
		p.order = append(p.order, i)
		p.resAt = append(p.resAt, len(p.res))
		p.rankAt = append(p.rankAt, len(p.ranks))
	}
	p.grouped = len(p.ranks) > 0 || segmented >= 0
	if seg := w.Topology.Segment; seg.Size > 0 {
		// Placement fills whole segments only: a remainder or an unknown
		// pod set would leave pods unplaced or segments ignored.
		if i := w.SegmentedPodSet(); i < 0 || w.PodSets[i].Count%seg.Size != 0 {
			return 0, 0, invalid("segments must split one pod set into whole groups")
		}
	}
	slices.SortStableFunc(p.order, func(a, b int) int {
		return cmp.Compare(w.PodSets[b].MilliGPUsPerPod(), w.PodSets[a].MilliGPUsPerPod())
	})
	if p.maxPerNode > 0 || p.maxPerDom > 0 {
		if p.used == nil {
			p.used = map[topology.NodeID]int{}
			p.usedDom = map[topology.DomainID]int{}
		}
	}
	return req, pref, nil
}

// invalid refuses the workload as one this fleet can never place.
func (p *Placer) invalid(detail string) *NoFit {
	w := p.w
	return &NoFit{Workload: w.ID, Cause: CauseInvalid, Required: w.Topology.Required,
		Preferred: w.Topology.Preferred, Pods: w.Pods(), NeedGPUs: w.GPUs(), Detail: detail}
}

// invalidAs is invalid with the specific kind of error err.
func (p *Placer) invalidAs(detail string, err error) *NoFit {
	nf := p.invalid(detail)
	nf.Err = err
	return nf
}

func (p *Placer) candidateGroups() {
	f, w := p.f, p.w
	p.groups = p.groups[:0]
	add := func(pool string, anyPool bool) {
		for g := range topology.GroupID(f.NumGroups()) {
			if _, ok := w.Accepts(f.GroupFlavor(g)); ok && (anyPool || f.GroupPool(g) == pool) &&
				!slices.Contains(p.groups, g) {
				p.groups = append(p.groups, g)
			}
		}
	}
	if len(w.Pools) == 0 {
		add("", true)
	} else {
		for _, pool := range w.Pools {
			add(pool, false)
		}
	}
	if w.FlavorsInOrder && len(w.Flavors) > 1 {
		slices.SortStableFunc(p.groups, func(a, b topology.GroupID) int { return p.tier(a) - p.tier(b) })
	}
}

// wholeNodes reports whether the gang is one pod set of whole-node pods on
// a group whose nodes all have that many GPUs, so free whole nodes are
// exactly its capacity.
func (p *Placer) wholeNodes() bool {
	if len(p.w.PodSets) != 1 {
		return false
	}
	k := p.w.PodSets[0].GPUsPerPod
	s := p.f.Stats(topology.Root, p.g)
	return k > 0 && k == p.f.MaxGPUsPerNode() && s.GPUs == s.Nodes*k
}

// tryLevel finds the best-fitting domain of level l that holds the gang and
// leaves its pods in p.pods: with every rank group if it can, else giving
// up preferred ones, largest first; p.relax tells how many it gave up.
func (p *Placer) tryLevel(l topology.Level) (topology.DomainID, bool) {
	// One node is inside one domain of every level: it meets every rank
	// group or holds too few pods whatever it gives up.
	mark := len(p.pods)
	for p.relax = 0; ; p.relax++ {
		if d, ok := p.tryLevelGroups(l); ok {
			p.fit = d
			return p.keepBlocks(l, d, mark), true
		}
		if p.relax >= p.maxRelax || l == p.deep {
			p.relax = 0
			return 0, false
		}
	}
}

// tryLevelGroups is tryLevel with the rank groups that p.relax leaves.
func (p *Placer) tryLevelGroups(l topology.Level) (topology.DomainID, bool) {
	f := p.f
	need := p.w.GPUs()
	switch {
	case l == p.deep:
		// One node cannot hold more GPUs than the largest node, nor more
		// pods than a per-node spread allows: no node needs trying.
		if need > f.MaxGPUsPerNode() || p.maxPerNode > 0 && p.w.Pods() > p.maxPerNode {
			return 0, false
		}
		return p.tryNodes(need)
	case l == 0:
		return topology.Root, p.tryDomain(topology.Root)
	}
	var found topology.DomainID
	ok := false
	try := func(d topology.DomainID, _ int) bool {
		if p.tryDomain(d) {
			found, ok = d, true
			return false
		}
		return true
	}
	if p.trialsMutate() {
		// Trials of several pod sets allocate on the fleet, which must not
		// happen inside a walk of its indexes: list the candidates first.
		p.doms = p.doms[:0]
		try = func(d topology.DomainID, _ int) bool {
			p.doms = append(p.doms, d)
			return true
		}
	}
	switch k := p.w.PodSets[p.order[0]].GPUsPerPod; {
	case p.wholeNodes():
		f.AscendDomainsByFreeNodes(l, p.g, p.w.Pods(), try)
	case k > 1:
		return p.tryLevelByPods(l, need, k)
	default:
		f.AscendDomainsByFreeGPUs(l, p.g, need, try)
	}
	if p.trialsMutate() {
		for _, d := range p.doms {
			if p.tryDomain(d) {
				return d, true
			}
		}
	}
	return found, ok
}

// domPods is a candidate domain and how many pods of the gang's largest
// size its free GPUs hold.
type domPods struct {
	d    topology.DomainID
	pods int
}

// tryLevelByPods is the best fit of level l for a gang whose largest pods
// take k > 1 GPUs: among the domains that hold the gang, the one whose
// free GPUs hold the fewest pods of k GPUs, then the fewest free GPUs,
// then the lowest ID. Counting pods instead of GPUs keeps the domain
// whose leftovers are larger blocks (leftovers smaller than a pod are
// waste), as Kueue's topology-aware scheduling counts pods that fit.
//
// The walk goes by free GPUs, so it cannot stop at the first domain that
// holds the gang. A domain of F free GPUs holds at least (F - waste) / k
// pods, where waste = (k-1) x the most nodes a domain of l has (each node
// wastes at most k-1): once that bound reaches the best count found, no
// later domain does better and the walk stops.
func (p *Placer) tryLevelByPods(l topology.Level, need, k int) (topology.DomainID, bool) {
	f := p.f
	if p.trialsMutate() {
		// No trial inside the index walk (see tryLevelGroups): list every
		// candidate, order it by pods (the walk's order breaks ties by
		// free GPUs, then ID) and try them in that order.
		p.byPods = p.byPods[:0]
		f.AscendDomainsByFreeGPUs(l, p.g, need, func(d topology.DomainID, _ int) bool {
			p.byPods = append(p.byPods, domPods{d, f.PodsThatFit(d, p.g, k)})
			return true
		})
		slices.SortStableFunc(p.byPods, func(a, b domPods) int { return cmp.Compare(a.pods, b.pods) })
		for _, c := range p.byPods {
			if p.tryDomain(c.d) {
				return c.d, true
			}
		}
		return 0, false
	}
	waste := (k - 1) * f.MaxNodesIn(l)
	mark := len(p.pods)
	best, bestPods, found := topology.DomainID(0), 0, false
	f.AscendDomainsByFreeGPUs(l, p.g, need, func(d topology.DomainID, free int) bool {
		if found && free-waste >= k*bestPods {
			return false
		}
		pods := f.PodsThatFit(d, p.g, k)
		if found && pods >= bestPods {
			return true // as many pods and no fewer free GPUs: not better
		}
		end := len(p.pods)
		if !p.tryDomain(d) {
			return true
		}
		// Keep only the best trial's pods.
		p.pods = append(p.pods[:mark], p.pods[end:]...)
		best, bestPods, found = d, pods, true
		return true
	})
	return best, found
}

// trialsMutate reports whether tryDomain allocates on the fleet for its
// trial (a gang of several pod sets).
func (p *Placer) trialsMutate() bool { return len(p.order) > 1 }

// nodeTrials is how many candidate nodes a gang of several pod sets
// lists per round before trying them: trials allocate on the fleet, so
// they cannot run inside the index walk, and a round that finds nothing
// resumes the walk where it stopped.
const nodeTrials = 64

// tryNodes places the whole gang on one node: the healthy node with the
// fewest free GPUs that holds it, Scorer breaking ties among up to
// MaxScored nodes with as many free GPUs. Every node is a candidate: a
// gang that needs no whole GPU (shares, MIG slices, CPU only) is also
// tried on the nodes with no free GPU, first, as the tightest.
func (p *Placer) tryNodes(need int) (topology.DomainID, bool) {
	f := p.f
	best, bestFree, bestScore, seen := topology.NodeID(-1), 0, 0, 0
	consider := func(n topology.NodeID, free int) bool {
		if best >= 0 && (free != bestFree || p.opt.Scorer == nil || seen >= p.opt.MaxScored) {
			return false
		}
		if !p.tryDomain(f.NodeDomain(n)) {
			return true
		}
		p.pods = p.pods[:0]
		seen++
		score := 0
		if p.opt.Scorer != nil {
			score = p.opt.Scorer.Score(f, p.w, n)
		}
		if best < 0 || score > bestScore {
			best, bestFree, bestScore = n, free, score
		}
		return true
	}
	more := true
	if need == 0 {
		// Nodes without a free GPU are in no free-GPU index.
		for n := range topology.NodeID(f.NumNodes()) {
			if f.Free(n) == 0 && f.NodeGroup(n) == p.g && f.Health(n) == topology.Healthy && !p.avoided(n) {
				if more = consider(n, 0); !more {
					break
				}
			}
		}
	}
	switch {
	case !more:
	case p.trialsMutate():
		// As in tryLevel: no trial allocates inside the index walk. List
		// the candidates a round at a time and resume after the last.
		from, fromFree := topology.NodeID(0), need
		for more {
			p.nodes = p.nodes[:0]
			f.AscendNodesByFreeFrom(p.g, fromFree, from, func(n topology.NodeID, free int) bool {
				p.nodes = append(p.nodes, candidate{n: n, free: free})
				return len(p.nodes) < nodeTrials
			})
			if len(p.nodes) == 0 {
				break
			}
			last := p.nodes[len(p.nodes)-1]
			from, fromFree = last.n+1, last.free
			for _, c := range p.nodes {
				if more = consider(c.n, c.free); !more {
					break
				}
			}
			if len(p.nodes) < nodeTrials {
				break
			}
		}
	default:
		f.AscendNodesByFree(p.g, need, consider)
	}
	if best < 0 {
		return 0, false
	}
	d := f.NodeDomain(best)
	return d, p.tryDomain(d)
}

// tryDomain places every pod set inside d, or nothing. Later pod sets see
// the earlier ones' GPUs as taken: they are allocated on f for the trial
// and released before returning, so f is unchanged either way.
//
// The pod sets go largest pods first. When that order fails for a gang
// whose pods also ask for shares, slices or resources, other orders are
// tried (every one for up to three pod sets, else the reverse): a
// CPU-heavy pod set placed first can leave a node's cores to the
// GPU-heavy one, or the other way round.
func (p *Placer) tryDomain(d topology.DomainID) bool {
	if p.tryDomainInOrder(d) {
		return true
	}
	if len(p.order) < 2 || !p.shared {
		return false
	}
	first := append(p.orderAt[:0], p.order...)
	defer func() { p.order = append(p.order[:0], first...) }()
	if len(p.order) > 3 {
		slices.Reverse(p.order)
		return p.tryDomainInOrder(d)
	}
	for nextPermutation(p.order); !slices.Equal(p.order, first); nextPermutation(p.order) {
		if p.tryDomainInOrder(d) {
			return true
		}
	}
	return false
}

// nextPermutation turns xs into the next permutation in lexicographic
// order, the first after the last.
func nextPermutation(xs []int) {
	i := len(xs) - 2
	for i >= 0 && xs[i] >= xs[i+1] {
		i--
	}
	if i >= 0 {
		j := len(xs) - 1
		for xs[j] <= xs[i] {
			j--
		}
		xs[i], xs[j] = xs[j], xs[i]
	}
	slices.Reverse(xs[i+1:])
}

// tryDomainInOrder is tryDomain with the pod sets in p.order.
func (p *Placer) tryDomainInOrder(d topology.DomainID) bool {
	mark := len(p.pods)
	p.startTrial()
	p.crossing = p.opt.Uplinks != nil && p.deep > 1 && p.f.DomainLevel(d) < p.deep-1
	if p.used != nil {
		clear(p.used)
		clear(p.usedDom)
	}
	ok := true
	for i, ps := range p.order {
		p.setPodSet(ps)
		if ok = p.placePodSet(d); !ok {
			break
		}
		if i < len(p.order)-1 {
			for _, pod := range p.pods[mark:] {
				if pod.PodSet == ps {
					p.trial(pod, true)
				}
			}
			p.mutating = true
		}
	}
	for i := mark; i < len(p.pods) && p.mutating; i++ {
		if pod := p.pods[i]; pod.PodSet != p.ps {
			p.trial(pod, false) // the last pod set tried is never on the fleet
		}
	}
	p.mutating = false
	if !ok {
		p.pods = p.pods[:mark]
	}
	return ok
}

// startTrial starts a trial whose pods are those emitted from now on.
func (p *Placer) startTrial() {
	p.mark = len(p.pods)
	if p.trialID++; p.trialID == 0 {
		clear(p.touched) // the counter wrapped: forget every old mark
		p.trialID = 1
	}
}

func (p *Placer) setPodSet(ps int) {
	set := &p.w.PodSets[ps]
	p.ps, p.k, p.idx = ps, set.GPUsPerPod, 0
	p.share, p.mig = set.GPUShare, set.MIG
	p.cur = p.res[p.resAt[ps]:p.resAt[ps+1]]
	p.podRes = set.Resources
	if p.grouped {
		p.setRanks(ps)
	}
}

func (p *Placer) placePodSet(d topology.DomainID) bool {
	count := p.w.PodSets[p.ps].Count
	if len(p.active) > 0 {
		return p.placeRanked(d, count)
	}
	seg := p.w.Topology.Segment
	if seg.Size > 0 && p.w.SegmentedPodSet() == p.ps && p.segLevel > p.f.DomainLevel(d) {
		return p.placeSegments(d, seg.Size, count/seg.Size)
	}
	if p.capacity(d) < count {
		return false
	}
	p.fill(d, count)
	return true
}

// placeSegments puts n units of size pods, each unit inside one domain of
// the segment level below d, by the fewest-domains rule. It serves
// segments under a per-domain spread level above theirs (otherwise a
// segment is a rank group: see setRanks): segment domains share their
// spread domain's limit, so every unit placed lowers what its siblings
// can take, and it counts again before each choice. Taking all a domain
// can hold never wastes a shared limit, so this finds room whenever
// there is some. A domain so filled takes no more (its nodes' free GPUs
// do not show this trial's pods).
func (p *Placer) placeSegments(d topology.DomainID, size, n int) bool {
	lo, hi := p.descendants(d, p.segLevel)
	base, spent := len(p.caps), len(p.spent)
	defer func() { p.caps, p.spent = p.caps[:base], p.spent[:spent] }()
	for n > 0 {
		p.caps = p.caps[:base]
		for e := lo; e < hi; e++ {
			p.caps = append(p.caps, p.capacity(e)/size)
		}
		for _, i := range p.spent[spent:] {
			p.caps[base+i] = 0
		}
		i, units := p.pick(base, n, lo)
		if i < 0 {
			return false
		}
		p.fill(lo+topology.DomainID(i), units*size)
		p.spent = append(p.spent, i)
		n -= units
	}
	return true
}

// descendants returns the contiguous range of d's descendants at level l.
func (p *Placer) descendants(d topology.DomainID, l topology.Level) (lo, hi topology.DomainID) {
	nlo, nhi := p.f.Nodes(d)
	return p.f.DomainOf(nlo, l), p.f.DomainOf(nhi-1, l) + 1
}

// distribute hands need units to the domains lo, lo+1, ... whose capacities
// sit at p.caps[base:]: the best-fitting domain that holds all that remains
// takes it; otherwise the one that holds the most (lowest ID on ties)
// takes all it can, and so on.
func (p *Placer) distribute(base int, lo topology.DomainID, need int, take func(topology.DomainID, int)) {
	for need > 0 {
		i, c := p.pick(base, need, lo)
		if i < 0 {
			panic("placement: capacity accounting broken")
		}
		p.caps[base+i] -= c
		take(lo+topology.DomainID(i), c)
		need -= c
	}
}

// pick chooses among the capacities at p.caps[base:] of the domains lo,
// lo+1, ... who takes next, and how much: the best-fitting one that holds
// all of need, else the one that holds the most, all it can; -1 when none
// holds anything. Ties go to the leaf crossed by fewer gangs (for a trial
// that spans leaves, with Options.Uplinks), then to the lowest index.
func (p *Placer) pick(base, need int, lo topology.DomainID) (i, take int) {
	caps := p.caps[base:]
	fit, most, fitCap, mostCap := -1, -1, 0, 0
	for i, c := range caps {
		if c >= need && (fit < 0 || c < fitCap) {
			fit, fitCap = i, c
		}
		if c > mostCap {
			most, mostCap = i, c
		}
	}
	if p.crossing && p.f.DomainLevel(lo) == p.deep-1 {
		fit, most = p.fewestCrossed(caps, lo, fit), p.fewestCrossed(caps, lo, most)
	}
	switch {
	case fit >= 0:
		return fit, need
	case most >= 0:
		return most, mostCap
	}
	return -1, 0
}

// fewestCrossed returns, of the leaves lo+j with capacity caps[j] equal to
// leaf lo+i's, the one crossed by the fewest gangs, lowest index on ties;
// i is the lowest index of that capacity, or -1 for none.
func (p *Placer) fewestCrossed(caps []int, lo topology.DomainID, i int) int {
	if i < 0 {
		return i
	}
	u, best := p.opt.Uplinks, i
	for j := i + 1; j < len(caps); j++ {
		if caps[j] == caps[i] && u.Crossing(lo+topology.DomainID(j)) < u.Crossing(lo+topology.DomainID(best)) {
			best = j
		}
	}
	return best
}

// fill places need pods of the current pod set inside d; the caller has
// checked that capacity(d) >= need.
func (p *Placer) fill(d topology.DomainID, need int) {
	f := p.f
	if f.DomainLevel(d) == p.deep {
		p.emit(topology.NodeID(d-f.NodeDomain(0)), need)
		return
	}
	lo, hi := f.Children(d)
	if f.DomainLevel(lo) == p.deep {
		p.fillNodes(d, need)
		return
	}
	base := len(p.caps)
	for c := lo; c < hi; c++ {
		p.caps = append(p.caps, p.capacity(c))
	}
	p.distribute(base, lo, need, p.fill)
	p.caps = p.caps[:base]
}

// fillNodes places need pods on d's nodes, fewest free GPUs first.
func (p *Placer) fillNodes(d topology.DomainID, need int) {
	f := p.f
	if p.freeNodesOnly() {
		p.fillFreeNodes(d, need)
		return
	}
	base := len(p.cands)
	lo, hi := f.Nodes(d)
	for n := lo; n < hi; n++ {
		if c := p.nodeCap(n); c > 0 {
			p.cands = append(p.cands, candidate{n: n, free: f.Free(n), cap: c})
		}
	}
	cands := p.cands[base:]
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.free != b.free {
			return a.free - b.free
		}
		return int(a.n - b.n)
	})
	for i := 0; i < len(cands) && need > 0; i++ {
		if p.opt.Scorer != nil {
			p.preferScored(cands[i:])
		}
		c := cands[i]
		t := min(c.cap, need)
		p.emit(c.n, t)
		need -= t
	}
	p.cands = p.cands[:base]
	if need > 0 {
		panic("placement: node capacity accounting broken")
	}
}

// freeNodesOnly reports whether the current pod set's pods take the most
// GPUs any node has, with no Scorer, per-node spread or shared accounting:
// then a node takes one pod exactly when all its GPUs are free, and
// fillNodes's candidates all tie on free GPUs, so it takes them in ID
// order, one pod each (fillFreeNodes).
func (p *Placer) freeNodesOnly() bool {
	return p.k > 0 && p.k == p.f.MaxGPUsPerNode() && !p.shared && p.maxPerNode == 0 && p.opt.Scorer == nil
}

// fillFreeNodes is fillNodes when freeNodesOnly holds, without listing
// and sorting candidates: one pod on each of the first need usable nodes
// of d with every GPU free. On a node of up to 64 GPUs that the trial has
// not touched, the pod takes the fleet's whole-free mask, which is what
// emitWhole gives a pod that takes every GPU left, without reading the
// trial's pods.
func (p *Placer) fillFreeNodes(d topology.DomainID, need int) {
	f := p.f
	lo, hi := f.Nodes(d)
	p.pods = slices.Grow(p.pods, need)
	for n := lo; n < hi && need > 0; n++ {
		if f.Free(n) != p.k || !p.usable(n) {
			continue
		}
		if p.k <= 64 && p.touched[n] != p.trialID {
			p.newPod(n).GPUMask = f.FreeMask(n)
		} else {
			p.emitWhole(n, 1)
		}
		p.emitted(n, 1)
		need--
	}
	if need > 0 {
		panic("placement: node capacity accounting broken")
	}
}

// preferScored moves the best-scored of the equally good candidates at the
// head of cands (same free GPUs, at most MaxScored) to the front; the
// caller has a Scorer.
func (p *Placer) preferScored(cands []candidate) {
	if len(cands) < 2 {
		return
	}
	best, bestScore := 0, p.opt.Scorer.Score(p.f, p.w, cands[0].n)
	for j := 1; j < len(cands) && j < p.opt.MaxScored && cands[j].free == cands[0].free; j++ {
		if s := p.opt.Scorer.Score(p.f, p.w, cands[j].n); s > bestScore {
			best, bestScore = j, s
		}
	}
	if best > 0 {
		c := cands[best]
		copy(cands[1:best+1], cands[:best])
		cands[0] = c
	}
}

func (p *Placer) emit(n topology.NodeID, count int) {
	p.emitOn(n, count, -1)
}

// emitOn places count pods of the current pod set on node n, choosing
// their GPUs (gpu >= 0 names the GPU of a one-pod share or slice).
func (p *Placer) emitOn(n topology.NodeID, count, gpu int) {
	// Each pod is written once, in place and field by field: a Pod built
	// aside (a composite literal) is copied in wide loads that wait on
	// its narrow stores, and the copy cost as much as all the rest.
	p.pods = slices.Grow(p.pods, count)
	if p.k > 0 {
		p.emitWhole(n, count)
	} else {
		st := &p.node
		p.loadNode(st, n)
		for range count {
			pod := p.newPod(n)
			if !st.take(pod, p, gpu) {
				panic("placement: GPU accounting broken on node " + p.f.NodeName(n))
			}
		}
	}
	p.emitted(n, count)
}

// emitted records count pods of the current pod set just placed on node
// n: the trial has touched n, and the spread limits count them.
func (p *Placer) emitted(n topology.NodeID, count int) {
	if count > 0 {
		p.touched[n] = p.trialID
	}
	if p.used != nil {
		p.used[n] += count
		if p.spreadLevel > 0 {
			p.usedDom[p.f.DomainOf(n, p.spreadLevel)] += count
		}
	}
}

// emitWhole is emitOn for pods of p.k whole GPUs each: each takes the
// lowest-numbered whole-free GPUs left. It reads the fleet's whole-free
// mask of the node, never its per-GPU state: whole-GPU work pays nothing
// for shares and slices.
func (p *Placer) emitWhole(n topology.NodeID, count int) {
	free, named := p.wholeFree(n)
	for range count {
		pod := p.newPod(n)
		if !named {
			continue // GPUs beyond 64 a node: counted, not named
		}
		switch c := bits.OnesCount64(free); {
		case c < p.k:
			panic("placement: GPU accounting broken on node " + p.f.NodeName(n))
		case c == p.k:
			pod.GPUMask, free = free, 0 // every one left: a whole node, often
		default:
			rest := free
			for range p.k {
				rest &= rest - 1 // drop the lowest whole-free GPU
			}
			pod.GPUMask, free = free&^rest, rest
		}
	}
}

// wholeFree is node n's whole-free GPUs as this placement sees them: the
// fleet's less those of this trial's pods there not yet on the fleet
// (as loadNode counts them). named is false on a node of more than 64
// GPUs, whose pods count whole GPUs without naming them.
func (p *Placer) wholeFree(n topology.NodeID) (free uint64, named bool) {
	f := p.f
	if f.Capacity(n) > 64 {
		return 0, false
	}
	free = f.FreeMask(n)
	if p.touched[n] != p.trialID {
		return free, true
	}
	for i := p.mark; i < len(p.pods); i++ {
		q := &p.pods[i]
		if q.Node != n || p.mutating && q.PodSet != p.ps {
			continue
		}
		free &^= q.GPUMask
		if q.MIG != "" || q.Share > 0 {
			free &^= 1 << q.GPU
		}
	}
	return free, true
}

// newPod appends the next pod of the current pod set, on node n with no
// GPU named yet, and returns it. The caller has grown p.pods for it.
func (p *Placer) newPod(n topology.NodeID) *Pod {
	p.pods = p.pods[:len(p.pods)+1]
	pod := &p.pods[len(p.pods)-1]
	pod.PodSet, pod.Index, pod.Node, pod.GPUs = p.ps, p.idx, n, p.k
	pod.GPUMask, pod.GPU, pod.Share, pod.MIG, pod.Slice = 0, 0, 0, "", 0
	pod.Resources = p.podRes
	p.idx++
	return pod
}

// capacity is how many pods of the current pod set d can still take,
// within the spread limits.
func (p *Placer) capacity(d topology.DomainID) int {
	f := p.f
	l := f.DomainLevel(d)
	if p.spreadLevel > 0 && l >= p.spreadLevel {
		// At and below the spread level, the enclosing domain's limit
		// binds.
		first, _ := f.Nodes(d)
		left := p.maxPerDom - p.usedDom[f.DomainOf(first, p.spreadLevel)]
		if l == p.deep {
			return max(0, min(p.nodeCap(first), left))
		}
		return max(0, min(p.capBelow(d), left))
	}
	if l == p.deep {
		return p.nodeCap(topology.NodeID(d - f.NodeDomain(0)))
	}
	if p.spreadLevel > 0 {
		lo, hi := p.descendants(d, p.spreadLevel)
		n := 0
		for e := lo; e < hi; e++ {
			n += p.capacity(e)
		}
		return n
	}
	return p.capBelow(d)
}

// capBelow counts pods of the current size that d's nodes can take: from
// the free-count histogram in O(GPUs per node), or by visiting the nodes
// when a per-node spread limit already has pods of this gang to count.
func (p *Placer) capBelow(d topology.DomainID) int {
	if lo, hi := p.f.Nodes(d); p.overlapsOut(lo, hi) {
		// d holds nodes out of bounds: count the others node by node,
		// skipping the ranges out of bounds.
		n := 0
		for x := lo; x < hi; {
			if r, ok := p.outAt(x); ok {
				x = r.hi
				continue
			}
			n += p.nodeCap(x)
			x++
		}
		return n
	}
	if p.shared || p.maxPerNode > 0 && len(p.used) > 0 {
		lo, hi := p.f.Nodes(d)
		n := 0
		for x := lo; x < hi; x++ {
			n += p.nodeCap(x)
		}
		return n
	}
	if p.k == 1 && (p.maxPerNode == 0 || p.maxPerNode >= p.f.MaxGPUsPerNode()) {
		// One pod per free GPU: the histogram's sum is the domain's
		// count of free GPUs on healthy nodes, kept as an aggregate.
		return p.f.FreeGPUs(d, p.g)
	}
	n := 0
	// Nodes with fewer than k free GPUs hold no pod: skip their buckets.
	h := p.f.Histogram(d, p.g)
	for free := p.k; free < len(h); free++ {
		c := h[free]
		per := free / p.k
		if p.maxPerNode > 0 {
			per = min(per, p.maxPerNode)
		}
		n += int(c) * per
	}
	return n
}

// overlapsOut reports whether nodes [lo, hi) meet a range out of bounds.
func (p *Placer) overlapsOut(lo, hi topology.NodeID) bool {
	for _, r := range p.out {
		if r.lo < hi && lo < r.hi {
			return true
		}
	}
	return false
}

// outAt returns the range out of bounds that holds node x.
func (p *Placer) outAt(x topology.NodeID) (nodeRange, bool) {
	for _, r := range p.out {
		if x >= r.lo && x < r.hi {
			return r, true
		}
	}
	return nodeRange{}, false
}

// usable reports whether node n may take pods of this call: healthy, in
// the current group and in bounds.
func (p *Placer) usable(n topology.NodeID) bool {
	f := p.f
	return f.Health(n) == topology.Healthy && f.NodeGroup(n) == p.g && !p.avoided(n)
}

func (p *Placer) nodeCap(n topology.NodeID) int {
	f := p.f
	if !p.usable(n) {
		return 0
	}
	var c int
	if p.shared {
		c = p.sharedCap(n)
	} else {
		c = f.Free(n) / p.k
	}
	if p.maxPerNode > 0 {
		c = min(c, p.maxPerNode-p.used[n])
	}
	return max(c, 0)
}

// span is the lowest level whose one domain holds every pod in p.pods.
// A domain's nodes are a contiguous range of IDs, so the domain that holds
// the lowest and the highest node holds every node between.
func (p *Placer) span() topology.Level {
	f := p.f
	lo, hi := p.pods[0].Node, p.pods[0].Node
	for i := 1; i < len(p.pods); i++ {
		n := p.pods[i].Node
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo == hi {
		return p.deep // one node, as a one-pod workload's always is
	}
	for l := p.deep - 1; l > 0; l-- {
		if f.DomainOf(lo, l) == f.DomainOf(hi, l) {
			return l
		}
	}
	return 0
}

// noFitLevels is a NoFit with room for the levels of most topologies.
type noFitLevels struct {
	nf    NoFit
	tried [6]LevelTry
}

// noFit explains a failure: the best group's free capacity, the cause and,
// with Options.Explain, the largest block per level tried.
func (p *Placer) noFit(req, pref topology.Level) *NoFit {
	f, w := p.f, p.w
	// One allocation holds the NoFit and the levels it tried: schedulers
	// ask again and again about work that does not fit.
	buf := &noFitLevels{nf: NoFit{Workload: w.ID, Required: w.Topology.Required, Preferred: w.Topology.Preferred,
		Pods: w.Pods(), NeedGPUs: w.GPUs()}}
	nf := &buf.nf
	if n := int(pref-req) + 1; n > 0 && n <= len(buf.tried) {
		nf.Tried = buf.tried[:0:n]
	}
	nf.NeedMilliGPUs, nf.MIGPods = w.MilliGPUs(), 0
	for i := range w.PodSets {
		if w.PodSets[i].MIG != "" {
			nf.MIGPods += w.PodSets[i].Count
		}
	}
	bestG, healthy, everyShort := topology.GroupID(-1), 0, true
	var best shortage
	for _, g := range p.groups {
		s := f.Stats(topology.Root, g)
		healthy += s.HealthyNodes
		sh := p.shortOf(g, s)
		everyShort = everyShort && sh.what != ""
		if bestG < 0 || s.FreeGPUs > nf.FreeGPUs {
			bestG, nf.FreeGPUs, nf.FreeNodes, best = g, s.FreeGPUs, s.FreeNodes, sh
			nf.FreeMilliGPUs = freeMilliOf(f, s, g)
		}
	}
	switch {
	case healthy == 0:
		nf.Cause = CauseNoNodes
		nf.Detail = "no healthy node of the workload's flavor and pools"
		return nf
	case everyShort:
		nf.Cause = CauseCapacity
		nf.Short, nf.ShortNeed, nf.ShortFree = best.what, best.need, best.free
	default:
		nf.Cause = CauseFragmented
	}
	for l := pref; l >= req; l-- {
		t := LevelTry{Level: f.LevelName(l)}
		if p.opt.Explain {
			p.g = bestG
			if p.used != nil {
				// The last failed trial's pods are not on the fleet.
				clear(p.used)
				clear(p.usedDom)
			}
			p.setPodSet(p.order[0])
			lo, hi := f.DomainsAt(l)
			for d := lo; d < hi; d++ {
				if c := p.capacity(d); c > t.Largest || t.Domain == "" {
					t.Largest, t.Domain = c, f.DomainName(d)
					if t.Domain == "" {
						t.Domain = "fleet"
					}
				}
			}
		}
		nf.Tried = append(nf.Tried, t)
	}
	return nf
}

// shortage is the first of what the workload asks that group g has too
// little of in total: what is "" when g has enough of everything.
type shortage struct {
	what       string
	need, free int64
}

// freeMilliOf is group g's free GPU capacity in thousandths on its
// healthy nodes, from the aggregates: healthy GPUs less what is held.
func freeMilliOf(f *topology.Fleet, s topology.Stats, g topology.GroupID) int64 {
	return max(0, int64(s.HealthyGPUs)*topology.MilliGPU-f.MilliAllocated(topology.Root, g))
}

// shortOf is the first dimension (whole GPUs, GPU thousandths, then the
// named resources in the order the pod sets list them) of which the
// workload needs more in total than group g has free.
func (p *Placer) shortOf(g topology.GroupID, s topology.Stats) shortage {
	f, w := p.f, p.w
	if need := int64(w.GPUs()); need > int64(s.FreeGPUs) {
		return shortage{"gpu", need, int64(s.FreeGPUs)}
	}
	if need, free := w.MilliGPUs(), freeMilliOf(f, s, g); need > free {
		return shortage{"gpu-milli", need, free}
	}
	for i := range w.PodSets {
		for _, r := range p.res[p.resAt[i]:p.resAt[i+1]] {
			need := int64(0)
			for j := range w.PodSets {
				for _, q := range p.res[p.resAt[j]:p.resAt[j+1]] {
					if q.Resource == r.Resource {
						need = satAdd(need, satMul(q.Amount, int64(w.PodSets[j].Count)))
					}
				}
			}
			if free := f.FreeResource(topology.Root, g, r.Resource); need > free {
				return shortage{f.ResourceName(r.Resource), need, free}
			}
		}
	}
	return shortage{}
}

// satMul and satAdd are products and sums of non-negative amounts that
// stop at the largest int64 rather than wrap.
func satMul(a, b int64) int64 {
	if a != 0 && b > (1<<63-1)/a {
		return 1<<63 - 1
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a > 1<<63-1-b {
		return 1<<63 - 1
	}
	return a + b
}
