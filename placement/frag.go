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
// not fit the node at all, for its GPU model or lack of GPUs, CPU or
// memory; otherwise the
// free parts of GPUs too small for it), and its expected fragmentation is
// the average over the workload mix seen so far. An option ranks by how
// little it raises the expected fragmentation of its node.
//
// It departs from the paper's measure in two ways. Each shape is weighted
// by the GPUs it asks for as well as by how often it comes, so GPU
// capacity only a rare 8-GPU pod could fill counts for the GPUs it would
// have served. And each shape's weight is divided by the share of the
// fleet's GPUs whose model it accepts: its demand falls on those GPUs
// only, so a node matters to a shape bound to a scarce model more than to
// one that may go anywhere, and pods that may go anywhere are steered
// away from models that bound work needs (the paper's measure steers
// them toward models the most frequent shapes cannot use, whatever their
// supply). Ties go to the tighter fit (Option.Fit), then the preferred
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
	models    []string // accepted GPU models; nil: any
	weight    float64
}

// same reports whether s is the shape of pod set ps of a workload that
// accepts models.
func (s *fragShape) same(ps *gang.PodSet, models []string) bool {
	return s.k == ps.GPUsPerPod && s.share == ps.GPUShare && slices.Equal(s.resources, ps.Resources) && slices.Equal(s.models, models)
}

// acceptedModels is the list of GPU models w accepts; nil for any.
func acceptedModels(w *gang.Workload) []string {
	switch {
	case len(w.Flavors) > 0:
		return w.Flavors
	case w.Flavor != "":
		return []string{w.Flavor}
	}
	return nil
}

// fragCoef is one GPU shape as Rank weighs it: its weight (frequency
// times GPUs asked, over the mix's total) and its resources by ID.
type fragCoef struct {
	k, share int
	weight   float64
	need     []resNeed
	accepts  []bool // by GroupID: the shape may run on the group's model
	// bound is the shape's share of the mix's GPU demand when it accepts
	// only some models (0 otherwise): what its reserve term weighs.
	bound float64
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
	models := acceptedModels(w)
	for i := range w.PodSets {
		ps := &w.PodSets[i]
		if ps.MIG != "" {
			continue // MIG nodes are carved, not fragmented by shares
		}
		if !observable(ps) {
			continue // Place refuses it: it is no shape of the mix
		}
		wt := float64(ps.Count)
		r.total += wt
		j := slices.IndexFunc(r.shapes, func(s fragShape) bool { return s.same(ps, models) })
		if j < 0 && len(r.shapes) >= maxShapes {
			j = r.closest(ps, models)
		}
		if j < 0 {
			r.shapes = append(r.shapes, fragShape{k: ps.GPUsPerPod, share: ps.GPUShare,
				resources: slices.Clone(ps.Resources), models: slices.Clone(models)})
			slices.SortStableFunc(r.shapes, func(a, b fragShape) int {
				return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.share, b.share))
			})
			j = slices.IndexFunc(r.shapes, func(s fragShape) bool { return s.same(ps, models) })
		}
		r.shapes[j].weight += wt
		r.derived = false
	}
}

// observable reports whether ps is a pod set Place accepts the amounts
// of: pods, GPUs and share in range, positive resource amounts.
func observable(ps *gang.PodSet) bool {
	if ps.Count < 1 || ps.Count > gang.MaxGPUs || ps.GPUsPerPod < 0 || ps.GPUsPerPod > gang.MaxGPUs ||
		ps.GPUShare < 0 || ps.GPUShare > topology.MilliGPU {
		return false
	}
	for _, r := range ps.Resources {
		if r.Amount <= 0 {
			return false
		}
	}
	return true
}

