package placement

import (
	"cmp"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Fragmentation is the built-in Ranker for GPU-sharing fleets. It follows
// the fragmentation measure of "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent" (USENIX ATC
// 2023): a node's fragmentation for a pod shape is the free GPU capacity
// that pods of that shape cannot use there (all of it when the shape does
// not fit the node at all, for lack of GPUs, CPU or memory; otherwise the
// free parts of GPUs too small for it), and its expected fragmentation is
// the average over the workload mix seen so far. An option ranks by how
// little it raises the expected fragmentation of its node.
//
// It departs from the paper's measure in one way: each shape is weighted
// by the GPUs it asks for as well as by how often it comes, so GPU
// capacity only a rare 8-GPU pod could fill counts for the GPUs it would
// have served. Ties go to the tighter fit (Option.Fit), then the preferred
// model, then the lower node ID.
//
// The host feeds the mix with Observe (for example on each submission);
// until then every option ranks equal and the tightest fit wins. Not safe
// for concurrent use.
type Fragmentation struct {
	shapes []fragShape
	total  float64

	// What Rank reads, derived from shapes when the mix or the fleet
	// changes: the GPU shapes with their weights and resources by ID.
	fleet   *topology.Fleet
	derived bool
	gpu     []fragCoef
}

type fragShape struct {
	k, share  int
	resources []gang.Resource
	weight    float64
}

// fragCoef is one GPU shape as Rank weighs it: its weight (frequency
// times GPUs asked, over the mix's total) and its resources by ID.
type fragCoef struct {
	k, share int
	weight   float64
	need     []resNeed
}

// resNeed is one resource of a shape on the ranked fleet; id -1 when the
// fleet lacks it (the shape never fits), ids past fragResources are not
// measured.
type resNeed struct {
	id     int
	amount int64
}

// fragResources bounds the resources the measure reads per node.
const fragResources = 8

// maxShapes bounds the shapes remembered; rarer ones beyond it are folded
// into the closest kept shape with the same GPU form.
const maxShapes = 64

// NewFragmentation returns a Fragmentation ranker with an empty mix.
func NewFragmentation() *Fragmentation { return &Fragmentation{} }

// Observe adds w's pods to the workload mix.
func (r *Fragmentation) Observe(w *gang.Workload) {
	for i := range w.PodSets {
		ps := &w.PodSets[i]
		if ps.MIG != "" {
			continue // MIG nodes are carved, not fragmented by shares
		}
		wt := float64(ps.Count)
		r.total += wt
		j := slices.IndexFunc(r.shapes, func(s fragShape) bool {
			return s.k == ps.GPUsPerPod && s.share == ps.GPUShare && slices.Equal(s.resources, ps.Resources)
		})
		if j < 0 && len(r.shapes) >= maxShapes {
			j = r.closest(ps)
		}
		if j < 0 {
			r.shapes = append(r.shapes, fragShape{k: ps.GPUsPerPod, share: ps.GPUShare, resources: slices.Clone(ps.Resources)})
			j = len(r.shapes) - 1
			slices.SortStableFunc(r.shapes, func(a, b fragShape) int {
				return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.share, b.share))
			})
			j = slices.IndexFunc(r.shapes, func(s fragShape) bool {
				return s.k == ps.GPUsPerPod && s.share == ps.GPUShare && slices.Equal(s.resources, ps.Resources)
			})
		}
		r.shapes[j].weight += wt
		r.derived = false
	}
}

