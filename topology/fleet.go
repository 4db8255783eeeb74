package topology

import (
	"fmt"
	"maps"
	"slices"

	"github.com/google/btree"
)

// NodeID names a node by a small integer: 0..NumNodes()-1. Node IDs follow
// the tree (the nodes of any domain are a contiguous range), not Spec order.
type NodeID int32

// DomainID names a domain of any level by a small integer. Domain 0 is the
// whole fleet; nodes are domains too, at the deepest level.
type DomainID int32

// Level is a depth in the tree: 0 is the whole fleet, 1 the first level of
// the Spec, and Depth() the node level.
type Level int

// GroupID names one partition of the fleet by (flavor, pool). A gang runs
// inside one group: it never mixes GPU models or pools.
type GroupID int32

// AllGroups asks Stats for figures over every group together.
const AllGroups GroupID = -1

// Root is the domain of the whole fleet.
const Root DomainID = 0

// Health is a node's state. Only healthy nodes take new work; a cordoned
// node keeps what runs on it; a down node's capacity is gone; an absent
// node is out of service (declared, but not part of the fleet's capacity
// until it is brought in).
type Health uint8

const (
	// Healthy: in service; its free GPUs can be allocated.
	Healthy Health = iota
	// Cordoned: in service for the work it holds, allocating nothing new
	// (maintenance ahead).
	Cordoned
	// Down: lost; its capacity is gone and its work must be replaced or
	// ended.
	Down
	// Absent: out of service, holding nothing. A node whose NodeSpec says
	// Absent starts so; a host moves nodes in and out with SetHealth.
	Absent
)

// Valid reports whether h is one of the health states.
func (h Health) Valid() bool { return h <= Absent }

// Gone reports whether a node's capacity is gone: down or absent. Nothing
// can be allocated on it.
func (h Health) Gone() bool { return h == Down || h == Absent }

// String is the state's name, e.g. "cordoned".
func (h Health) String() string {
	switch h {
	case Healthy:
		return "healthy"
	case Cordoned:
		return "cordoned"
	case Down:
		return "down"
	case Absent:
		return "absent"
	}
	return fmt.Sprintf("Health(%d)", uint8(h))
}

type domain struct {
	name             string
	level            int32
	parent           DomainID
	childLo, childHi DomainID // children are a contiguous range of IDs
	nodeLo, nodeHi   NodeID   // so are the nodes below
}

type group struct{ flavor, pool string }

// aggregate holds one domain's figures for one group (or for all groups).
type aggregate struct {
	nodes, healthyNodes, freeNodes int32
	gpus, healthyGPUs, free, alloc int32
	stranded                       int32
	milli                          int64 // thousandths of GPU in use, any health
}

// Fleet is the live physical state of a fleet: its tree, each node's health
// and allocated GPUs, and per-domain aggregates kept exact in O(depth) per
// change. It holds no policy. It is not safe for concurrent use; Clone
// gives an independent copy for what-if simulations.
type Fleet struct {
	spec   Spec
	levels []string
	depth  int
	nvlink Level

	dom      []domain
	levelLo  []DomainID // levelLo[l] is the first domain of level l; len depth+2
	maxNodes []int32    // maxNodes[l] is the most nodes one domain of level l holds
	byName   []map[string]DomainID
	nodeBase DomainID

	ncap    []int32
	nalloc  []int32
	nhealth []Health
	ngroup  []GroupID
	nspec   []int32    // index into spec.Nodes
	anc     []DomainID // anc[n*(depth+1)+l] is node n's domain at level l

	groups  []group
	slots   int // aggregate slots per domain: one per group, plus "all" when several
	allSlot int
	maxGPUs int
	agg     []aggregate
	hist    []int32 // free-count histogram, (maxGPUs+1) buckets per slot

	// Ordered indexes, one per (level 1..depth-1, group): domains by free
	// whole nodes and by free GPUs; and, per group, healthy nodes with at
	// least one free GPU, by free GPUs. Keys pack (count<<32 | id).
	byFreeNodes [][]*btree.BTreeG[uint64]
	byFreeGPUs  [][]*btree.BTreeG[uint64]
	nodesByFree []*btree.BTreeG[uint64]
	batch       *batch // Batch's state; nil until the first batch

	// Per GPU (see gpu.go): node n's GPUs are gbase[n]..gbase[n+1]-1.
	gbase     []int32
	gnode     []NodeID
	gused     []uint16 // thousandths held: shares, slices, or 1000 when whole
	gmig      []uint8  // occupied memory slices of a MIG GPU
	gwhole    []bool   // held whole by one pod
	nfree     []uint64 // per node: its whole-free GPUs among the first 64, bit i for GPU i
	nmig      []int8   // index into migModels, -1 when the node has no MIG
	migModels []migModel
	// Per group: partly shared GPUs by thousandths left, partly carved MIG
	// GPUs by free slices. Keys pack (left<<32 | global GPU index).
	sharedByLeft []*btree.BTreeG[uint64]
	migByLeft    []*btree.BTreeG[uint64]

	// Named resources (see resource.go), IDs in name order.
	rnames []string
	rindex map[string]ResourceID
	rcap   []int64 // rcap[n*R+r]
	ralloc []int64
	rfree  []int64 // per aggregate slot and resource: free on healthy nodes

	// changes counts the changes to nodes (Changes).
	changes uint64
}

