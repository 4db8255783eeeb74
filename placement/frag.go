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
// the average over the workload mix seen so far, each shape weighted by
// how often it comes. An option ranks by how little it raises the
// expected fragmentation of its node.
//
// Options whose rises differ by at most a fiftieth of a GPU count as
// equal (the paper's scheduler has the same effect by scoring in whole
// points of a sigmoid): among them the placer takes the preferred model,
// then the lowest node ID, then the tighter fit, so that pods fill nodes
// in one order and the nodes after them stay whole, rather than chasing
// differences in the measure smaller than any pod. Exact ties go the
// same way. A pod without GPUs takes the tightest fit among them (the
// least GPU capacity left idle beside it, which the measure does not
// see).
//
// It departs from the paper's measure in one way: each shape's weight is
// divided by the share of the fleet's GPUs whose model it accepts: its
// demand falls on those GPUs only, so a node matters to a shape bound to
// a scarce model more than to one that may go anywhere, and pods that may
// go anywhere are steered away from models that bound work needs (the
// paper's measure steers them toward models the most frequent shapes
// cannot use, whatever their supply). Weighting shapes by the GPUs they
// ask for as well, so that capacity only a rare 8-GPU pod could fill
// counts for eight, allocates less on the study's trace: it protects
// whole GPUs at the cost of the frequent shares, whose leftovers are most
// of what stays idle.
//
// The host feeds the mix with Observe (for example on each submission);
// until then every option ranks equal and the tightest fit wins. Every
// distinct shape is kept, keyed by its GPUs, share, resources and
// accepted models, so what the mix counts does not depend on the order
// pods arrive in. Observe costs O(1) for a shape seen before; Rank costs
// O(shapes accepting the node's model + GPUs of the node), with no
// allocation once the shapes are known. Not safe for concurrent use.
type Fragmentation struct {
	shapes []fragShape
	index  map[uint64][]int32 // shape key hash -> shapes with that hash
	total  float64            // pods observed

	// What Rank reads, derived from shapes for one fleet: rebuilt when
	// a new shape arrives or the fleet changes, while a shape seen
	// before only adds to its weights in place.
	fleet   *topology.Fleet
	derived bool
	rids    []topology.ResourceID // the measured resources, by position
	groups  []fragGroup           // by GroupID
	sets    []fragSet             // the model sets bound shapes accept
	// wAll sums the weights of the GPU shapes that fit somewhere: every
	// one of them wastes a node's free capacity unless it fits there.
	wAll float64

	// The reserve cost per group, for the fleet state and weights it
	// was computed at.
	reserve             []float64
	reserveAt, weightAt uint64
	weights             uint64 // bumps when any weight changes

	// The last ranked pod's resources (see podNeed).
	podRes   *gang.Resource
	podLen   int
	podAt    uint64
	podFleet *topology.Fleet
	podTake  [fragResources]int64
}

type fragShape struct {
	k, share  int
	resources []gang.Resource
	models    []string // accepted GPU models; nil: any
	count     float64

	// Derived for the ranked fleet: weight per pod (the fleet's GPUs over
	// the GPUs of the models it accepts), where it sits.
	unit  float64
	set   int        // index into sets when bound to some models, else -1
	slots []fragSlot // its entries in the groups' lists
	need  []int64    // per measured resource
	never bool       // the fleet lacks one of its resources
}

// fragSlot is where a shape's weight is stored in a group's lists.
type fragSlot struct {
	g     topology.GroupID
	share bool // in the shares list, else the whole-GPU list
	at    int32
}

// fragGroup lists the GPU shapes that accept one group's model, in
// struct-of-arrays form for Rank's one pass: whole-GPU shapes, and
// shares ascending by share. need holds len(rids) amounts per entry.
type fragGroup struct {
	k       []int32
	kw      []float64
	kneed   []int64
	sh      []int32
	sw      []float64
	shneed  []int64
	boundTo []int32 // sets accepting this group
}

// fragSet is a set of models some bound shapes accept: their weight
// and the groups of those models.
type fragSet struct {
	models []string
	weight float64
	groups []topology.GroupID
}

// fragResources bounds the resources the measure reads per node.
const fragResources = 8

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

// reserveWeight is what count pods of shape s add to the reserve of the
// models it is bound to: their demand in GPUs, not their weight over the
// supply of those models (see reserveOf).
func (s *fragShape) reserveWeight(count float64) float64 {
	return count * float64(s.k*topology.MilliGPU+s.share) / topology.MilliGPU
}

// NewFragmentation returns a Fragmentation ranker with an empty mix.
func NewFragmentation() *Fragmentation { return &Fragmentation{} }

