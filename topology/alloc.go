package topology

// contribution is what one node adds to the aggregates of every domain
// above it. Only healthy nodes offer free capacity.
type contribution struct {
	healthyNodes, freeNodes, healthyGPUs, free, alloc, stranded int32
	bucket                                                      int32 // histogram bucket, -1 if not healthy
}

func (f *Fleet) contrib(n NodeID) contribution {
	c := contribution{alloc: f.nalloc[n], bucket: -1}
	if f.nhealth[n] != Healthy {
		return c
	}
	free := f.ncap[n] - f.nalloc[n]
	c.healthyNodes, c.healthyGPUs, c.free, c.bucket = 1, f.ncap[n], free, free
	switch {
	case free == f.ncap[n]:
		c.freeNodes = 1
	case free > 0:
		// Free GPUs on a partly used node cannot join a whole-node gang.
		c.stranded = free
	}
	return c
}

func (a *aggregate) add(c contribution, sign int32) {
	a.healthyNodes += sign * c.healthyNodes
	a.freeNodes += sign * c.freeNodes
	a.healthyGPUs += sign * c.healthyGPUs
	a.free += sign * c.free
	a.alloc += sign * c.alloc
	a.stranded += sign * c.stranded
}

// Allocate takes gpus whole-free GPUs of node n, the lowest-numbered
// first. It refuses unknown nodes, down nodes and more GPUs than are
// whole-free, leaving the fleet unchanged. It does not refuse cordoned
// nodes: placement never picks them, but a host that adopts work already
// running there must be able to record it. A host that names GPUs uses
// AllocateClaim instead.
func (f *Fleet) Allocate(n NodeID, gpus int) error {
	if err := f.checkNode(n, gpus); err != nil {
		return err
	}
	if f.nhealth[n].Gone() {
		return &NodeError{Node: f.NodeName(n), Err: ErrNodeDown}
	}
	if free := int(f.ncap[n] - f.nalloc[n]); gpus > free {
		return &NodeError{Node: f.NodeName(n), Requested: gpus, Available: free, Err: ErrOverAlloc}
	}
	f.change(n, func() {
		left := gpus
		for g := int(f.gbase[n]); left > 0; g++ {
			if f.gpuFree(g) {
				f.setWhole(n, g, true)
				left--
			}
		}
	}, nil, 0)
	return nil
}

// Release returns gpus GPUs of node n held whole, the highest-numbered
// first. It refuses releasing more than are held whole there, leaving the
// fleet unchanged. Whole GPUs are interchangeable to it: a host that
// names GPUs releases them with ReleaseClaim.
func (f *Fleet) Release(n NodeID, gpus int) error {
	if err := f.checkNode(n, gpus); err != nil {
		return err
	}
	if held := f.WholeHeld(n); gpus > held {
		return &NodeError{Node: f.NodeName(n), Requested: gpus, Available: held, Err: ErrOverRelease}
	}
	f.change(n, func() {
		left := gpus
		for g := int(f.gbase[n+1]) - 1; left > 0; g-- {
			if f.gwhole[g] {
				f.setWhole(n, g, false)
				left--
			}
		}
	}, nil, 0)
	return nil
}

// WholeHeld is the number of node n's GPUs held whole.
func (f *Fleet) WholeHeld(n NodeID) int {
	c := 0
	for g := f.gbase[n]; g < f.gbase[n+1]; g++ {
		if f.gwhole[g] {
			c++
		}
	}
	return c
}

func (f *Fleet) setWhole(n NodeID, g int, held bool) {
	// Allocate and Release move a GPU between whole-free and held whole,
	// and neither state is in the indexes of partly used GPUs (see
	// sharedKey): unlike setGPU, nothing to take out or put back there.
	was := !f.gpuFree(g)
	f.gwhole[g], f.gused[g], f.gmig[g] = held, 0, 0
	if held {
		f.gused[g] = MilliGPU
		if f.nmig[n] >= 0 {
			f.gmig[g] = migFull
		}
	}
	now := !f.gpuFree(g)
	switch {
	case now && !was:
		f.nalloc[n]++
	case was && !now:
		f.nalloc[n]--
	}
	f.noteFree(n, g, !now)
}