// Changes counts the changes to the fleet's nodes (what they hold, their
// health): a caller that read the fleet when it stood at a count may keep
// what it found while the count stands. A Clone starts at its source's
// count and counts on its own.
func (f *Fleet) Changes() uint64 { return f.changes }

func key(count int32, id int32) uint64 { return uint64(uint32(count))<<32 | uint64(uint32(id)) }

func less(a, b uint64) bool { return a < b }

// New validates spec and builds the fleet with every node healthy and
// empty. A refused spec returns a *SpecError naming the node or level.
func New(spec Spec) (*Fleet, error) {
	if err := validate(spec); err != nil {
		return nil, err
	}
	f := &Fleet{spec: cloneSpec(spec), levels: slices.Clone(spec.Levels), depth: len(spec.Levels)}
	f.nvlink = Level(f.depth)
	if spec.NVLink != "" {
		f.nvlink = Level(slices.Index(spec.Levels, spec.NVLink) + 1)
	}
	f.build()
	// Absent nodes enter healthy and empty, then leave service: the
	// aggregates follow as for any health change.
	for n := range NodeID(f.NumNodes()) {
		if f.spec.Nodes[f.nspec[n]].Absent {
			if err := f.SetHealth(n, Absent); err != nil {
				panic("topology: marking a built node absent: " + err.Error())
			}
		}
	}
	return f, nil
}