// closest is the kept shape nearest ps in GPUs asked, among those of
// the same GPU form, preferring those that accept the same models.
func (r *Fragmentation) closest(ps *gang.PodSet, models []string) int {
	best, bestD := -1, 0
	for i, s := range r.shapes {
		if (s.k > 0) != (ps.GPUsPerPod > 0) || (s.share > 0) != (ps.GPUShare > 0) {
			continue
		}
		d := abs(s.k-ps.GPUsPerPod)*1000 + abs(s.share-ps.GPUShare)
		if !slices.Equal(s.models, models) {
			d += 1 << 20
		}
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
	group topology.GroupID
	whole int
	total int // free thousandths over the node
	np    int
	parts [64]int16
	res   [fragResources]int64
}

// Rank scores option o as minus the rise in its node's expected
// fragmentation, in thousandths of GPU.
func (r *Fragmentation) Rank(f *topology.Fleet, w *gang.Workload, o Option) float64 {
	if r.total == 0 || len(w.PodSets) == 0 || f.Capacity(o.Node) > 64 || f.MIG(o.Node) {
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
	used := float64(before.total - after.total)
	return r.expected(&before) - r.expected(&after) - used*r.reserve(f, before.group)
}

// reserve is what taking one thousandth of GPU in group g costs the
// shapes bound to some models, g's among them. The demand a bound shape
// will still bring before the fleet fills is its share of the mix's
// demand times the fleet's free capacity, and it has only the free
// capacity of its models to land on: taking c of that free capacity F_s
// denies it c/F_s of its future demand. Shapes that may go anywhere cost
// the same wherever the pod goes, so they do not count.
func (r *Fragmentation) reserve(f *topology.Fleet, g topology.GroupID) float64 {
	var cost float64
	var fleetFree float64
	for i := range r.gpu {
		s := &r.gpu[i]
		if s.bound == 0 || !s.accepts[g] {
			continue
		}
		if fleetFree == 0 {
			fleetFree = freeMilli(f, topology.AllGroups)
		}
		var free float64
		for h, ok := range s.accepts {
			if ok {
				free += freeMilli(f, topology.GroupID(h))
			}
		}
		cost += s.bound * fleetFree / max(free, topology.MilliGPU)
	}
	return cost
}

// freeMilli is the free GPU capacity of group g in thousandths.
func freeMilli(f *topology.Fleet, g topology.GroupID) float64 {
	return float64(int64(f.Stats(topology.Root, g).GPUs)*topology.MilliGPU - f.MilliAllocated(topology.Root, g))
}

// derive recomputes the shapes' weights and resource IDs for fleet f
// when the mix or the fleet changed since the last Rank.
func (r *Fragmentation) derive(f *topology.Fleet) {
	if r.derived && r.fleet == f {
		return
	}
	r.fleet, r.derived = f, true
	r.gpu = r.gpu[:0]
	fleetGPUs := f.Stats(topology.Root, topology.AllGroups).GPUs
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
		c.accepts = make([]bool, f.NumGroups())
		supply := 0
		for g := range c.accepts {
			c.accepts[g] = s.models == nil || slices.Contains(s.models, f.GroupFlavor(topology.GroupID(g)))
			if c.accepts[g] {
				supply += f.Stats(topology.Root, topology.GroupID(g)).GPUs
			}
		}
		if supply == 0 {
			continue // it fits nowhere: the same on every node
		}
		if s.models != nil && supply < fleetGPUs {
			c.bound = c.weight
		}
		c.weight *= float64(fleetGPUs) / float64(supply)
		r.gpu = append(r.gpu, c)
	}
}

// load reads node n into st and returns the thousandths left on its GPU
// gpu (-1 when held whole or out of range).
func (r *Fragmentation) load(f *topology.Fleet, n topology.NodeID, gpu int, st *fragNode) int {
	left := -1
	st.group = f.NodeGroup(n)
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
// shape does not fit the node, for its model, GPUs or resources; else, for whole-GPU shapes, every partly
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
		if fits && (!s.accepts[st.group] || !st.holds(s.need)) {
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