// SetHealth changes node n's health. Allocations stay recorded whatever
// the health: the host releases them as the workloads on the node end.
func (f *Fleet) SetHealth(n NodeID, h Health) error {
	if n < 0 || int(n) >= len(f.ncap) {
		return &NodeError{Node: fmtID(n), Err: ErrUnknownNode}
	}
	if !h.Valid() {
		return &NodeError{Node: f.NodeName(n), Err: ErrInvalidSpec}
	}
	if h != f.nhealth[n] {
		f.change(n, func() {
			for g := int(f.gbase[n]); g < int(f.gbase[n+1]); g++ {
				f.indexGPU(n, g, false)
			}
			f.nhealth[n] = h
			for g := int(f.gbase[n]); g < int(f.gbase[n+1]); g++ {
				f.indexGPU(n, g, true)
			}
		}, nil, 0)
	}
	return nil
}

func (f *Fleet) checkNode(n NodeID, gpus int) error {
	if n < 0 || int(n) >= len(f.ncap) {
		return &NodeError{Node: fmtID(n), Err: ErrUnknownNode}
	}
	if gpus <= 0 {
		return &NodeError{Node: f.NodeName(n), Requested: gpus, Err: ErrBadAmount}
	}
	return nil
}

// change applies fn, a change of node n's GPUs or health, and res, taken
// (sign 1) or returned (sign -1), then carries the difference up to every
// ancestor and into the ordered indexes: O(depth x log n), no allocation
// in steady state.
func (f *Fleet) change(n NodeID, fn func(), res []ResourceAmount, sign int64) {
	f.changes++
	before := f.contrib(n)
	oldH := f.nhealth[n]
	oldMilli := f.MilliUsed(n)
	fn()
	R := len(f.rnames)
	for _, r := range res {
		f.ralloc[int(n)*R+int(r.Resource)] += sign * r.Amount
	}
	after := f.contrib(n)
	dMilli := int64(f.MilliUsed(n) - oldMilli)
	newH := f.nhealth[n]
	g := f.ngroup[n]
	base := int(n) * (f.depth + 1)
	s0, s1, ns := f.slotsOf(g)
	for l := 0; l <= f.depth; l++ {
		d := f.anc[base+l]
		for i := range ns {
			s := s0
			if i == 1 {
				s = s1
			}
			a := &f.agg[int(d)*f.slots+s]
			old := *a
			a.add(before, -1)
			a.add(after, 1)
			a.milli += dMilli
			hb := f.histBase(d, s)
			if before.bucket >= 0 {
				f.hist[hb+int(before.bucket)]--
			}
			if after.bucket >= 0 {
				f.hist[hb+int(after.bucket)]++
			}
			if R > 0 {
				f.changeResources(n, (int(d)*f.slots+s)*R, oldH, newH, res, sign)
			}
			if i == 0 && l >= 1 && l < f.depth {
				if f.batch != nil && f.batch.on {
					f.noteDomain(l, g, d, old)
					continue
				}
				if old.freeNodes != a.freeNodes {
					t := f.byFreeNodes[l][g]
					t.Delete(key(old.freeNodes, int32(d)))
					t.ReplaceOrInsert(key(a.freeNodes, int32(d)))
				}
				if old.free != a.free {
					t := f.byFreeGPUs[l][g]
					t.Delete(key(old.free, int32(d)))
					t.ReplaceOrInsert(key(a.free, int32(d)))
				}
			}
		}
	}
	if f.batch != nil && f.batch.on {
		f.noteNode(n, before.bucket)
		return
	}
	if before.bucket != after.bucket {
		t := f.nodesByFree[g]
		if before.bucket > 0 {
			t.Delete(key(before.bucket, int32(n)))
		}
		if after.bucket > 0 {
			t.ReplaceOrInsert(key(after.bucket, int32(n)))
		}
	}
}

// changeResources carries a change of node n's resources into one
// aggregate slot whose resource figures start at at: free amounts on
// healthy nodes.
func (f *Fleet) changeResources(n NodeID, at int, oldH, newH Health, res []ResourceAmount, sign int64) {
	R := len(f.rnames)
	switch {
	case oldH == Healthy && newH == Healthy:
		for _, r := range res {
			f.rfree[at+int(r.Resource)] -= sign * r.Amount
		}
	case oldH == Healthy || newH == Healthy:
		s := int64(1)
		if oldH == Healthy {
			s = -1
		}
		for r := range R {
			x := int(n)*R + r
			f.rfree[at+r] += s * (f.rcap[x] - f.ralloc[x])
		}
	}
}