func validate(spec Spec) error {
	if len(spec.Levels) == 0 {
		return &SpecError{Index: -1, Detail: "no levels", Err: ErrInvalidSpec}
	}
	seen := map[string]bool{}
	for _, l := range spec.Levels {
		if l == "" || seen[l] {
			return &SpecError{Index: -1, Level: l, Detail: "level names must be unique and non-empty", Err: ErrInvalidSpec}
		}
		seen[l] = true
	}
	if spec.NVLink != "" && !seen[spec.NVLink] {
		return &SpecError{Index: -1, Level: spec.NVLink, Detail: "nvlink level is not one of the levels", Err: ErrUnknownLevel}
	}
	if len(spec.Nodes) == 0 {
		return &SpecError{Index: -1, Detail: "Spec.Nodes is empty: declare at least one node (Uniform builds none unless " +
			"Fanout has one positive entry per level, the node level included)", Err: ErrEmptyFleet}
	}
	if len(spec.Nodes) > 1<<30 {
		return &SpecError{Index: -1, Detail: "too many nodes", Err: ErrInvalidSpec}
	}
	names := make(map[string]int, len(spec.Nodes))
	parent := make([]map[string]string, len(spec.Levels)-1) // per level: domain -> parent domain
	for i := range parent {
		parent[i] = map[string]string{}
	}
	for i, n := range spec.Nodes {
		if n.Name == "" {
			return &SpecError{Index: i, Detail: "empty name", Err: ErrInvalidSpec}
		}
		if _, dup := names[n.Name]; dup {
			return &SpecError{Node: n.Name, Index: i, Detail: fmt.Sprintf("also nodes[%d]", names[n.Name]), Err: ErrDuplicate}
		}
		names[n.Name] = i
		if n.GPUs < 0 || n.GPUs > 1<<20 || n.GPUs == 0 && len(n.Resources) == 0 {
			return &SpecError{Node: n.Name, Index: i, Detail: fmt.Sprintf("gpus=%d", n.GPUs), Err: ErrBadGPUs}
		}
		if n.MIG && (MIGProfiles(n.Flavor) == nil || n.GPUs == 0) {
			return &SpecError{Node: n.Name, Index: i, Detail: fmt.Sprintf("flavor %q has no known MIG geometry", n.Flavor), Err: ErrUnknownProfile}
		}
		for _, r := range slices.Sorted(maps.Keys(n.Resources)) {
			if r == "" || n.Resources[r] < 0 || n.Resources[r] > MaxResource {
				return &SpecError{Node: n.Name, Index: i, Detail: fmt.Sprintf("resource %q = %d", r, n.Resources[r]), Err: ErrBadResource}
			}
		}
		if len(n.Path) != len(spec.Levels)-1 {
			return &SpecError{Node: n.Name, Index: i, Detail: fmt.Sprintf("path has %d entries, levels above the node are %d", len(n.Path), len(spec.Levels)-1), Err: ErrBadPath}
		}
		for l, d := range n.Path {
			if d == "" {
				return &SpecError{Node: n.Name, Index: i, Level: spec.Levels[l], Detail: "empty domain name", Err: ErrBadPath}
			}
			up := ""
			if l > 0 {
				up = n.Path[l-1]
			}
			if p, ok := parent[l][d]; ok && p != up {
				return &SpecError{Node: n.Name, Index: i, Level: spec.Levels[l], Detail: fmt.Sprintf("%q is under %q and %q", d, p, up), Err: ErrTwoParents}
			}
			parent[l][d] = up
		}
	}
	return nil
}

func cloneSpec(s Spec) Spec {
	c := Spec{Levels: slices.Clone(s.Levels), NVLink: s.NVLink, Nodes: make([]NodeSpec, len(s.Nodes))}
	for i, n := range s.Nodes {
		n.Path = slices.Clone(n.Path)
		n.Labels = maps.Clone(n.Labels)
		n.Resources = maps.Clone(n.Resources)
		c.Nodes[i] = n
	}
	return c
}