func (r *Fragmentation) closest(ps *gang.PodSet) int {
	best, bestD := -1, 0
	for i, s := range r.shapes {
		if (s.k > 0) != (ps.GPUsPerPod > 0) || (s.share > 0) != (ps.GPUShare > 0) {
			continue
		}
		d := abs(s.k-ps.GPUsPerPod)*1000 + abs(s.share-ps.GPUShare)
		if best < 0 || d < bestD {
			best, bestD = i, d
		}
	}
	return max(best, 0)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// fragNode is one node's state as the measure sees it: its whole-free
// GPUs, the thousandths left on its partly used GPUs (ascending), and
// its free resources.
type fragNode struct {
	whole int
	total int // free thousandths over the node
	np    int
	parts [64]int16
	res   [fragResources]int64
}

// Rank scores option o as minus the rise in its node's expected
// fragmentation, in thousandths of GPU.
func (r *Fragmentation) Rank(f *topology.Fleet, w *gang.Workload, o Option) float64 {
	if r.total == 0 || f.Capacity(o.Node) > 64 || f.MIG(o.Node) {
		return 0
	}
	r.derive(f)
	var before, after fragNode
	left := r.load(f, o.Node, o.GPU, &before)
	after = before
	// The pod: its first pod set, the only one of a one-pod workload.
	ps := &w.PodSets[0]
	switch {
	case ps.GPUsPerPod > 0:
		take := min(ps.GPUsPerPod, after.whole)
		after.whole -= take
		after.total -= take * topology.MilliGPU
	case ps.GPUShare > 0 && left >= ps.GPUShare:
		l := left
		if l == topology.MilliGPU {
			after.whole--
		} else {
			after.remove(int16(l))
		}
		if l > ps.GPUShare {
			after.insert(int16(l - ps.GPUShare))
		}
		after.total -= ps.GPUShare
	}
	for _, res := range ps.Resources {
		if id, ok := f.Resource(res.Name); ok && int(id) < fragResources {
			after.res[id] -= res.Amount
		}
	}
	return r.expected(&before) - r.expected(&after)
}

// derive recomputes the shapes' weights and resource IDs for fleet f
// when the mix or the fleet changed since the last Rank.
func (r *Fragmentation) derive(f *topology.Fleet) {
	if r.derived && r.fleet == f {
		return
	}
	r.fleet, r.derived = f, true
	r.gpu = r.gpu[:0]
	for _, s := range r.shapes {
		demand := s.k*topology.MilliGPU + s.share
		if demand == 0 {
			continue // a pod without GPUs leaves no GPU unusable by itself
		}
		c := fragCoef{k: s.k, share: s.share, weight: s.weight * float64(demand) / r.total / topology.MilliGPU}
		for _, res := range s.resources {
			id, ok := f.Resource(res.Name)
			switch {
			case !ok:
				c.need = append(c.need, resNeed{id: -1})
			case int(id) < fragResources:
				c.need = append(c.need, resNeed{id: int(id), amount: res.Amount})
			}
		}
		r.gpu = append(r.gpu, c)
	}
}

// load reads node n into st and returns the thousandths left on its GPU
// gpu (-1 when held whole or out of range).
func (r *Fragmentation) load(f *topology.Fleet, n topology.NodeID, gpu int, st *fragNode) int {
	left := -1
	for i := range f.Capacity(n) {
		used, _ := f.GPUUsed(n, i)
		l := topology.MilliGPU - used
		switch {
		case f.GPUWhole(n, i):
			l = -1
		case l == topology.MilliGPU:
			st.whole++
			st.total += l
		case l > 0:
			st.insert(int16(l))
			st.total += l
		}
		if i == gpu {
			left = l
		}
	}
	for i := range min(f.NumResources(), fragResources) {
		st.res[i] = f.ResourceFree(n, topology.ResourceID(i))
	}
	return left
}

// insert adds a partly used GPU with l thousandths left, keeping parts
// ascending.
func (st *fragNode) insert(l int16) {
	i := st.np
	for i > 0 && st.parts[i-1] > l {
		st.parts[i] = st.parts[i-1]
		i--
	}
	st.parts[i] = l
	st.np++
}

// remove drops one partly used GPU with l thousandths left.
func (st *fragNode) remove(l int16) {
	for i := range st.np {
		if st.parts[i] == l {
			copy(st.parts[i:st.np-1], st.parts[i+1:st.np])
			st.np--
			return
		}
	}
}

// expected is the node's fragmentation averaged over the mix, each shape
// weighted by its frequency and its GPUs: for each shape, the free GPU
// capacity that pods of the shape cannot use there (all of it when the
// shape does not fit the node; else, for whole-GPU shapes, every partly
// used GPU, and for shares, the partly used GPUs with less left than the
// share).
func (r *Fragmentation) expected(st *fragNode) float64 {
	partial := st.total - st.whole*topology.MilliGPU
	largest := 0
	if st.np > 0 {
		largest = int(st.parts[st.np-1])
	}
	if st.whole > 0 {
		largest = topology.MilliGPU
	}
	var sum float64
	// Shapes come ordered by GPUs, then share: the partly used GPUs
	// smaller than a share grow with it, read by one moving cursor.
	small, j := 0, 0
	for i := range r.gpu {
		s := &r.gpu[i]
		var fits bool
		var waste int
		if s.k > 0 {
			fits, waste = st.whole >= s.k, partial
		} else {
			for j < st.np && int(st.parts[j]) < s.share {
				small += int(st.parts[j])
				j++
			}
			fits, waste = largest >= s.share, small
		}
		if fits && !st.holds(s.need) {
			fits = false
		}
		if !fits {
			waste = st.total
		}
		sum += s.weight * float64(waste)
	}
	return sum
}

// holds reports whether the node has the resources of a shape free.
func (st *fragNode) holds(need []resNeed) bool {
	for _, n := range need {
		if n.id < 0 || st.res[n.id] < n.amount {
			return false
		}
	}
	return true
}
