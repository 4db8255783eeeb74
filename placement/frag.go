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
}

type fragShape struct {
	k, share  int
	resources []gang.Resource
	weight    float64
}

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

// fragNode is one node's state as the measure sees it.
type fragNode struct {
	gpus int
	left [64]int // thousandths left per GPU; -1 when held whole
	res  [8]int64
}

// Rank scores option o as minus the rise in its node's expected
// fragmentation, in thousandths of GPU.
func (r *Fragmentation) Rank(f *topology.Fleet, w *gang.Workload, o Option) float64 {
	if r.total == 0 || f.Capacity(o.Node) > 64 || f.MIG(o.Node) {
		return 0
	}
	var before, after fragNode
	r.load(f, o.Node, &before)
	after = before
	// The pod: its first pod set, the only one of a one-pod workload.
	ps := &w.PodSets[0]
	switch {
	case ps.GPUsPerPod > 0:
		left := ps.GPUsPerPod
		for i := 0; i < after.gpus && left > 0; i++ {
			if after.left[i] == topology.MilliGPU {
				after.left[i] = -1
				left--
			}
		}
	case ps.GPUShare > 0 && o.GPU >= 0:
		after.left[o.GPU] -= ps.GPUShare
	}
	for _, res := range ps.Resources {
		if id, ok := f.Resource(res.Name); ok && int(id) < 8 {
			after.res[id] -= res.Amount
		}
	}
	return r.expected(f, &before) - r.expected(f, &after)
}

func (r *Fragmentation) load(f *topology.Fleet, n topology.NodeID, st *fragNode) {
	st.gpus = f.Capacity(n)
	for i := range st.gpus {
		used, _ := f.GPUUsed(n, i)
		st.left[i] = topology.MilliGPU - used
		if f.GPUWhole(n, i) {
			st.left[i] = -1
		}
	}
	for i := range min(f.NumResources(), 8) {
		st.res[i] = f.ResourceFree(n, topology.ResourceID(i))
	}
}

// expected is the node's fragmentation averaged over the mix, each shape
// weighted by its frequency and its GPUs.
func (r *Fragmentation) expected(f *topology.Fleet, st *fragNode) float64 {
	var sum float64
	for _, s := range r.shapes {
		demand := s.k*topology.MilliGPU + s.share
		if demand == 0 {
			continue // a pod without GPUs leaves no GPU unusable by itself
		}
		sum += s.weight * float64(demand) * float64(r.frag(f, st, &s))
	}
	return sum / r.total / topology.MilliGPU
}

// frag is the free GPU capacity (thousandths) of the node that pods of
// shape s cannot use.
func (r *Fragmentation) frag(f *topology.Fleet, st *fragNode, s *fragShape) int {
	total, whole, small, fits := 0, 0, 0, false
	for i := range st.gpus {
		l := st.left[i]
		if l <= 0 {
			continue
		}
		total += l
		switch {
		case l == topology.MilliGPU:
			whole++
		case s.k > 0:
			small += l // a partly used GPU is of no use to whole-GPU pods
		}
		if s.share > 0 {
			if l >= s.share {
				fits = true
			} else {
				small += l
			}
		}
	}
	if s.k > 0 {
		fits = whole >= s.k
	}
	if fits {
		for _, res := range s.resources {
			if !r.resFits(f, st, res) {
				fits = false
				break
			}
		}
	}
	if !fits {
		return total
	}
	return small
}

func (r *Fragmentation) resFits(f *topology.Fleet, st *fragNode, res gang.Resource) bool {
	id, ok := f.Resource(res.Name)
	if !ok || int(id) >= 8 {
		return !ok // a resource the fleet lacks never fits; beyond eight, not measured
	}
	return st.res[id] >= res.Amount
}
