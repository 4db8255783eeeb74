package preempt

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Index is the persistent set of running workloads a victim search may
// choose from. The caller keeps it equal to what runs: Add when a
// workload starts, Update when it starts draining or checkpoints (or any
// field of its Running changes), Remove when it ends. Each change is
// validated once, here, and costs O(log n + nodes x depth x fanout) for
// the workload's nodes; a search then reads only what its decision needs.
//
// It keeps, per queue and flavor, the candidates (workloads that are
// Preemptible or Draining) in the static part of the eviction order (see
// compareCandidates), and, like the topology's aggregates, per domain the
// candidate GPUs and the nodes they could free by priority band, and the
// cheapest priority at which a node could gain room for a pod of each
// size: the search bounds and prunes domains from these numbers and
// visits only the candidates of the domains it keeps.
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
	vacant  []int32 // positions of removed entries, reused

	// byQueue holds, per queue x flavor, the candidates in the static
	// eviction order; draining holds the draining workloads by ID (the
	// only ones a Claims may track).
	byQueue  []*btree.BTreeG[orderKey]
	draining *btree.BTreeG[orderKey]
	// queueBands: per queue x flavor, candidates and their GPUs by
	// priority; blocked: per queue x flavor, workloads that are not
	// candidates (the drain contract).
	queueBands [][]band
	blocked    []int32
	total      []int32 // per queue x flavor: every indexed workload

	onNode [][]int32 // per node: positions of the workloads holding GPUs there
	held   []int32   // per node: GPUs held by indexed workloads
	// splits counts the candidates offered in two parts (see indexEntry):
	// while there are none, no set can rank as a shrink.
	splits int

	// Per-domain aggregates, every level down to the nodes' own: see
	// nodeChanged.
	podSizes  int     // MaxGPUsPerNode: pod sizes 1..podSizes
	reach     []int32 // per node x GPUs a=1..podSizes: price to have a GPUs available
	firstSlot []int32 // per domain x pod size k: min over its nodes of the price of one more pod of k
	gpuBands  [][]band
	domQueues [][]band // per domain: candidates and their GPUs per queue slot (in prio)
	// runGPUs and runGPUFrom: per domain, the GPUs of candidates not
	// draining, and their sum of GPUs x unsavedFrom: DefaultCost's price
	// of all of them at now is at least runGPUs x (now + overhead) -
	// runGPUFrom (see Searcher.clearCost).
	runGPUs    []int64
	runGPUFrom []int64
	nodeBands  [][]band
	clearPrice []int32 // per node: price to free it whole (noPrice: never)
	maxClear   []int32 // per domain: highest clearPrice of its nodes, the price to free it whole
	// cellClear[d*levels+l], for d at level l or above: the lowest
	// maxClear among the domains of level l below d (d's own at its
	// level). A search that must clear a whole domain of level l walks
	// down from the root to the cheapest ones.
	cellClear []int32
	levels    int
	// uniform[l]: the node count of every domain of level l, or -1 when
	// they differ.
	uniform []int
	scratch []band // nodeChanged's sort buffer
	// lines, per node, and classes, per domain x class 0..podSizes, with
	// lineCount, per domain, the nodes in its classes: see cheapest.go.
	lines     []nodeLine
	classes   []*btree.BTreeG[lineKey]
	lineCount []int32
	// stale lists the nodes whose lines a checkpoint moved and that
	// are not refiled yet (staleAt marks them): only the cheapest-node
	// reads need the lines, and they refile them first (cheapest.go).
	stale   []topology.NodeID
	staleAt []bool
	heads   []float64 // CheapestNodesBound's buffer
	oldRow  []int32   // nodeChanged: the node's prices before the change
}

// A price is the highest priority that must be evicted; freePrice marks
// room that is (or will be, from draining work) free without evicting
// anyone new, noPrice room no eviction can make.
const (
	freePrice = math.MinInt32
	noPrice   = math.MaxInt32
)

type indexEntry struct {
	run  Running
	prio int32
	gpus int32
	// parts is set for a candidate offered in two parts (see parts); next
	// to what classify reads, in the same cache line.
	parts    *parts
	cand     bool     // Preemptible or Draining: the rules may make it a victim
	position int32    // in entries
	stored   orderKey // its key in byQueue, kept so that a spec changed in place is still found
	from     int64    // unsavedFrom when indexed, for the same reason
}

