package preempt

import (
	"fmt"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Index is the persistent set of running workloads a victim search may
// choose from. The caller keeps it equal to what runs: Add when a
// workload starts, Update when it starts draining or checkpoints (or any
// field of its Running changes), Remove when it ends. Each change is
// validated once, here, and costs O(log n + nodes x depth) for the
// workload's nodes; a search then reads only what its decision needs.
//
// An Index belongs to the fleet and tree it was made for (their shape:
// nodes, domains, queues, flavors); rebuild it if they are rebuilt. It
// keeps the Running values it is given (their W and Nodes are shared, not
// copied): the caller must not change them in place without Update. It is
// not safe for concurrent use.
type Index struct {
	fleet *topology.Fleet // shape only: nodes, capacity, domains
	tree  *quota.Tree     // shape only: queues, flavors

	slot    map[string]int32 // ID -> position in entries
	entries []indexEntry
	vacant  []int32              // positions of removed entries, reused
	byID    *btree.BTreeG[int32] // positions, by ID
	held    []int32              // per node: GPUs held by indexed workloads
}

type indexEntry struct {
	run  Running
	gpus int
	live bool
}

// NewIndex returns an empty index for workloads on f and t.
func NewIndex(f *topology.Fleet, t *quota.Tree) *Index {
	x := &Index{fleet: f, tree: t, slot: map[string]int32{}, held: make([]int32, f.NumNodes())}
	x.byID = btree.NewG(32, func(a, b int32) bool { return x.entries[a].run.W.ID < x.entries[b].run.W.ID })
	return x
}

// Len is the number of indexed workloads.
func (x *Index) Len() int { return len(x.slot) }

// Get returns the indexed Running of id.
func (x *Index) Get(id string) (Running, bool) {
	i, ok := x.slot[id]
	if !ok {
		return Running{}, false
	}
	return x.entries[i].run, true
}

// Add indexes a workload that started. It is refused, with the index
// unchanged, when r is malformed (no spec or ID, unknown queue or
// flavor, a node entry out of range, without GPUs or beyond what the
// node can hold with the workloads already indexed there) or its ID is
// already indexed. Errors are *IndexError.
func (x *Index) Add(r Running) error {
	if r.W == nil || r.W.ID == "" {
		return &IndexError{Op: "add", Err: ErrInvalid, Detail: "running workload without spec or ID"}
	}
	if _, dup := x.slot[r.W.ID]; dup {
		return &IndexError{Op: "add", ID: r.W.ID, Err: ErrDuplicate}
	}
	if err := x.check("add", r, nil); err != nil {
		return err
	}
	x.insert(r)
	return nil
}

// Update replaces the indexed Running of r.W.ID: it started draining, it
// checkpointed, its class fields changed. It is refused, with the index
// unchanged, when the ID is not indexed or r is malformed (as for Add).
func (x *Index) Update(r Running) error {
	if r.W == nil || r.W.ID == "" {
		return &IndexError{Op: "update", Err: ErrInvalid, Detail: "running workload without spec or ID"}
	}
	i, ok := x.slot[r.W.ID]
	if !ok {
		return &IndexError{Op: "update", ID: r.W.ID, Err: ErrUnknownWorkload}
	}
	if err := x.check("update", r, &x.entries[i].run); err != nil {
		return err
	}
	x.delete(i)
	x.insert(r)
	return nil
}

// Remove forgets a workload that ended. It is refused when id is not
// indexed.
func (x *Index) Remove(id string) error {
	i, ok := x.slot[id]
	if !ok {
		return &IndexError{Op: "remove", ID: id, Err: ErrUnknownWorkload}
	}
	x.delete(i)
	return nil
}

// check validates r against the shapes, as if old (being replaced) were
// already gone.
func (x *Index) check(op string, r Running, old *Running) error {
	f, t, id := x.fleet, x.tree, r.W.ID
	if r.Queue < 0 || int(r.Queue) >= t.NumNodes() || !t.IsQueue(r.Queue) {
		return &IndexError{Op: op, ID: id, Err: ErrInvalid, Detail: "not a queue"}
	}
	if r.Flavor < 0 || int(r.Flavor) >= t.NumFlavors() {
		return &IndexError{Op: op, ID: id, Err: ErrInvalid, Detail: "unknown flavor"}
	}
	if len(r.Nodes) == 0 {
		return &IndexError{Op: op, ID: id, Err: ErrInvalid, Detail: "holds no GPUs"}
	}
	for j, n := range r.Nodes {
		if n.Node < 0 || int(n.Node) >= f.NumNodes() || n.GPUs <= 0 {
			return &IndexError{Op: op, ID: id, Err: ErrInvalid, Detail: fmt.Sprintf("bad node entry %d", j)}
		}
		for _, m := range r.Nodes[:j] {
			if m.Node == n.Node {
				return &IndexError{Op: op, ID: id, Err: ErrInvalid, Detail: "node " + f.NodeName(n.Node) + " listed twice"}
			}
		}
		held := int(x.held[n.Node]) + n.GPUs
		if old != nil {
			for _, m := range old.Nodes {
				if m.Node == n.Node {
					held -= m.GPUs
				}
			}
		}
		if held > f.Capacity(n.Node) {
			return &IndexError{Op: op, ID: id, Err: ErrInvalid,
				Detail: fmt.Sprintf("indexed workloads would hold %d GPUs on %s, above its %d", held, f.NodeName(n.Node), f.Capacity(n.Node))}
		}
	}
	return nil
}

func (x *Index) insert(r Running) {
	var i int32
	if k := len(x.vacant); k > 0 {
		i, x.vacant = x.vacant[k-1], x.vacant[:k-1]
	} else {
		i = int32(len(x.entries))
		x.entries = append(x.entries, indexEntry{})
	}
	x.entries[i] = indexEntry{run: r, gpus: gpusOf(r.Nodes), live: true}
	x.slot[r.W.ID] = i
	x.byID.ReplaceOrInsert(i)
	for _, n := range r.Nodes {
		x.held[n.Node] += int32(n.GPUs)
	}
}

func (x *Index) delete(i int32) {
	e := &x.entries[i]
	x.byID.Delete(i)
	delete(x.slot, e.run.W.ID)
	for _, n := range e.run.Nodes {
		x.held[n.Node] -= int32(n.GPUs)
	}
	*e = indexEntry{}
	x.vacant = append(x.vacant, i)
}

// ascend calls fn with every indexed workload in ID order.
func (x *Index) ascend(fn func(r *Running) bool) {
	x.byID.Ascend(func(i int32) bool { return fn(&x.entries[i].run) })
}