// build lays out domains level by level, children grouped under their
// parent in order of first appearance, so that every domain's descendants
// at any level form a contiguous range of IDs.
func (f *Fleet) build() {
	spec := f.spec
	depth := f.depth
	// Children in first-appearance order, per domain path.
	type tmp struct {
		name     string
		children []int
		nodeIdx  int // spec index for nodes
	}
	nodes := []tmp{{name: ""}} // temporary tree, index 0 is the root
	index := make([]map[string]int, depth)
	for l := range index {
		index[l] = map[string]int{}
	}
	for i, n := range spec.Nodes {
		cur := 0
		for l := 0; l < depth; l++ {
			name := n.Name
			if l < depth-1 {
				name = n.Path[l]
			}
			t, ok := index[l][name]
			if !ok {
				t = len(nodes)
				nodes = append(nodes, tmp{name: name, nodeIdx: i})
				index[l][name] = t
				nodes[cur].children = append(nodes[cur].children, t)
			}
			cur = t
		}
	}
	// Breadth-first numbering.
	f.dom = make([]domain, 0, len(nodes))
	f.levelLo = make([]DomainID, depth+2)
	f.byName = make([]map[string]DomainID, depth+1)
	queue := []int{0}
	tmpOf := []int{}
	f.dom = append(f.dom, domain{level: 0, parent: -1})
	tmpOf = append(tmpOf, 0)
	for level := 0; level <= depth; level++ {
		f.levelLo[level] = DomainID(len(f.dom) - len(queue))
		f.byName[level] = make(map[string]DomainID, len(queue))
		var next []int
		for qi, t := range queue {
			id := f.levelLo[level] + DomainID(qi)
			f.byName[level][nodes[t].name] = id
			f.dom[id].childLo = DomainID(len(f.dom))
			for _, c := range nodes[t].children {
				f.dom = append(f.dom, domain{name: nodes[c].name, level: int32(level + 1), parent: id})
				tmpOf = append(tmpOf, c)
				next = append(next, c)
			}
			f.dom[id].childHi = DomainID(len(f.dom))
		}
		queue = next
	}
	f.levelLo[depth+1] = DomainID(len(f.dom))
	f.nodeBase = f.levelLo[depth]
	nn := len(f.dom) - int(f.nodeBase)

	f.ncap = make([]int32, nn)
	f.nalloc = make([]int32, nn)
	f.nhealth = make([]Health, nn)
	f.ngroup = make([]GroupID, nn)
	f.nspec = make([]int32, nn)
	f.anc = make([]DomainID, nn*(depth+1))
	groupIdx := map[group]GroupID{}
	for n := range nn {
		d := f.nodeBase + DomainID(n)
		si := nodes[tmpOf[d]].nodeIdx
		ns := spec.Nodes[si]
		f.nspec[n] = int32(si)
		f.ncap[n] = int32(ns.GPUs)
		f.maxGPUs = max(f.maxGPUs, ns.GPUs)
		g := group{ns.Flavor, ns.Pool}
		gid, ok := groupIdx[g]
		if !ok {
			gid = GroupID(len(f.groups))
			groupIdx[g] = gid
			f.groups = append(f.groups, g)
		}
		f.ngroup[n] = gid
		for a, l := d, depth; l >= 0; a, l = f.dom[a].parent, l-1 {
			f.anc[n*(depth+1)+l] = a
		}
	}
	f.buildGPUs(nn)
	// Node ranges, bottom-up.
	for d := len(f.dom) - 1; d >= 0; d-- {
		if d >= int(f.nodeBase) {
			f.dom[d].nodeLo, f.dom[d].nodeHi = NodeID(d-int(f.nodeBase)), NodeID(d-int(f.nodeBase)+1)
			continue
		}
		dd := &f.dom[d]
		dd.nodeLo, dd.nodeHi = f.dom[dd.childLo].nodeLo, f.dom[dd.childHi-1].nodeHi
	}
	f.maxNodes = make([]int32, depth+1)
	for d := range f.dom {
		dd := &f.dom[d]
		f.maxNodes[dd.level] = max(f.maxNodes[dd.level], int32(dd.nodeHi-dd.nodeLo))
	}

	f.slots, f.allSlot = 1, 0
	if len(f.groups) > 1 {
		f.slots, f.allSlot = len(f.groups)+1, len(f.groups)
	}
	f.agg = make([]aggregate, len(f.dom)*f.slots)
	f.hist = make([]int32, len(f.dom)*f.slots*(f.maxGPUs+1))
	f.byFreeNodes = make([][]*btree.BTreeG[uint64], depth)
	f.byFreeGPUs = make([][]*btree.BTreeG[uint64], depth)
	for l := 1; l < depth; l++ {
		f.byFreeNodes[l] = make([]*btree.BTreeG[uint64], len(f.groups))
		f.byFreeGPUs[l] = make([]*btree.BTreeG[uint64], len(f.groups))
		for g := range f.groups {
			f.byFreeNodes[l][g] = btree.NewG(16, less)
			f.byFreeGPUs[l][g] = btree.NewG(16, less)
		}
	}
	f.nodesByFree = make([]*btree.BTreeG[uint64], len(f.groups))
	f.sharedByLeft = make([]*btree.BTreeG[uint64], len(f.groups))
	f.migByLeft = make([]*btree.BTreeG[uint64], len(f.groups))
	for g := range f.groups {
		f.nodesByFree[g] = btree.NewG(16, less)
		f.sharedByLeft[g] = btree.NewG(16, less)
		f.migByLeft[g] = btree.NewG(16, less)
	}
	R := len(f.rnames)
	f.rfree = make([]int64, len(f.dom)*f.slots*R)
	// Static totals, then every node enters as healthy and empty.
	for n := range nn {
		c := f.contrib(NodeID(n))
		for l := 0; l <= depth; l++ {
			d := f.anc[n*(depth+1)+l]
			s0, s1, ns := f.slotsOf(f.ngroup[n])
			for i := range ns {
				s := s0
				if i == 1 {
					s = s1
				}
				a := &f.agg[int(d)*f.slots+s]
				a.nodes++
				a.gpus += f.ncap[n]
				a.add(c, 1)
				f.hist[f.histBase(d, s)+int(c.bucket)]++
				for r := range R {
					f.rfree[(int(d)*f.slots+s)*R+r] += f.rcap[n*R+r]
				}
			}
		}
	}
	for l := 1; l < depth; l++ {
		for d := f.levelLo[l]; d < f.levelLo[l+1]; d++ {
			for g := range f.groups {
				a := f.agg[int(d)*f.slots+f.slot(GroupID(g))]
				if a.nodes == 0 {
					continue
				}
				f.byFreeNodes[l][g].ReplaceOrInsert(key(a.freeNodes, int32(d)))
				f.byFreeGPUs[l][g].ReplaceOrInsert(key(a.free, int32(d)))
			}
		}
	}
	for n := range nn {
		f.nodesByFree[f.ngroup[n]].ReplaceOrInsert(key(f.ncap[n], int32(n)))
	}
}

