package topology

import (
	"fmt"
	"math/bits"
)

// Per-GPU state. Every GPU of the fleet has a global index: node n's GPUs
// are gbase[n] .. gbase[n+1]-1. A GPU is whole-free (no use at all), held
// whole by one pod, shared by pods holding thousandths of it, or, on a MIG
// node, carved into slices. The node-level counts and every aggregate
// above count whole-free GPUs as free: a whole-GPU pod never lands on a
// GPU that anyone else uses.

// MilliGPU is one GPU in thousandths, the unit of shares.
const MilliGPU = 1000

// ResourceAmount is an amount of one named resource of the fleet.
type ResourceAmount struct {
	Resource ResourceID // the resource
	Amount   int64      // how much, in the resource's unit
}

// Claim is what one pod holds on one node: whole GPUs, or a share of one
// GPU, or a MIG slice of one GPU (or no GPU), and amounts of resources.
type Claim struct {
	Node NodeID // the node
	// Whole is the set of GPUs held whole, bit i for GPU i; only the
	// first 64 GPUs of a node can be named.
	Whole uint64
	// GPU is the GPU of a share or a MIG slice.
	GPU int
	// Share is the thousandths of GPU held there, (0, 1000]; 0 when the
	// claim holds no share. For a MIG slice it is ignored: the slice is
	// charged by its compute slices (MIGProfile.ShareAt).
	Share int
	// MIG names a MIG profile of the node's model ("" for none); the slice
	// starts at memory slice Slice.
	MIG   string
	Slice int
	// Resources lists amounts of the fleet's named resources.
	Resources []ResourceAmount
}

// MilliGPUs is what the claim takes of GPUs on fleet f, in thousandths.
func (c Claim) MilliGPUs(f *Fleet) int {
	n := bits.OnesCount64(c.Whole) * MilliGPU
	switch {
	case c.MIG != "":
		if p, ok := f.NodeMIGProfile(c.Node, c.MIG); ok {
			n += p.ShareAt(c.Slice)
		}
	case c.Share > 0:
		n += c.Share
	}
	return n
}

func (f *Fleet) gpuFree(g int) bool { return f.gused[g] == 0 && f.gmig[g] == 0 && !f.gwhole[g] }

// GPUUsed returns thousandths of GPU i of node n held by pods (1000 when
// held whole), and for a MIG GPU its occupied memory slices.
func (f *Fleet) GPUUsed(n NodeID, i int) (milli int, slices uint8) {
	g := int(f.gbase[n]) + i
	return int(f.gused[g]), f.gmig[g]
}

// GPUWhole reports whether GPU i of node n is held whole by one pod.
func (f *Fleet) GPUWhole(n NodeID, i int) bool { return f.gwhole[int(f.gbase[n])+i] }

// FreeMask returns the whole-free GPUs of node n among its first 64, bit
// i for GPU i, in O(1): the mask is kept with every change of a GPU.
func (f *Fleet) FreeMask(n NodeID) uint64 { return f.nfree[n] }

// lowBits is the mask of GPUs 0..k-1, at most the first 64.
func lowBits(k int) uint64 {
	if k >= 64 {
		return ^uint64(0)
	}
	return 1<<k - 1
}

// noteFree keeps node n's free mask in step with GPU g, whether or not
// it is whole-free now.
func (f *Fleet) noteFree(n NodeID, g int, free bool) {
	i := g - int(f.gbase[n])
	if i >= 64 {
		return
	}
	if free {
		f.nfree[n] |= 1 << i
	} else {
		f.nfree[n] &^= 1 << i
	}
}

// AllocateClaim takes what c holds on its node, all or nothing. It
// refuses, leaving the fleet unchanged: an unknown or down node, GPUs
// that are not whole-free for Whole, a share outside (0, 1000] or above
// what is left of its GPU, a share on a MIG GPU or a GPU held whole, a
// MIG profile the node's model lacks (ErrUnknownProfile) or slices
// already taken, an unknown resource (ErrUnknownResource), or more of a
// resource than is free. It does not allocate.
func (f *Fleet) AllocateClaim(c Claim) error {
	if err := f.checkClaim(c, true); err != nil {
		return err
	}
	f.applyClaim(c, 1)
	return nil
}

