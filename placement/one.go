package placement

import (
	"math/bits"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Option is one way to place a one-pod workload: a node, and the GPU the
// pod would take there for a share or a MIG slice.
type Option struct {
	Node  topology.NodeID  // the node
	Group topology.GroupID // the (flavor, pool) partition the node is in
	// GPU is the GPU a share or slice would take; -1 for whole-GPU and
	// CPU-only pods (whole GPUs are the node's lowest whole-free ones).
	GPU int
	// Rank is the option's GPU model's rank among the workload's accepted
	// models (0 first).
	Rank int
	// Fit is the best-fit key: how loose the fit is (lower is tighter),
	// counted in what is left for pods of the same shape.
	Fit int64
}

// Ranker ranks every feasible option of a one-pod workload that shares a
// GPU, takes a MIG slice, names resources or asks for no GPU, so that a
// policy (such as Fragmentation) decides where it goes, not only ties.
// Higher is better; ties go to the tighter fit, the preferred model, the
// lower node ID.
//
// Placement shows it at most Options.MaxRanked options per capacity class
// (nodes with as many free GPUs, GPUs with as much left) and group, so a
// Ranker never makes it scan the fleet; a pod that asks for no GPU is
// shown the 2 x MaxRanked nodes that hold it with the least GPU capacity
// left idle. These bounds order what it sees, never whether the pod
// fits: a group whose bounded walk finds nothing is walked again to its
// end, and its first option shown. Rank must be deterministic, must not
// modify f, and is called once per option.
type Ranker interface {
	Rank(f *topology.Fleet, w *gang.Workload, o Option) float64
}

func (p *Placer) oneShared() bool {
	return p.w.Pods() == 1 && (p.shared || p.opt.Ranker != nil)
}

// placeOne places a one-pod workload by gathering its options in every
// accepted group from the fleet's best-fit indexes and picking the best:
// the Ranker's choice, or the tightest fit.
func (p *Placer) placeOne() (Assignment, bool) {
	w, f := p.w, p.f
	p.setPodSet(p.order[0])
	p.opts = p.opts[:0]
	var lastTier int
	if p.k == 0 && p.share == 0 && p.mig == "" {
		p.gatherNoGPU()
	}
	for _, g := range p.groups {
		if p.k == 0 && p.share == 0 && p.mig == "" {
			break
		}
		rank, _ := w.Accepts(f.GroupFlavor(g))
		if t := p.tier(g); len(p.opts) > 0 && t != lastTier {
			break // a more preferred pool or model has room
		} else {
			lastTier = t
		}
		p.g = g
		p.gather(g, rank)
	}
	if len(p.opts) == 0 {
		return Assignment{}, false
	}
	best := 0
	if b, ok := p.opt.Ranker.(bander); ok && b.band() >= 0 {
		best = p.firstInBand(b.band())
	} else {
		var bestScore float64
		for i, o := range p.opts {
			if p.opt.Ranker != nil {
				s := p.opt.Ranker.Rank(f, w, o)
				if i == 0 || s > bestScore || s == bestScore && better(o, p.opts[best]) {
					best, bestScore = i, s
				}
				continue
			}
			if better(o, p.opts[best]) {
				best = i
			}
		}
	}
	o := p.opts[best]
	if p.opt.Ranker == nil && p.opt.Scorer != nil {
		o = p.scoreTies(o)
	}
	p.g, p.pods, p.mutating = o.Group, p.pods[:0], false
	p.startTrial()
	p.emitOn(o.Node, 1, o.GPU)
	d := f.NodeDomain(o.Node)
	return Assignment{Workload: w.ID, Group: o.Group, Domain: d, Level: p.deep, Span: p.deep, Pods: p.pods}, true
}

// bander is a Ranker whose scores within band of the best count as
// equal: Place takes, among those options, the first in model rank,
// node and fit order (Fragmentation is one), or for a pod without GPUs
// the tightest fit. A negative band leaves the usual order: the best
// score, ties to the tighter fit.
type bander interface {
	band() float64
}

// firstInBand is the index of the option a bander's Ranker picks: of
// the options scoring within band of the best, the first by firstOf
// (by better for a pod without GPUs).
func (p *Placer) firstInBand(band float64) int {
	p.scores = p.scores[:0]
	var top float64
	for i, o := range p.opts {
		s := p.opt.Ranker.Rank(p.f, p.w, o)
		p.scores = append(p.scores, s)
		if i == 0 || s > top {
			top = s
		}
	}
	// A pod without GPUs keeps the fit order: its fit is the GPU
	// capacity left idle beside it, waste the measure does not see.
	before := firstOf
	if p.k == 0 && p.share == 0 {
		before = better
	}
	best := -1
	for i, o := range p.opts {
		if p.scores[i] >= top-band && (best < 0 || before(o, p.opts[best])) {
			best = i
		}
	}
	return best
}

// firstOf orders options by model rank, then node, fit and GPU.
func firstOf(a, b Option) bool {
	switch {
	case a.Rank != b.Rank:
		return a.Rank < b.Rank
	case a.Node != b.Node:
		return a.Node < b.Node
	case a.Fit != b.Fit:
		return a.Fit < b.Fit
	}
	return a.GPU < b.GPU
}

// better orders options by fit, then model rank, then node and GPU.
func better(a, b Option) bool {
	switch {
	case a.Fit != b.Fit:
		return a.Fit < b.Fit
	case a.Rank != b.Rank:
		return a.Rank < b.Rank
	case a.Node != b.Node:
		return a.Node < b.Node
	}
	return a.GPU < b.GPU
}

// scoreTies lets the Scorer pick among at most MaxScored options as tight
// as o.
func (p *Placer) scoreTies(o Option) Option {
	best, bestScore, seen := o, p.opt.Scorer.Score(p.f, p.w, o.Node), 1
	for _, c := range p.opts {
		if seen >= p.opt.MaxScored {
			break
		}
		if c.Fit != o.Fit || c.Rank != o.Rank || c == o {
			continue
		}
		seen++
		if s := p.opt.Scorer.Score(p.f, p.w, c.Node); s > bestScore {
			best, bestScore = c, s
		}
	}
	return best
}

// gather adds group g's options. The indexes give them in best-fit order
// class by class, and the walk reads a bounded number of entries per
// class (visits) so that its cost does not grow with the fleet: the
// bound orders the search, it never decides that nothing fits. When the
// bounded walk finds no option in g, the same walk runs again without
// the bound and stops at the first option: the indexes hold every GPU
// and node with room for the pod's GPUs, so it reads only those that
// lack its other resources. Without a Ranker the first option in
// best-fit order is the tightest of the group, so the walk stops there.
func (p *Placer) gather(g topology.GroupID, rank int) {
	if !p.groupMayHold(g) {
		return
	}
	start := len(p.opts)
	p.gatherBounded(g, rank, false)
	if len(p.opts) == start {
		p.gatherBounded(g, rank, true)
	}
}

// groupMayHold reports whether group g has, over its healthy nodes, the
// free GPUs and resources of one pod of the current pod set.
func (p *Placer) groupMayHold(g topology.GroupID) bool {
	f := p.f
	if p.k > 0 && f.FreeGPUs(topology.Root, g) < p.k {
		return false
	}
	for _, r := range p.cur {
		if f.FreeResource(topology.Root, g, r.Resource) < r.Amount {
			return false
		}
	}
	return true
}

// visits is the walk's bound: over all the partly used GPUs (shared),
// 16 entries per option shown, those lacking the pod's resources
// included; or per capacity class of nodes. Without a bound when
// unbounded. On the openb trace's protocol and the synthetic mixes of
// examples/packing the shared bound changes no placement from 8 times
// as many: on a saturated fleet most entries are GPUs of nodes short of
// cpu or memory, and the options past them rank no better.
func (p *Placer) visits(per int, shared, unbounded bool) int {
	switch {
	case unbounded:
		return 1 << 62
	case p.visitLimit > 0:
		return p.visitLimit
	case shared:
		return 16 * per
	}
	return 8 * per
}

// gatherBounded is gather's walk over the best-fit indexes: within the
// visit bounds, or without them up to the first option (unbounded).
func (p *Placer) gatherBounded(g topology.GroupID, rank int, unbounded bool) {
	f := p.f
	per := p.opt.MaxRanked
	if p.opt.Ranker == nil {
		per = 1
	}
	start := len(p.opts)
	enough := func() bool { return (p.opt.Ranker == nil || unbounded) && len(p.opts) > start }
	add := func(n topology.NodeID, gpu int, fit int64) {
		p.opts = append(p.opts, Option{Node: n, Group: g, GPU: gpu, Rank: rank, Fit: fit})
	}
	limit := p.visits(per, true, unbounded)
	// Partly used GPUs first: a share or slice there is a tighter fit than
	// on any whole-free GPU.
	switch {
	case p.share > 0:
		// Class by class (GPUs with as much left): once a class has given
		// its options, the walk passes over the rest of it, and seeks to
		// the next class when more than a few are left (classes are often
		// small, and a seek costs more than a step).
		const seekAfter = 8
		visits := 0
		for from := p.share; from < topology.MilliGPU && !enough() && visits < limit; {
			class, inClass, skipped, seek := -1, 0, 0, false
			f.AscendSharedGPUs(g, from, func(n topology.NodeID, gpu, left int) bool {
				if left != class {
					class, inClass, skipped = left, 0, 0
				}
				if inClass >= per {
					skipped++
					seek = skipped >= seekAfter
					return !seek
				}
				visits++
				if !p.avoided(n) && p.resourcesFit(n) {
					add(n, gpu, int64(left-p.share)<<32|int64(f.Free(n)))
					inClass++
				}
				return !enough() && visits < limit
			})
			if !seek {
				break
			}
			from = class + 1
		}
	case p.mig != "":
		last, inClass, visits := -1, 0, 0
		f.AscendMIGGPUs(g, 1, func(n topology.NodeID, gpu, free int) bool {
			visits++
			if free != last {
				last, inClass = free, 0
			}
			prof, ok := f.NodeMIGProfile(n, p.mig)
			if !ok {
				return true
			}
			_, sl := f.GPUUsed(n, gpu)
			if _, fits := topology.MIGStart(sl, prof); fits && inClass < per && !p.avoided(n) && p.resourcesFit(n) {
				add(n, gpu, int64(free-prof.Slices)<<32|int64(f.Free(n)))
				inClass++
			}
			return !enough() && visits < limit
		})
	}
	if enough() {
		return
	}
	// Whole-free GPUs, by node classes of as many free GPUs, fewest first.
	need := max(p.k, 1)
	limit = p.visits(per, false, unbounded)
	// Each walk seeks to the next class that has nodes.
	for c := need; c <= f.MaxGPUsPerNode() && !enough(); {
		class, inClass, visits := -1, 0, 0
		f.AscendNodesByFree(g, c, func(n topology.NodeID, free int) bool {
			if class < 0 {
				class = free
			}
			if free != class {
				return false
			}
			visits++
			if p.holdsOne(n) {
				gpu, fit := p.wholeOption(n, free)
				add(n, gpu, fit)
				inClass++
			}
			return inClass < per && !enough() && visits < limit
		})
		if class < 0 {
			break
		}
		c = class + 1
	}
}

// wholeOption is the GPU and fit of the pod on node n's whole-free GPUs,
// of which it has free.
func (p *Placer) wholeOption(n topology.NodeID, free int) (int, int64) {
	if p.k > 0 {
		return -1, int64(free-p.k) << 32
	}
	gpu := bits.TrailingZeros64(p.f.FreeMask(n))
	return gpu, int64(topology.MilliGPU-max(p.share, 0))<<32 | int64(free)
}

// gatherNoGPU adds the options of a pod that asks for no GPU: every
// healthy node in bounds of a candidate group that holds it, in one pass
// over the fleet that skips leaf domains without enough of a resource
// free. Only the groups of the most preferred tier with room count. With
// a Ranker it keeps the tightest Options.MaxRanked x 2 of them (the
// least GPU capacity left idle beside the pod, where it keeps no GPU pod
// out), so that ranking costs what a class walk does; without one, the
// tightest.
func (p *Placer) gatherNoGPU() {
	f := p.f
	keep := 1
	if p.opt.Ranker != nil {
		keep = p.opt.MaxRanked * 2
	}
	if len(p.tiers) != f.NumGroups() {
		p.tiers, p.granks = make([]int32, f.NumGroups()), make([]int32, f.NumGroups())
	}
	for g := range p.tiers {
		p.tiers[g] = -1
	}
	for _, g := range p.groups {
		rank, _ := p.w.Accepts(f.GroupFlavor(g))
		p.tiers[g], p.granks[g] = int32(p.tier(g)), int32(rank)
	}
	bestTier := int32(-1)
	leaf := topology.Level(max(int(p.deep)-1, 0))
	lo, hi := f.DomainsAt(leaf)
	for d := lo; d < hi; d++ {
		if len(p.opts) == keep && p.opts[keep-1].Fit == 0 && p.opts[keep-1].Rank == 0 && bestTier == 0 {
			return // nothing later is tighter: nodes come in ID order
		}
		if !p.mayHold(d) {
			continue
		}
		nlo, nhi := f.Nodes(d)
		for n := nlo; n < nhi; n++ {
			g := f.NodeGroup(n)
			t := p.tiers[g]
			if t < 0 || bestTier >= 0 && t > bestTier {
				continue
			}
			rank := int(p.granks[g])
			if t == bestTier && len(p.opts) == keep {
				// Whole-free GPUs are idle: a bound on the fit below.
				if low := int64(f.Free(n))*topology.MilliGPU<<32 | int64(f.Capacity(n)); low > p.opts[keep-1].Fit {
					continue
				}
			}
			if f.Health(n) != topology.Healthy || !p.resourcesFit(n) || p.avoided(n) {
				continue
			}
			// The fit: the GPU capacity left idle beside the pod, in
			// thousandths, then the node's GPUs.
			idle := int64(f.Capacity(n))*topology.MilliGPU - f.MilliAllocated(f.NodeDomain(n), g)
			fit := idle<<32 | int64(f.Capacity(n))
			if t == bestTier && len(p.opts) == keep {
				// Nodes come in ID order: a later node beats the last
				// kept one only by a tighter fit or a preferred model.
				if last := &p.opts[keep-1]; fit > last.Fit || fit == last.Fit && rank >= last.Rank {
					continue
				}
			}
			if t < bestTier || bestTier < 0 {
				bestTier, p.opts = t, p.opts[:0]
			}
			p.keepTightest(Option{Node: n, Group: g, GPU: -1, Rank: rank, Fit: fit}, keep)
		}
	}
}

// mayHold reports whether domain d has enough of every resource of the
// current pod set free, over its healthy nodes, for one pod.
func (p *Placer) mayHold(d topology.DomainID) bool {
	for _, r := range p.cur {
		if p.f.FreeResource(d, topology.AllGroups, r.Resource) < r.Amount {
			return false
		}
	}
	return true
}

// keepTightest inserts o among p.opts in best-fit order, keeping at
// most keep of them.
func (p *Placer) keepTightest(o Option, keep int) {
	if len(p.opts) == keep && !better(o, p.opts[len(p.opts)-1]) {
		return
	}
	if len(p.opts) < keep {
		p.opts = append(p.opts, o)
	}
	i := len(p.opts) - 1
	for i > 0 && better(o, p.opts[i-1]) {
		p.opts[i] = p.opts[i-1]
		i--
	}
	p.opts[i] = o
}

// holdsOne reports whether node n, found with whole-free GPUs, can take
// one more pod of the current pod set: nodeCap(n) > 0, without counting
// the shares its GPUs could take.
func (p *Placer) holdsOne(n topology.NodeID) bool {
	f := p.f
	if p.share > 0 && p.maxPerNode == 0 && !f.MIG(n) {
		return f.Health(n) == topology.Healthy && f.NodeGroup(n) == p.g && !p.avoided(n) && p.resourcesFit(n)
	}
	return p.nodeCap(n) > 0
}

// resourcesFit reports whether node n has the current pod set's
// resources free for one more pod.
func (p *Placer) resourcesFit(n topology.NodeID) bool {
	for _, r := range p.cur {
		if p.f.ResourceFree(n, r.Resource) < r.Amount {
			return false
		}
	}
	return true
}
