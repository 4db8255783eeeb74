package placement

import (
	"math/bits"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Option is one way to place a one-pod workload: a node, and the GPU the
// pod would take there for a share or a MIG slice.
type Option struct {
	Node  topology.NodeID
	Group topology.GroupID
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
// Ranker never makes it scan the fleet, except for pods that ask for no
// GPU, whose options are every node that holds them. Rank must be
// deterministic, must not modify f, and is called once per option.
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
	for _, g := range p.groups {
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
// bounded walk finds no option in g, gatherAll looks at every node of g.
// Without a Ranker the first option in best-fit order is the tightest of
// the group, so the walk stops there.
func (p *Placer) gather(g topology.GroupID, rank int) {
	start := len(p.opts)
	switch {
	case p.k == 0 && p.share == 0 && p.mig == "":
		// No GPU: the tightest leave the fewest whole-free GPUs idle
		// beside the pod; the nodes with no free GPU are in no index.
		p.gatherAll(g, rank)
		return
	default:
		p.gatherBounded(g, rank)
	}
	if len(p.opts) == start {
		p.gatherAll(g, rank)
	}
}

// visits is the walk's bound per capacity class for a class of shared
// GPUs (shared) or of nodes.
func (p *Placer) visits(per int, shared bool) int {
	switch {
	case p.visitLimit > 0:
		return p.visitLimit
	case shared:
		return 16 * per * 8
	}
	return 8 * per
}

// gatherBounded is gather's walk over the best-fit indexes.
func (p *Placer) gatherBounded(g topology.GroupID, rank int) {
	f := p.f
	per := p.opt.MaxRanked
	if p.opt.Ranker == nil {
		per = 1
	}
	start := len(p.opts)
	enough := func() bool { return p.opt.Ranker == nil && len(p.opts) > start }
	add := func(n topology.NodeID, gpu int, fit int64) {
		p.opts = append(p.opts, Option{Node: n, Group: g, GPU: gpu, Rank: rank, Fit: fit})
	}
	limit := p.visits(per, true)
	// Partly used GPUs first: a share or slice there is a tighter fit than
	// on any whole-free GPU.
	switch {
	case p.share > 0:
		// Class by class (GPUs with as much left): once a class has given
		// its options, the walk seeks to the next one rather than visit
		// the rest of it.
		visits := 0
		for from := p.share; from < topology.MilliGPU && !enough() && visits < limit; {
			class, inClass := -1, 0
			f.AscendSharedGPUs(g, from, func(n topology.NodeID, gpu, left int) bool {
				if class < 0 {
					class = left
				}
				if left != class {
					return false
				}
				visits++
				if !p.avoided(n) && p.resourcesFit(n) {
					add(n, gpu, int64(left-p.share)<<32|int64(f.Free(n)))
					inClass++
				}
				return inClass < per && !enough() && visits < limit
			})
			if class < 0 {
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
	limit = p.visits(per, false)
	for c := need; c <= f.MaxGPUsPerNode() && !enough(); c++ {
		inClass, visits := 0, 0
		f.AscendNodesByFree(g, c, func(n topology.NodeID, free int) bool {
			if free != c {
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

// gatherAll adds an option for every node of group g that can take the
// pod, at its tightest GPU, scanning the domains whose free resources
// and GPU capacity could hold it. With a Ranker it keeps the tightest
// Options.MaxRanked x 4 of them, so that ranking costs what a class walk
// does; without one, the tightest.
func (p *Placer) gatherAll(g topology.GroupID, rank int) {
	keep := 1
	if p.opt.Ranker != nil {
		keep = p.opt.MaxRanked * 4
	}
	start := len(p.opts)
	p.scanDomain(topology.Root, g, func(n topology.NodeID) {
		o, ok := p.nodeOption(n)
		if !ok {
			return
		}
		o.Group, o.Rank = g, rank
		kept := p.opts[start:]
		if len(kept) == keep && !better(o, kept[len(kept)-1]) {
			return
		}
		if len(kept) < keep {
			p.opts = append(p.opts, o)
			kept = p.opts[start:]
		}
		// Insert o in best-fit order, dropping the loosest past keep.
		i := len(kept) - 1
		for i > 0 && better(o, kept[i-1]) {
			kept[i] = kept[i-1]
			i--
		}
		kept[i] = o
	})
}

// scanDomain calls fn for every healthy node of group g in bounds below
// d, skipping domains that cannot hold one pod of the current pod set:
// too few free GPUs (whole-GPU pods) or too little of a resource.
func (p *Placer) scanDomain(d topology.DomainID, g topology.GroupID, fn func(topology.NodeID)) {
	f := p.f
	if f.Stats(d, g).HealthyNodes == 0 || p.k > 0 && f.FreeGPUs(d, g) < p.k {
		return
	}
	for _, r := range p.cur {
		if f.FreeResource(d, g, r.Resource) < r.Amount {
			return
		}
	}
	if lo, hi := f.Nodes(d); f.DomainLevel(d) == p.deep-1 || f.DomainLevel(d) == p.deep {
		for n := lo; n < hi; n++ {
			if f.NodeGroup(n) == g && p.nodeCap(n) > 0 {
				fn(n)
			}
		}
		return
	}
	lo, hi := f.Children(d)
	for c := lo; c < hi; c++ {
		p.scanDomain(c, g, fn)
	}
}

// nodeOption is the pod's option on node n, which nodeCap says holds it:
// its tightest GPU for a share or a slice (partly used before whole-free,
// lowest index on ties), with the fit key the class walk gives it.
func (p *Placer) nodeOption(n topology.NodeID) (Option, bool) {
	f := p.f
	free := f.Free(n)
	o := Option{Node: n, GPU: -1}
	switch {
	case p.k > 0:
		o.GPU, o.Fit = p.wholeOption(n, free)
	case p.share > 0:
		best, bestLeft := -1, 0
		for i := range f.Capacity(n) {
			used, _ := f.GPUUsed(n, i)
			if left := topology.MilliGPU - used; !f.GPUWhole(n, i) && used > 0 && left >= p.share &&
				(best < 0 || left < bestLeft) {
				best, bestLeft = i, left
			}
		}
		if best < 0 {
			o.GPU, o.Fit = p.wholeOption(n, free)
			return o, o.GPU < f.Capacity(n)
		}
		o.GPU, o.Fit = best, int64(bestLeft-p.share)<<32|int64(free)
	case p.mig != "":
		prof, ok := f.NodeMIGProfile(n, p.mig)
		if !ok {
			return o, false
		}
		best, bestFree := -1, 0
		for i := range f.Capacity(n) {
			_, sl := f.GPUUsed(n, i)
			if f.GPUWhole(n, i) || sl == 0 {
				continue
			}
			if _, fits := topology.MIGStart(sl, prof); fits {
				if fr := topology.MIGSlices - bits.OnesCount8(sl); best < 0 || fr < bestFree {
					best, bestFree = i, fr
				}
			}
		}
		if best < 0 {
			o.GPU, o.Fit = p.wholeOption(n, free)
			return o, o.GPU < f.Capacity(n)
		}
		o.GPU, o.Fit = best, int64(bestFree-prof.Slices)<<32|int64(free)
	default:
		o.Fit = int64(free)<<32 | int64(f.Capacity(n))
	}
	return o, true
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