// ReleaseClaim returns what c holds, all or nothing: it refuses releasing
// GPUs, shares, slices or resources the node does not hold so.
func (f *Fleet) ReleaseClaim(c Claim) error {
	if err := f.checkClaim(c, false); err != nil {
		return err
	}
	f.applyClaim(c, -1)
	return nil
}

func (f *Fleet) checkClaim(c Claim, take bool) error {
	n := c.Node
	if n < 0 || int(n) >= len(f.ncap) {
		return &NodeError{Node: fmtID(n), Err: ErrUnknownNode}
	}
	name := f.NodeName(n)
	if take && f.nhealth[n].Gone() {
		return &NodeError{Node: name, Err: ErrNodeDown}
	}
	cap := int(f.ncap[n])
	base := int(f.gbase[n])
	if c.Whole != 0 && (cap < 64 && c.Whole>>cap != 0) {
		return &NodeError{Node: name, Detail: fmt.Sprintf("GPU mask %#x beyond %d GPUs", c.Whole, cap), Err: ErrBadGPUIndex}
	}
	for m := c.Whole; m != 0; m &= m - 1 {
		g := base + bits.TrailingZeros64(m)
		if take && !f.gpuFree(g) {
			return &NodeError{Node: name, Detail: fmt.Sprintf("GPU %d is in use", g-base), Err: ErrOverAlloc}
		}
		if !take && !f.gwhole[g] {
			return &NodeError{Node: name, Detail: fmt.Sprintf("GPU %d is not held whole", g-base), Err: ErrOverRelease}
		}
	}
	if c.MIG != "" || c.Share != 0 {
		if c.GPU < 0 || c.GPU >= cap {
			return &NodeError{Node: name, Detail: fmt.Sprintf("GPU %d of %d", c.GPU, cap), Err: ErrBadGPUIndex}
		}
		g := base + c.GPU
		if c.Whole&(1<<c.GPU) != 0 && c.GPU < 64 {
			return &NodeError{Node: name, Detail: fmt.Sprintf("GPU %d both whole and shared", c.GPU), Err: ErrBadShare}
		}
		if f.gwhole[g] {
			if take {
				return &NodeError{Node: name, Detail: fmt.Sprintf("GPU %d is held whole", c.GPU), Err: ErrOverAlloc}
			}
			return &NodeError{Node: name, Detail: fmt.Sprintf("GPU %d is held whole", c.GPU), Err: ErrOverRelease}
		}
		if c.MIG != "" {
			p, ok := f.NodeMIGProfile(n, c.MIG)
			if !ok {
				return &NodeError{Node: name, Detail: fmt.Sprintf("profile %q on %s", c.MIG, f.groups[f.ngroup[n]].flavor), Err: ErrUnknownProfile}
			}
			if c.Slice < 0 || c.Slice >= MIGSlices || p.Starts&(1<<c.Slice) == 0 {
				return &NodeError{Node: name, Detail: fmt.Sprintf("profile %s cannot start at slice %d", p.Name, c.Slice), Err: ErrUnknownProfile}
			}
			span := migSpan(p, c.Slice)
			if take && f.gmig[g]&span != 0 {
				return &NodeError{Node: name, Detail: fmt.Sprintf("GPU %d slices %#x taken", c.GPU, f.gmig[g]&span), Err: ErrOverAlloc}
			}
			if !take && (f.gmig[g]&span != span || int(f.gused[g]) < p.ShareAt(c.Slice)) {
				return &NodeError{Node: name, Detail: fmt.Sprintf("GPU %d slices %#x not held", c.GPU, span), Err: ErrOverRelease}
			}
		} else {
			if f.nmig[n] >= 0 {
				return &NodeError{Node: name, Detail: "a MIG GPU is shared by slices only", Err: ErrBadShare}
			}
			if c.Share < 0 || c.Share > MilliGPU {
				return &NodeError{Node: name, Detail: fmt.Sprintf("share %d thousandths", c.Share), Err: ErrBadShare}
			}
			if take && int(f.gused[g])+c.Share > MilliGPU {
				return &NodeError{Node: name, Requested: c.Share, Available: MilliGPU - int(f.gused[g]), Err: ErrOverAlloc}
			}
			if !take && int(f.gused[g]) < c.Share {
				return &NodeError{Node: name, Requested: c.Share, Available: int(f.gused[g]), Err: ErrOverRelease}
			}
		}
	}
	for i, r := range c.Resources {
		if r.Resource < 0 || int(r.Resource) >= len(f.rnames) {
			return &NodeError{Node: name, Detail: fmt.Sprintf("resource #%d", r.Resource), Err: ErrUnknownResource}
		}
		if r.Amount < 0 {
			return &NodeError{Node: name, Detail: fmt.Sprintf("%s %d", f.rnames[r.Resource], r.Amount), Err: ErrBadAmount}
		}
		sum := r.Amount // a claim may list a resource twice: count it once, in total
		for _, o := range c.Resources[:i] {
			if o.Resource == r.Resource {
				sum = -1
			}
		}
		if sum < 0 {
			continue
		}
		for _, o := range c.Resources[i+1:] {
			if o.Resource == r.Resource {
				sum += o.Amount
			}
		}
		x := int(n)*len(f.rnames) + int(r.Resource)
		if take && sum > f.rcap[x]-f.ralloc[x] {
			return &NodeError{Node: name, Detail: f.rnames[r.Resource], Requested: int(sum), Available: int(f.rcap[x] - f.ralloc[x]), Err: ErrOverAlloc}
		}
		if !take && sum > f.ralloc[x] {
			return &NodeError{Node: name, Detail: f.rnames[r.Resource], Requested: int(sum), Available: int(f.ralloc[x]), Err: ErrOverRelease}
		}
	}
	return nil
}