// parts divides a running candidate with pods above its minimum
// (Running.Shrinkable beyond Running.Keep), which is offered to the
// search in two parts, each with its own key in byQueue: its surplus,
// the pods it gives up first down to its minimum (pods, their GPUs per
// node in shrink), ranked as a shrink; and the rest of it (rest), ranked
// as the whole eviction it completes. Kept apart from indexEntry so that
// the entries every search walks stay small.
type parts struct {
	pods       []placement.Pod
	shrink     []placement.NodeGPUs
	rest       []placement.NodeGPUs
	shrinkGPUs int32
	storedRest orderKey // the rest's key in byQueue (stored is the surplus's)
}

// split reports whether the entry is offered in two parts.
func (e *indexEntry) split() bool { return e.parts != nil }

// shrinkGPUs is the GPUs of the entry's surplus, 0 when it has none.
func (e *indexEntry) shrinkGPUs() int32 {
	if e.parts == nil {
		return 0
	}
	return e.parts.shrinkGPUs
}

// splitSurplus divides a running candidate that can shrink into its
// surplus (for each pod set, its shrinkable pods in the order it gives
// them up, all but the Keep it must keep) and the rest.
func (e *indexEntry) splitSurplus() {
	r := &e.run
	if r.Draining || !e.cand || len(r.Shrinkable) == 0 {
		return
	}
	give := make([]int, len(r.Keep))
	for _, p := range r.Shrinkable {
		give[p.PodSet]++
	}
	for i, k := range r.Keep {
		give[i] -= k
	}
	var pods []placement.Pod
	for _, p := range r.Shrinkable {
		if give[p.PodSet] > 0 {
			give[p.PodSet]--
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return
	}
	p := &parts{pods: pods, shrink: placement.Assignment{Pods: pods}.NodeGPUs(), rest: slices.Clone(r.Nodes)}
	for _, x := range p.shrink {
		p.rest = takeFrom(p.rest, x.Node, x.GPUs)
		p.shrinkGPUs += int32(x.GPUs)
	}
	p.rest = slices.DeleteFunc(p.rest, func(x placement.NodeGPUs) bool { return x.GPUs == 0 })
	e.parts = p
}

// orderKey is an entry's place in the static eviction order: band packs
// criterion 1 (draining first), 4 (lower priority first) and 5 (a
// shrink before a whole eviction) of compareCandidates; within a band
// the search orders by cost, then ID (see queueStream), helped, for
// running work, by its GPUs and the start of its unsaved work, latest
// first (from), which order DefaultCost within one GPU count whatever
// now is. Draining work has neither: it costs nothing to DefaultCost,
// and its band is ordered by ID. An entry offered in two parts has a key
// for each: the surplus in its priority's shrink band, the rest in its
// whole band, each with the GPUs of its part.
type orderKey struct {
	band uint64
	gpus int32
	from int64 // the start of unsaved work since the Unix epoch (saturating), latest first
	id   string
	pos  int32
}

func keyLess(a, b orderKey) bool {
	if a.band != b.band {
		return a.band < b.band
	}
	if a.gpus != b.gpus {
		return a.gpus < b.gpus
	}
	if a.from != b.from {
		return a.from > b.from
	}
	return a.id < b.id
}

// packBand orders draining work first, then by priority, then shrinks
// before whole evictions (whole: bit 0).
func packBand(draining bool, prio int32, whole bool) uint64 {
	b := uint64(uint32(prio)^1<<31) << 1
	if whole {
		b |= 1
	}
	if !draining {
		b |= runningBand
	}
	return b
}

// runningBand is the first band of running work: draining work's bands
// are below it.
const runningBand = 1 << 33

// band is a count of workloads, and their GPUs, at one priority.
type band struct {
	prio int32
	n    int32
	gpus int32
}

func addBand(bs []band, prio, n, gpus int32) []band {
	i, found := slices.BinarySearchFunc(bs, prio, func(b band, p int32) int {
		switch {
		case b.prio < p:
			return -1
		case b.prio > p:
			return 1
		}
		return 0
	})
	if !found {
		return slices.Insert(bs, i, band{prio: prio, n: n, gpus: gpus})
	}
	bs[i].n += n
	bs[i].gpus += gpus
	if bs[i].n == 0 {
		return slices.Delete(bs, i, i+1)
	}
	return bs
}

// NewIndex returns an empty index for workloads on f and t.
func NewIndex(f *topology.Fleet, t *quota.Tree) *Index {
	nq := t.NumNodes() * t.NumFlavors()
	c := f.MaxGPUsPerNode()
	x := &Index{
		fleet: f, tree: t, slot: map[string]int32{},
		byQueue:    make([]*btree.BTreeG[orderKey], nq),
		draining:   btree.NewG(16, keyLess),
		queueBands: make([][]band, nq), blocked: make([]int32, nq), total: make([]int32, nq),
		onNode: make([][]int32, f.NumNodes()), held: make([]int32, f.NumNodes()),
		podSizes: c, reach: make([]int32, f.NumNodes()*c), firstSlot: make([]int32, f.NumDomains()*c),
		gpuBands: make([][]band, f.NumDomains()), nodeBands: make([][]band, f.NumDomains()),
		domQueues: make([][]band, f.NumDomains()),
		runGPUs:   make([]int64, f.NumDomains()), runGPUFrom: make([]int64, f.NumDomains()),
		clearPrice: make([]int32, f.NumNodes()), maxClear: make([]int32, f.NumDomains()),
		levels: f.Depth() + 1, cellClear: make([]int32, f.NumDomains()*(f.Depth()+1)),
		uniform: make([]int, f.Depth()+1),
		lines:   make([]nodeLine, f.NumNodes()), classes: make([]*btree.BTreeG[lineKey], f.NumDomains()*(c+1)),
		lineCount: make([]int32, f.NumDomains()), staleAt: make([]bool, f.NumNodes()),
	}
	for n := range x.lines {
		x.lines[n].a = -1
	}
	for l := range topology.Level(f.Depth() + 1) {
		lo, hi := f.DomainsAt(l)
		for d := lo; d < hi; d++ {
			nlo, nhi := f.Nodes(d)
			switch n := int(nhi - nlo); {
			case d == lo:
				x.uniform[l] = n
			case n != x.uniform[l]:
				x.uniform[l] = -1
			}
			if x.uniform[l] < 0 {
				break
			}
		}
	}
	for i := range x.clearPrice {
		x.clearPrice[i] = noPrice
	}
	// Every node starts empty: its room is free up to its capacity.
	for n := range topology.NodeID(f.NumNodes()) {
		p := x.nodePrices(n)
		x.lineChanged(n)
		if p != noPrice {
			for d, ok := f.NodeDomain(n), true; ok; d, ok = f.Parent(d) {
				x.nodeBands[d] = addBand(x.nodeBands[d], p, 1, 0)
			}
		}
	}
	for d := topology.DomainID(f.NumDomains() - 1); d >= 0; d-- {
		if lo, hi := f.Children(d); lo < hi {
			x.minOverChildren(d)
		}
		x.cellClearOf(d)
	}
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
// flavor, no node, a node entry out of range, listed twice, without GPUs
// or beyond what the node can hold with the workloads already indexed
// there) or its ID is already indexed. Errors are *IndexError.
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
	if e := &x.entries[i]; e.sameRoom(r) {
		x.rebase(i, r)
		return nil
	}
	x.delete(i)
	x.insert(r)
	return nil
}

// Checkpointed files workload id again after its spec's
// Drain.LastCheckpoint moved (the spec the Index shares with the host's
// Running): nothing else of it changed, so only its place in the
// eviction order and its unsaved work move, as an Update would move
// them. It is refused when id is not indexed.
func (x *Index) Checkpointed(id string) error {
	i, ok := x.slot[id]
	if !ok {
		return &IndexError{Op: "checkpoint", ID: id, Err: ErrUnknownWorkload}
	}
	x.rebase(i, x.entries[i].run)
	return nil
}

// sameRoom reports whether r changes nothing the per-node prices count:
// its queue, flavor, priority, nodes and GPUs, whether it is a candidate
// or draining, and the pods it may shrink by (so its parts stay as they
// are). A checkpoint is such a change: it moves only the start of the
// unsaved work.
func (e *indexEntry) sameRoom(r Running) bool {
	o := &e.run
	return r.Queue == o.Queue && r.Flavor == o.Flavor && r.W.Priority == e.prio && r.Draining == o.Draining &&
		(r.Preemptible || r.Draining) == e.cand && slices.Equal(r.Nodes, o.Nodes) &&
		slices.EqualFunc(r.Shrinkable, o.Shrinkable, samePod) && slices.Equal(r.Keep, o.Keep)
}

// samePod reports whether a and b are the same pod in the same place.
func samePod(a, b placement.Pod) bool {
	return a.PodSet == b.PodSet && a.Index == b.Index && a.Node == b.Node && a.GPUs == b.GPUs &&
		a.GPUMask == b.GPUMask && a.GPU == b.GPU && a.Share == b.Share && a.MIG == b.MIG && a.Slice == b.Slice
}

// rebase replaces entry i by r when sameRoom holds: the index ends as
// delete(i) then insert(r) leave it, without pricing its nodes twice
// (their prices do not change), only its place in the eviction order,
// its domains' sums of unsaved work and its nodes' lines move (the
// lines when next read: see refile).
func (x *Index) rebase(i int32, r Running) {
	e := &x.entries[i]
	old := *e
	// The parts depend only on what sameRoom compares: they stay.
	*e = indexEntry{run: r, prio: old.prio, gpus: old.gpus, cand: old.cand, position: i, parts: old.parts}
	e.from = e.unsavedFrom()
	f := x.fleet
	if e.cand {
		qs := x.queueSlot(r.Queue, r.Flavor)
		x.byQueue[qs].Delete(old.stored)
		e.stored = e.key()
		if e.split() {
			x.byQueue[qs].Delete(e.parts.storedRest)
			e.parts.storedRest, e.stored = e.stored, e.shrinkKey()
			x.byQueue[qs].ReplaceOrInsert(e.parts.storedRest)
		}
		x.byQueue[qs].ReplaceOrInsert(e.stored)
	}
	for _, n := range r.Nodes {
		// The node lists in the order delete and insert leave them.
		list := x.onNode[n.Node]
		j := slices.Index(list, i)
		list[j] = list[len(list)-1]
		list[len(list)-1] = i
		if e.cand && !r.Draining {
			for d, ok := f.NodeDomain(n.Node), true; ok; d, ok = f.Parent(d) {
				x.runGPUFrom[d] += int64(n.GPUs) * (e.from - old.from)
			}
		}
	}
	for _, n := range r.Nodes {
		if !x.staleAt[n.Node] {
			x.staleAt[n.Node] = true
			x.stale = append(x.stale, n.Node)
		}
	}
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
	if err := checkShrinkable(r); err != "" {
		return &IndexError{Op: op, ID: id, Err: ErrInvalid, Detail: err}
	}
	return nil
}

func (x *Index) queueSlot(q quota.NodeID, fl quota.FlavorID) int {
	return int(q)*x.tree.NumFlavors() + int(fl)
}

// key is the entry's key, the rest's of one offered in two parts.
func (e *indexEntry) key() orderKey {
	k := orderKey{band: packBand(e.run.Draining, e.prio, true), id: e.run.W.ID, pos: e.position}
	if !e.run.Draining {
		from := e.run.Started
		if lc := e.run.W.Drain.LastCheckpoint; lc.After(from) {
			from = lc
		}
		k.gpus, k.from = e.gpus-e.shrinkGPUs(), int64(from.Sub(time.Unix(0, 0)))
	}
	return k
}

// shrinkKey is the key of the surplus of an entry offered in two parts.
func (e *indexEntry) shrinkKey() orderKey {
	k := e.key()
	k.band &^= 1
	k.gpus = e.shrinkGPUs()
	return k
}

// boundPrio is the priority the aggregates count an entry at: draining
// work is leaving anyway, so its room is as good as free for a bound.
func (e *indexEntry) boundPrio() int32 {
	if e.run.Draining {
		return freePrice
	}
	return e.prio
}

func (x *Index) insert(r Running) {
	var i int32
	if k := len(x.vacant); k > 0 {
		i, x.vacant = x.vacant[k-1], x.vacant[:k-1]
	} else {
		i = int32(len(x.entries))
		x.entries = append(x.entries, indexEntry{})
	}
	e := &x.entries[i]
	*e = indexEntry{run: r, prio: r.W.Priority, gpus: int32(gpusOf(r.Nodes)), cand: r.Preemptible || r.Draining, position: i}
	e.from = e.unsavedFrom()
	e.splitSurplus()
	x.slot[r.W.ID] = i
	qs := x.queueSlot(r.Queue, r.Flavor)
	x.total[qs]++
	if e.cand {
		if x.byQueue[qs] == nil {
			x.byQueue[qs] = btree.NewG(16, keyLess)
		}
		e.stored = e.key()
		x.byQueue[qs].ReplaceOrInsert(e.stored)
		if e.split() {
			e.parts.storedRest, e.stored = e.stored, e.shrinkKey()
			x.byQueue[qs].ReplaceOrInsert(e.stored)
			x.splits++
		}
		x.queueBands[qs] = addBand(x.queueBands[qs], e.prio, 1, e.gpus)
	} else {
		x.blocked[qs]++
	}
	if r.Draining {
		x.draining.ReplaceOrInsert(orderKey{id: r.W.ID, pos: i})
	}
	for _, n := range r.Nodes {
		x.held[n.Node] += int32(n.GPUs)
		x.onNode[n.Node] = append(x.onNode[n.Node], i)
		if e.cand {
			x.addDomainGPUs(n.Node, qs, e, int32(n.GPUs))
		}
		x.nodeChanged(n.Node)
	}
}

func (x *Index) delete(i int32) {
	e := &x.entries[i]
	r := e.run
	qs := x.queueSlot(r.Queue, r.Flavor)
	x.total[qs]--
	if e.cand {
		x.byQueue[qs].Delete(e.stored)
		if e.split() {
			x.byQueue[qs].Delete(e.parts.storedRest)
			x.splits--
		}
		x.queueBands[qs] = addBand(x.queueBands[qs], e.prio, -1, -e.gpus)
	} else {
		x.blocked[qs]--
	}
	if r.Draining {
		x.draining.Delete(orderKey{id: r.W.ID, pos: i})
	}
	delete(x.slot, r.W.ID)
	for _, n := range r.Nodes {
		x.held[n.Node] -= int32(n.GPUs)
		list := x.onNode[n.Node]
		j := slices.Index(list, i)
		list[j] = list[len(list)-1]
		x.onNode[n.Node] = list[:len(list)-1]
		if e.cand {
			x.addDomainGPUs(n.Node, qs, e, -int32(n.GPUs))
		}
	}
	*e = indexEntry{}
	for _, n := range r.Nodes {
		x.nodeChanged(n.Node)
	}
	x.vacant = append(x.vacant, i)
}

// addDomainGPUs counts gpus candidate GPUs of queue slot qs at priority
// p on n in every domain above it.
func (x *Index) addDomainGPUs(n topology.NodeID, qs int, e *indexEntry, gpus int32) {
	f := x.fleet
	p := e.boundPrio()
	from := e.from
	for d, ok := f.NodeDomain(n), true; ok; d, ok = f.Parent(d) {
		x.gpuBands[d] = addBand(x.gpuBands[d], p, sign(gpus), gpus)
		x.domQueues[d] = addBand(x.domQueues[d], int32(qs), sign(gpus), gpus)
		if !e.run.Draining {
			x.runGPUs[d] += int64(gpus)
			x.runGPUFrom[d] += int64(gpus) * from
		}
	}
}

// unsavedFrom is the start of the entry's unsaved work (its start or last
// checkpoint, as gang.DrainContract.Unsaved counts it), in Unix seconds
// rounded up: DefaultCost's price of work since then is at least its GPUs
// x (now, rounded down, - this + overhead).
//
// A start before 1970 counts from 1970: Unsaved saturates some 292 years
// after the start, and work started at the zero time (a Started left
// unset) would otherwise be counted two thousand years, above what
// DefaultCost charges, and the bounds built from this would be no lower
// bounds. From 1970 they are, for every now up to 2262 (Unsaved's
// saturation after 1970).
func (e *indexEntry) unsavedFrom() int64 {
	from := e.run.Started
	if lc := e.run.W.Drain.LastCheckpoint; lc.After(from) {
		from = lc
	}
	sec := from.Unix()
	if from.Nanosecond() > 0 {
		sec++
	}
	return max(sec, 0)
}

// holds reports whether domain d has candidates of a queue keep accepts.
func (x *Index) holds(d topology.DomainID, keep func(queueSlot int) bool) bool {
	for _, b := range x.domQueues[d] {
		if keep(int(b.prio)) {
			return true
		}
	}
	return false
}

func sign(v int32) int32 {
	if v < 0 {
		return -1
	}
	return 1
}

// nodeChanged recomputes node n's prices and carries them up its
// domains. reach[n][a] is the lowest priority P such that the node's
// room not held by indexed work plus its candidates of priority P or
// less (draining ones counting as free) reach a GPUs; firstSlot[n][k] is
// reach at the next multiple of k above that room, the price of room for
// one more pod of k; clearPrice is reach at the node's capacity. Room
// not held by indexed work may be held by others (GPUs reserved for a
// nomination), so these are lower bounds, exact when the index holds all
// that is allocated.
func (x *Index) nodeChanged(n topology.NodeID) {
	f, c := x.fleet, x.podSizes
	nd := f.NodeDomain(n)
	oldClear := x.clearPrice[n]
	x.oldRow = append(x.oldRow[:0], x.firstSlot[int(nd)*c:int(nd)*c+c]...)
	newClear := x.nodePrices(n)
	x.lineChanged(n)
	x.cellClearOf(nd)
	// The minimums above change only while a domain's own do: stop
	// carrying them up at the first domain left as it was.
	carry := newClear != oldClear || !slices.Equal(x.oldRow, x.firstSlot[int(nd)*c:int(nd)*c+c])
	for d, ok := nd, true; ok; d, ok = f.Parent(d) {
		if oldClear != newClear {
			if oldClear != noPrice {
				x.nodeBands[d] = addBand(x.nodeBands[d], oldClear, -1, 0)
			}
			if newClear != noPrice {
				x.nodeBands[d] = addBand(x.nodeBands[d], newClear, 1, 0)
			}
		}
		if d != nd && carry {
			carry = x.minOverChildren(d)
			carry = x.cellClearOf(d) || carry
		}
	}
}

// nodePrices recomputes node n's reach, firstSlot and clearPrice, and
// returns the new clearPrice.
func (x *Index) nodePrices(n topology.NodeID) int32 {
	f, c := x.fleet, x.podSizes
	capacity := f.Capacity(n)
	room := int32(capacity) - x.held[n]
	cands := x.scratch[:0]
	for _, i := range x.onNode[n] {
		e := &x.entries[i]
		if !e.cand {
			continue
		}
		for _, ng := range e.run.Nodes {
			if ng.Node == n {
				cands = append(cands, band{prio: e.boundPrio(), gpus: int32(ng.GPUs)})
			}
		}
	}
	slices.SortFunc(cands, func(a, b band) int {
		switch {
		case a.prio < b.prio:
			return -1
		case a.prio > b.prio:
			return 1
		}
		return 0
	})
	x.scratch = cands
	reach := x.reach[int(n)*c : int(n)*c+c]
	avail, j := room, 0
	for a := int32(1); a <= int32(c); a++ {
		p := int32(freePrice)
		if a > room {
			for avail < a && j < len(cands) {
				avail += cands[j].gpus
				j++
			}
			switch {
			case avail < a || int(a) > capacity:
				p = noPrice
			default:
				p = cands[j-1].prio
			}
		}
		reach[a-1] = p
	}
	newClear := int32(noPrice)
	if capacity > 0 && capacity <= c {
		newClear = reach[capacity-1]
	}
	x.clearPrice[n] = newClear
	nd := f.NodeDomain(n)
	x.maxClear[nd] = newClear
	for k := 1; k <= c; k++ {
		next := (int(room)/k + 1) * k
		p := int32(noPrice)
		if room >= 0 && next <= capacity {
			p = reach[next-1]
		}
		x.firstSlot[int(nd)*c+k-1] = p
	}
	return newClear
}

// cellClearOf recomputes domain d's cellClear from its children's, and
// reports whether it changed.
func (x *Index) cellClearOf(d topology.DomainID) bool {
	f, lv := x.fleet, x.levels
	l := int(f.DomainLevel(d))
	row := x.cellClear[int(d)*lv : int(d)*lv+lv]
	changed := row[l] != x.maxClear[d]
	row[l] = x.maxClear[d]
	lo, hi := f.Children(d)
	for below := l + 1; below < lv; below++ {
		v := int32(noPrice)
		for ch := lo; ch < hi; ch++ {
			v = min(v, x.cellClear[int(ch)*lv+below])
		}
		changed = changed || row[below] != v
		row[below] = v
	}
	return changed
}

// minOverChildren recomputes domain d's firstSlot and maxClear from its
// children's, and reports whether they changed.
func (x *Index) minOverChildren(d topology.DomainID) bool {
	c := x.podSizes
	lo, hi := x.fleet.Children(d)
	mc := int32(freePrice)
	for ch := lo; ch < hi; ch++ {
		mc = max(mc, x.maxClear[ch])
	}
	changed := x.maxClear[d] != mc
	x.maxClear[d] = mc
	row := x.firstSlot[int(d)*c : int(d)*c+c]
	for k := range row {
		v := int32(noPrice)
		for ch := lo; ch < hi; ch++ {
			v = min(v, x.firstSlot[int(ch)*c+k])
		}
		changed = changed || row[k] != v
		row[k] = v
	}
	return changed
}
