package topology

// A batch of changes carries its differences into the ordered indexes
// once per domain and node when it ends, rather than once per change: a
// plan that frees eight whole nodes of one leaf moves the leaf and its
// spine in the indexes by free nodes and free GPUs once, not eight times.

// batch is the state of Fleet.Batch while it runs.
type batch struct {
	on bool
	// Per (domain, group): marked once its index keys are recorded;
	// doms lists them with the keys they had when the batch began.
	marked []bool
	doms   []batchDomain
	// Per node: marked once its key in nodesByFree is recorded.
	nodeMarked []bool
	nodes      []batchNode
}

type batchDomain struct {
	d                DomainID
	g                GroupID
	level            int
	freeNodes, freeG int32
}

type batchNode struct {
	n      NodeID
	bucket int32
}

// Batch runs fn, whose changes of f (Allocate, Release and the like) keep
// every per-node and per-domain figure exact as they go, and carries
// them into the ordered indexes (domains by free nodes and free GPUs,
// nodes by free GPUs) when fn returns or panics, each key once. While
// fn runs, the fleet's ordered look-ups (AscendDomainsByFreeNodes,
// AscendNodesByFree and the like) may answer from the state before the
// batch: fn must not call them. Batches do not nest: an inner Batch
// runs its fn inside the outer one.
func (f *Fleet) Batch(fn func()) {
	if f.batch != nil && f.batch.on {
		fn()
		return
	}
	if f.batch == nil {
		f.batch = &batch{}
	}
	b := f.batch
	b.on = true
	defer f.endBatch()
	fn()
}

// noteDomain records domain d's keys in group g's indexes of level l
// before the batch's first change there.
func (f *Fleet) noteDomain(l int, g GroupID, d DomainID, old aggregate) {
	b := f.batch
	i := int(d)*len(f.groups) + int(g)
	if len(b.marked) <= i {
		b.marked = append(b.marked, make([]bool, len(f.dom)*len(f.groups)-len(b.marked))...)
	}
	if b.marked[i] {
		return
	}
	b.marked[i] = true
	b.doms = append(b.doms, batchDomain{d: d, g: g, level: l, freeNodes: old.freeNodes, freeG: old.free})
}

// noteNode records node n's free-GPU bucket before the batch's first
// change of it.
func (f *Fleet) noteNode(n NodeID, bucket int32) {
	b := f.batch
	if len(b.nodeMarked) <= int(n) {
		b.nodeMarked = append(b.nodeMarked, make([]bool, len(f.ncap)-len(b.nodeMarked))...)
	}
	if b.nodeMarked[n] {
		return
	}
	b.nodeMarked[n] = true
	b.nodes = append(b.nodes, batchNode{n: n, bucket: bucket})
}

// endBatch moves every key the batch changed from its value when the
// batch began to its value now.
func (f *Fleet) endBatch() {
	b := f.batch
	b.on = false
	for _, x := range b.doms {
		b.marked[int(x.d)*len(f.groups)+int(x.g)] = false
		s := int(x.g)
		if f.slots == 1 {
			s = 0
		}
		a := &f.agg[int(x.d)*f.slots+s]
		if x.freeNodes != a.freeNodes {
			t := f.byFreeNodes[x.level][x.g]
			t.Delete(key(x.freeNodes, int32(x.d)))
			t.ReplaceOrInsert(key(a.freeNodes, int32(x.d)))
		}
		if x.freeG != a.free {
			t := f.byFreeGPUs[x.level][x.g]
			t.Delete(key(x.freeG, int32(x.d)))
			t.ReplaceOrInsert(key(a.free, int32(x.d)))
		}
	}
	b.doms = b.doms[:0]
	for _, x := range b.nodes {
		b.nodeMarked[x.n] = false
		now := f.contrib(x.n).bucket
		if now == x.bucket {
			continue
		}
		t := f.nodesByFree[f.ngroup[x.n]]
		if x.bucket > 0 {
			t.Delete(key(x.bucket, int32(x.n)))
		}
		if now > 0 {
			t.ReplaceOrInsert(key(now, int32(x.n)))
		}
	}
	b.nodes = b.nodes[:0]
}