func (f *Fleet) slot(g GroupID) int {
	if g == AllGroups || f.slots == 1 {
		return f.allSlot
	}
	return int(g)
}

// slotsOf returns the aggregate slots a node of group g contributes to:
// its group's and, when there are several groups, the "all" slot.
func (f *Fleet) slotsOf(g GroupID) (first, second int, n int) {
	if f.slots == 1 {
		return 0, 0, 1
	}
	return int(g), f.allSlot, 2
}

func (f *Fleet) histBase(d DomainID, s int) int { return (int(d)*f.slots + s) * (f.maxGPUs + 1) }

// Clone returns an independent copy. The copy shares the immutable spec
// and name tables and copies the flat state slices; ordered indexes are
// cloned copy-on-write, so a clone costs O(nodes) copies and no rebuild.
func (f *Fleet) Clone() *Fleet {
	c := *f
	c.batch = nil
	c.nalloc = slices.Clone(f.nalloc)
	c.nhealth = slices.Clone(f.nhealth)
	c.agg = slices.Clone(f.agg)
	c.hist = slices.Clone(f.hist)
	c.byFreeNodes = cloneIndexes(f.byFreeNodes)
	c.byFreeGPUs = cloneIndexes(f.byFreeGPUs)
	c.nodesByFree = cloneTrees(f.nodesByFree)
	c.sharedByLeft = cloneTrees(f.sharedByLeft)
	c.migByLeft = cloneTrees(f.migByLeft)
	c.gused = slices.Clone(f.gused)
	c.gmig = slices.Clone(f.gmig)
	c.gwhole = slices.Clone(f.gwhole)
	c.nfree = slices.Clone(f.nfree)
	c.ralloc = slices.Clone(f.ralloc)
	c.rfree = slices.Clone(f.rfree)
	return &c
}

func cloneTrees(src []*btree.BTreeG[uint64]) []*btree.BTreeG[uint64] {
	out := make([]*btree.BTreeG[uint64], len(src))
	for g, t := range src {
		out[g] = t.Clone()
	}
	return out
}

func cloneIndexes(src [][]*btree.BTreeG[uint64]) [][]*btree.BTreeG[uint64] {
	out := make([][]*btree.BTreeG[uint64], len(src))
	for l, ts := range src {
		if ts == nil {
			continue
		}
		out[l] = make([]*btree.BTreeG[uint64], len(ts))
		for g, t := range ts {
			out[l][g] = t.Clone()
		}
	}
	return out
}

// Spec returns a copy of the spec the fleet was built from.
func (f *Fleet) Spec() Spec { return cloneSpec(f.spec) }