// applyClaim adds (sign 1) or removes (-1) a checked claim.
func (f *Fleet) applyClaim(c Claim, sign int) {
	n := c.Node
	base := int(f.gbase[n])
	f.change(n, func() {
		for m := c.Whole; m != 0; m &= m - 1 {
			g := base + bits.TrailingZeros64(m)
			f.setGPU(n, g, func() {
				f.gwhole[g] = sign > 0
				f.gused[g] = 0
				if sign > 0 {
					f.gused[g] = MilliGPU
				}
				if f.nmig[n] >= 0 {
					f.gmig[g] = 0
					if sign > 0 {
						f.gmig[g] = migFull
					}
				}
			})
		}
		switch {
		case c.MIG != "":
			p, _ := f.NodeMIGProfile(n, c.MIG)
			g := base + c.GPU
			f.setGPU(n, g, func() {
				f.gmig[g] ^= migSpan(p, c.Slice)
				f.gused[g] = uint16(int(f.gused[g]) + sign*p.ShareAt(c.Slice))
			})
		case c.Share > 0:
			g := base + c.GPU
			f.setGPU(n, g, func() { f.gused[g] = uint16(int(f.gused[g]) + sign*c.Share) })
		}
	}, c.Resources, int64(sign))
}

// setGPU applies one GPU's change and keeps the node's count of GPUs in
// use and the shared-GPU indexes exact.
func (f *Fleet) setGPU(n NodeID, g int, fn func()) {
	was := !f.gpuFree(g)
	f.indexGPU(n, g, false)
	fn()
	f.indexGPU(n, g, true)
	now := !f.gpuFree(g)
	switch {
	case now && !was:
		f.nalloc[n]++
	case was && !now:
		f.nalloc[n]--
	}
	f.noteFree(n, g, !now)
}

