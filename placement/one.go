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

// gather adds group g's options. Without a Ranker the first option in
// best-fit order is the tightest of the group, so it stops there.
func (p *Placer) gather(g topology.GroupID, rank int) {
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
	// Partly used GPUs first: a share or slice there is a tighter fit than
	// on any whole-free GPU.
	switch {
	case p.share > 0:
		// Class by class (GPUs with as much left): once a class has given
		// its options, the walk seeks to the next one rather than visit
		// the rest of it.
		visits := 0
		for from := p.share; from < topology.MilliGPU && !enough() && visits < 16*per*8; {
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
				return inClass < per && !enough() && visits < 16*per*8
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
			used, sl := f.GPUUsed(n, gpu)
			_ = used
			if _, fits := topology.MIGStart(sl, prof); fits && inClass < per && !p.avoided(n) && p.resourcesFit(n) {
				add(n, gpu, int64(free-prof.Slices)<<32|int64(f.Free(n)))
				inClass++
			}
			return !enough() && visits < 16*per*8
		})
	case p.k == 0:
		// No GPU: every healthy node of the group that holds the pod; the
		// tightest leaves the fewest whole-free GPUs idle beside it.
		for n := range topology.NodeID(f.NumNodes()) {
			if f.NodeGroup(n) == g && p.nodeCap(n) > 0 {
				add(n, -1, int64(f.Free(n))<<32|int64(f.Capacity(n)))
			}
		}
		return
	}
	if enough() {
		return
	}
	// Whole-free GPUs, by node classes of as many free GPUs, fewest first.
	need := max(p.k, 1)
	for c := need; c <= f.MaxGPUsPerNode() && !enough(); c++ {
		inClass, visits := 0, 0
		f.AscendNodesByFree(g, c, func(n topology.NodeID, free int) bool {
			if free != c {
				return false
			}
			visits++
			if p.holdsOne(n) {
				gpu := -1
				fit := int64(free-need) << 32
				if p.k == 0 {
					gpu = bits.TrailingZeros64(f.FreeMask(n))
					fit = int64(topology.MilliGPU-max(p.share, 0))<<32 | int64(free)
				}
				add(n, gpu, fit)
				inClass++
			}
			return inClass < per && !enough() && visits < 8*per
		})
	}
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