// same reports whether s is the shape of pod set ps of a workload that
// accepts models.
func (s *fragShape) same(ps *gang.PodSet, models []string) bool {
	return s.k == ps.GPUsPerPod && s.share == ps.GPUShare && slices.Equal(s.resources, ps.Resources) &&
		slices.Equal(s.models, models)
}

// shapeKey hashes a shape's key (FNV-1a), without allocating.
func shapeKey(ps *gang.PodSet, models []string) uint64 {
	h := uint64(14695981039346656037)
	mix := func(x uint64) {
		for range 8 {
			h ^= x & 0xff
			h *= 1099511628211
			x >>= 8
		}
	}
	str := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
		mix(uint64(len(s)))
	}
	mix(uint64(ps.GPUsPerPod))
	mix(uint64(ps.GPUShare))
	for _, r := range ps.Resources {
		str(r.Name)
		mix(uint64(r.Amount))
	}
	mix(uint64(len(models)) | 1<<40)
	for _, m := range models {
		str(m)
	}
	return h
}

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
		key := shapeKey(ps, models)
		j := -1
		for _, c := range r.index[key] {
			if r.shapes[c].same(ps, models) {
				j = int(c)
				break
			}
		}
		if j < 0 {
			if r.index == nil {
				r.index = map[uint64][]int32{}
			}
			j = len(r.shapes)
			r.index[key] = append(r.index[key], int32(j))
			r.shapes = append(r.shapes, fragShape{k: ps.GPUsPerPod, share: ps.GPUShare,
				resources: slices.Clone(ps.Resources), models: slices.Clone(models)})
			r.derived = false
		}
		r.shapes[j].count += wt
		if r.derived {
			r.addWeight(j, wt)
		}
	}
}

