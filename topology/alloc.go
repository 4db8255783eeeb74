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

// Allocate takes gpus free GPUs of node n. It refuses unknown nodes, down
// nodes and more GPUs than are free, leaving the fleet unchanged. It does
// not refuse cordoned nodes: placement never picks them, but a host that
// adopts work already running there must be able to record it.
func (f *Fleet) Allocate(n NodeID, gpus int) error {
	if err := f.checkNode(n, gpus); err != nil {
		return err
	}
	if f.nhealth[n] == Down {
		return &NodeError{Node: f.NodeName(n), Err: ErrNodeDown}
	}
	if free := int(f.ncap[n] - f.nalloc[n]); gpus > free {
		return &NodeError{Node: f.NodeName(n), Requested: gpus, Available: free, Err: ErrOverAlloc}
	}
	f.update(n, f.nalloc[n]+int32(gpus), f.nhealth[n])
	return nil
}

// Release returns gpus GPUs of node n. It refuses releasing more than is
// allocated there, leaving the fleet unchanged.
func (f *Fleet) Release(n NodeID, gpus int) error {
	if err := f.checkNode(n, gpus); err != nil {
		return err
	}
	if gpus > int(f.nalloc[n]) {
		return &NodeError{Node: f.NodeName(n), Requested: gpus, Available: int(f.nalloc[n]), Err: ErrOverRelease}
	}
	f.update(n, f.nalloc[n]-int32(gpus), f.nhealth[n])
	return nil
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
		f.update(n, f.nalloc[n], h)
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

// update applies a node's new state and carries the difference up to every
// ancestor and into the ordered indexes: O(depth x log n), no allocation in
// steady state.
func (f *Fleet) update(n NodeID, alloc int32, h Health) {
	before := f.contrib(n)
	f.nalloc[n], f.nhealth[n] = alloc, h
	after := f.contrib(n)
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
			hb := f.histBase(d, s)
			if before.bucket >= 0 {
				f.hist[hb+int(before.bucket)]--
			}
			if after.bucket >= 0 {
				f.hist[hb+int(after.bucket)]++
			}
			if i == 0 && l >= 1 && l < f.depth {
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