// sharedKey is the key of GPU g in its group's index of partly used GPUs:
// what is left of it (thousandths, or free MIG slices) and its global
// index. ok is false when the GPU belongs in no such index: whole-free,
// held whole, full, or on a node that is not healthy.
func (f *Fleet) sharedKey(n NodeID, g int) (key uint64, mig bool, ok bool) {
	if f.nhealth[n] != Healthy || f.gwhole[g] {
		return 0, false, false
	}
	if f.nmig[n] >= 0 {
		free := MIGSlices - bits.OnesCount8(f.gmig[g])
		return uint64(free)<<32 | uint64(g), true, f.gmig[g] != 0 && free > 0
	}
	left := MilliGPU - int(f.gused[g])
	return uint64(left)<<32 | uint64(g), false, f.gused[g] > 0 && left > 0
}

func (f *Fleet) indexGPU(n NodeID, g int, add bool) {
	k, mig, ok := f.sharedKey(n, g)
	if !ok {
		return
	}
	t := f.sharedByLeft[f.ngroup[n]]
	if mig {
		t = f.migByLeft[f.ngroup[n]]
	}
	if add {
		t.ReplaceOrInsert(k)
	} else {
		t.Delete(k)
	}
}

// AscendSharedGPUs calls fn for each partly shared GPU (not MIG) of a
// healthy node of group g with at least min thousandths left, in
// increasing order of what is left and then of node and GPU index, until
// fn returns false: the best-fit order for a share.
func (f *Fleet) AscendSharedGPUs(g GroupID, min int, fn func(n NodeID, gpu int, left int) bool) {
	f.sharedByLeft[g].AscendGreaterOrEqual(uint64(max(min, 1))<<32, func(k uint64) bool {
		gi := int(uint32(k))
		n := f.gnode[gi]
		return fn(n, gi-int(f.gbase[n]), int(k>>32))
	})
}

// AscendMIGGPUs calls fn for each partly carved MIG GPU of a healthy node
// of group g with at least min free memory slices, fewest free first.
func (f *Fleet) AscendMIGGPUs(g GroupID, min int, fn func(n NodeID, gpu int, freeSlices int) bool) {
	f.migByLeft[g].AscendGreaterOrEqual(uint64(max(min, 1))<<32, func(k uint64) bool {
		gi := int(uint32(k))
		n := f.gnode[gi]
		return fn(n, gi-int(f.gbase[n]), int(k>>32))
	})
}

// SharesThatFit counts the pods of share thousandths each that node n's
// GPUs could still take (on partly shared and whole-free GPUs), ignoring
// resources; 0 for a node that is not healthy or is MIG-partitioned.
func (f *Fleet) SharesThatFit(n NodeID, share int) int {
	if share <= 0 || f.nhealth[n] != Healthy || f.nmig[n] >= 0 {
		return 0
	}
	c := 0
	for g := f.gbase[n]; g < f.gbase[n+1]; g++ {
		if !f.gwhole[g] {
			c += (MilliGPU - int(f.gused[g])) / share
		}
	}
	return c
}

// SlicesThatFit counts the MIG instances of profile p that node n's GPUs
// could still take; 0 for a node that is not healthy or not MIG.
func (f *Fleet) SlicesThatFit(n NodeID, p MIGProfile) int {
	if f.nhealth[n] != Healthy || f.nmig[n] < 0 {
		return 0
	}
	c := 0
	for g := f.gbase[n]; g < f.gbase[n+1]; g++ {
		if !f.gwhole[g] {
			c += MIGFits(f.gmig[g], p)
		}
	}
	return c
}

// MilliUsed is the thousandths of GPU held on node n, shares, slices and
// whole GPUs together.
func (f *Fleet) MilliUsed(n NodeID) int {
	s := 0
	for g := f.gbase[n]; g < f.gbase[n+1]; g++ {
		s += int(f.gused[g])
	}
	return s
}