// addWeight adds count pods to shape j's derived weights.
func (r *Fragmentation) addWeight(j int, count float64) {
	s := &r.shapes[j]
	d := count * s.unit
	if d == 0 {
		return
	}
	r.weights++
	r.wAll += d
	if s.set >= 0 {
		r.sets[s.set].weight += s.reserveWeight(count)
	}
	for _, sl := range s.slots {
		g := &r.groups[sl.g]
		if sl.share {
			g.sw[sl.at] += d
		} else {
			g.kw[sl.at] += d
		}
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

// fragNode is one node's state as the measure sees it: its whole-free
// GPUs, the thousandths left on its partly used GPUs (ascending), and
// its free measured resources (by position in rids).
type fragNode struct {
	group topology.GroupID
	whole int
	total int // free thousandths over the node
	np    int
	parts [64]int16
	res   [fragResources]int64
}

// fragBand is how much more than the best option's rise an option's may
// be, in thousandths of GPU, and still count as equal (see band).
const fragBand = 20

// band is fragBand once a mix is seen: Place takes, among the options
// scoring within it of the best, the first in model and node order (see
// Fragmentation). Before, every option ranks equal and it is -1: the
// tightest fit wins.
func (r *Fragmentation) band() float64 {
	if r.total == 0 {
		return -1
	}
	return fragBand
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
	take := r.podNeed(f, ps)
	for i := range r.rids {
		// Floored at 0, so that shapes not asking for it still hold (an
		// option never overdraws; a Ranker called on one that does still
		// gets an answer).
		after.res[i] = max(0, after.res[i]-take[i])
	}
	used := float64(before.total - after.total)
	ub, ua := r.usable(&before, &after)
	rise := r.wAll*float64(after.total-before.total) - (ua - ub)
	return (-rise - used*r.reserveOf(f, before.group)) / r.total
}

// podNeed is what pod set ps takes of each measured resource. Rank is
// called for several options of one pod in a row: the last pod set's
// figures are kept while its resources are the same slice.
func (r *Fragmentation) podNeed(f *topology.Fleet, ps *gang.PodSet) *[fragResources]int64 {
	if len(ps.Resources) > 0 && len(ps.Resources) == r.podLen && &ps.Resources[0] == r.podRes &&
		r.podAt == r.weights && r.podFleet == f {
		return &r.podTake
	}
	r.podTake = [fragResources]int64{}
	for _, res := range ps.Resources {
		if id, ok := f.Resource(res.Name); ok {
			if i := slices.Index(r.rids, id); i >= 0 {
				r.podTake[i] += res.Amount
			}
		}
	}
	r.podLen, r.podRes, r.podAt, r.podFleet = len(ps.Resources), nil, r.weights, f
	if len(ps.Resources) > 0 {
		r.podRes = &ps.Resources[0]
	}
	return &r.podTake
}

// reserveOf is what taking one thousandth of GPU in group g costs the
// shapes bound to some models, g's among them, times the mix's pods. The
// demand a bound shape will still bring before the fleet fills is its
// share of the mix's demand times the fleet's free capacity, and it has
// only the free capacity of its models to land on: taking c of that free
// capacity F_s denies it c/F_s of its future demand. Shapes that may go
// anywhere cost the same wherever the pod goes, so they do not count.
// It is computed for every group at once, once per fleet state.
func (r *Fragmentation) reserveOf(f *topology.Fleet, g topology.GroupID) float64 {
	if len(r.groups[g].boundTo) == 0 {
		return 0
	}
	if r.reserveAt != f.Changes() || r.weightAt != r.weights || len(r.reserve) != len(r.groups) {
		r.reserveAt, r.weightAt = f.Changes(), r.weights
		r.reserve = append(r.reserve[:0], make([]float64, len(r.groups))...)
		fleetFree := freeMilli(f, topology.AllGroups)
		for i := range r.sets {
			set := &r.sets[i]
			var free float64
			for _, h := range set.groups {
				free += freeMilli(f, h)
			}
			cost := set.weight * fleetFree / max(free, topology.MilliGPU)
			for _, h := range set.groups {
				r.reserve[h] += cost
			}
		}
	}
	return r.reserve[g]
}

// freeMilli is the free GPU capacity of group g in thousandths.
func freeMilli(f *topology.Fleet, g topology.GroupID) float64 {
	return float64(int64(f.Stats(topology.Root, g).GPUs)*topology.MilliGPU - f.MilliAllocated(topology.Root, g))
}

// derive lays the shapes out for fleet f when a shape arrived or the
// fleet changed since the last Rank: each shape's weight per pod, the
// groups that accept it, its resources by position.
func (r *Fragmentation) derive(f *topology.Fleet) {
	if r.derived && r.fleet == f {
		return
	}
	r.fleet, r.derived = f, true
	r.weights++
	r.rids = r.rids[:0]
	r.sets = r.sets[:0]
	r.wAll = 0
	ng := f.NumGroups()
	r.groups = slices.Grow(r.groups[:0], ng)[:ng]
	for g := range r.groups {
		r.groups[g] = fragGroup{}
	}
	// The measured resources: those the shapes name and the fleet has,
	// at most fragResources of them, in resource ID order.
	for i := range r.shapes {
		for _, res := range r.shapes[i].resources {
			if id, ok := f.Resource(res.Name); ok && int(id) < fragResources && !slices.Contains(r.rids, id) {
				r.rids = append(r.rids, id)
			}
		}
	}
	slices.Sort(r.rids)
	fleetGPUs := f.Stats(topology.Root, topology.AllGroups).GPUs
	groupGPUs := make([]int, ng)
	for g := range groupGPUs {
		groupGPUs[g] = f.Stats(topology.Root, topology.GroupID(g)).GPUs
	}
	// Shares ascending (then arrival) so that Rank reads the partly used
	// GPUs smaller than each share with one moving cursor.
	order := make([]int, len(r.shapes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.shapes[a].share, r.shapes[b].share) })
	for _, i := range order {
		s := &r.shapes[i]
		s.unit, s.set, s.slots, s.never = 0, -1, s.slots[:0], false
		demand := s.k*topology.MilliGPU + s.share
		if demand == 0 {
			continue // a pod without GPUs leaves no GPU unusable by itself
		}
		s.need = append(s.need[:0], make([]int64, len(r.rids))...)
		for _, res := range s.resources {
			id, ok := f.Resource(res.Name)
			if !ok {
				s.never = true
				continue
			}
			if at := slices.Index(r.rids, id); at >= 0 {
				s.need[at] = res.Amount
			}
		}
		supply := 0
		for g := range ng {
			if s.models == nil || slices.Contains(s.models, f.GroupFlavor(topology.GroupID(g))) {
				supply += groupGPUs[g]
			}
		}
		if supply == 0 {
			continue // it fits nowhere: the same on every node
		}
		s.unit = float64(fleetGPUs) / float64(supply)
		weight := s.count * s.unit
		r.wAll += weight
		if s.models != nil && supply < fleetGPUs {
			s.set = r.setOf(f, s.models)
			r.sets[s.set].weight += s.reserveWeight(s.count)
		}
		if s.never {
			continue
		}
		for g := range ng {
			if s.models != nil && !slices.Contains(s.models, f.GroupFlavor(topology.GroupID(g))) {
				continue
			}
			// Shapes that differ only in the models they accept are one
			// entry on a group that both accept.
			fg := &r.groups[g]
			R := len(r.rids)
			if s.k > 0 {
				at := fg.find(fg.k, fg.kneed, int32(s.k), s.need, R)
				if at < 0 {
					at = len(fg.k)
					fg.k, fg.kw = append(fg.k, int32(s.k)), append(fg.kw, 0)
					fg.kneed = append(fg.kneed, s.need...)
				}
				fg.kw[at] += weight
				s.slots = append(s.slots, fragSlot{g: topology.GroupID(g), at: int32(at)})
			} else {
				at := fg.find(fg.sh, fg.shneed, int32(s.share), s.need, R)
				if at < 0 {
					at = len(fg.sh)
					fg.sh, fg.sw = append(fg.sh, int32(s.share)), append(fg.sw, 0)
					fg.shneed = append(fg.shneed, s.need...)
				}
				fg.sw[at] += weight
				s.slots = append(s.slots, fragSlot{g: topology.GroupID(g), share: true, at: int32(at)})
			}
		}
	}
	for i := range r.sets {
		for _, g := range r.sets[i].groups {
			r.groups[g].boundTo = append(r.groups[g].boundTo, int32(i))
		}
	}
}

// find is the entry of GPU form x (GPUs or share) and resources need
// among forms and needs (R amounts each), or -1. Entries of one form
// are adjacent for shares (they come in share order); derive is the
// only caller, so a scan is fine.
func (fg *fragGroup) find(forms []int32, needs []int64, x int32, need []int64, R int) int {
	for i := len(forms) - 1; i >= 0; i-- {
		if forms[i] == x && slices.Equal(needs[i*R:i*R+R], need) {
			return i
		}
	}
	return -1
}

// setOf is the index of the bound model set models, added if new.
func (r *Fragmentation) setOf(f *topology.Fleet, models []string) int {
	for i := range r.sets {
		if slices.Equal(r.sets[i].models, models) {
			return i
		}
	}
	set := fragSet{models: models}
	for g := range topology.GroupID(f.NumGroups()) {
		if slices.Contains(models, f.GroupFlavor(g)) {
			set.groups = append(set.groups, g)
		}
	}
	r.sets = append(r.sets, set)
	return len(r.sets) - 1
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
	for i, id := range r.rids {
		st.res[i] = f.ResourceFree(n, id)
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

// usable is, for the node before and after the pod, what the shapes
// that fit there can use of its free GPU capacity, weighted: a
// whole-GPU shape the whole-free GPUs, a share the GPUs with at least
// the share left (none when it fits nowhere on the node). The node's
// expected fragmentation, summed over the mix with each shape weighted
// by its frequency, is its free capacity times the weight of every shape
// less this: for each shape, the free capacity
// pods of the shape cannot use there (all of it when the shape does not
// fit the node, for its model, GPUs or resources; else, for whole-GPU
// shapes, every partly used GPU, and for shares, the partly used GPUs
// with less left than the share). One pass serves both states.
func (r *Fragmentation) usable(b, a *fragNode) (ub, ua float64) {
	g := &r.groups[b.group]
	R := len(r.rids)
	if b.whole > 0 {
		var kb, ka float64
		for i, k := range g.k {
			if int(k) > b.whole {
				continue
			}
			need := g.kneed[i*R : i*R+R]
			hb, ha := true, int(k) <= a.whole
			for x, n := range need {
				hb = hb && b.res[x] >= n
				ha = ha && a.res[x] >= n
			}
			if hb {
				kb += g.kw[i]
			}
			if ha {
				ka += g.kw[i]
			}
		}
		ub += kb * float64(b.whole*topology.MilliGPU)
		ua += ka * float64(a.whole*topology.MilliGPU)
	}
	// big is the free capacity on GPUs with at least the share left:
	// the whole-free GPUs and the parts from the cursor on.
	bigB, bigA, jb, ja := b.total, a.total, 0, 0
	for i, sh := range g.sh {
		for jb < b.np && int(b.parts[jb]) < int(sh) {
			bigB -= int(b.parts[jb])
			jb++
		}
		for ja < a.np && int(a.parts[ja]) < int(sh) {
			bigA -= int(a.parts[ja])
			ja++
		}
		if bigB == 0 && bigA == 0 {
			break
		}
		need := g.shneed[i*R : i*R+R]
		hb, ha := true, true
		for x, n := range need {
			hb = hb && b.res[x] >= n
			ha = ha && a.res[x] >= n
		}
		if hb {
			ub += g.sw[i] * float64(bigB)
		}
		if ha {
			ua += g.sw[i] * float64(bigA)
		}
	}
	return ub, ua
}
