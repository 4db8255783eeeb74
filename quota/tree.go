package quota

import (
	"fmt"
	"math"
	"slices"
)

// NodeID names a cohort or queue of one Tree (and of its clones). IDs are
// assigned in depth-first pre-order, roots in Spec order and children in
// Spec order, so a node's subtree is the contiguous range Subtree returns.
type NodeID int32

// FlavorID names a flavor of one Tree: its index in Spec.Flavors.
type FlavorID int32

// None is the NodeID of "no node", e.g. the parent of a root.
const None NodeID = -1

// Tree is the live quota tree: the configuration plus usage per queue and
// flavor, with every aggregate Kueue's arithmetic needs kept up to date in
// O(depth) per change.
//
// A Tree is not safe for concurrent use. Read accessors take IDs obtained
// from this Tree; an ID out of range panics like an out-of-range slice index.
// Mutating calls validate their arguments and return an error instead.
type Tree struct {
	s *shape // immutable after New; shared by clones

	// Per node and flavor, at index node*F + flavor. Copied by Clone.
	nominal []int64
	borrow  []int64 // borrowing limit, or noLimit
	lend    []int64 // lending limit, or noLimit
	served  []bool  // the node lists the flavor in its Quotas
	subtree []int64 // Kueue's SubtreeQuota
	usage   []int64 // Kueue's Usage: for a queue its GPUs, for a cohort what children store in it
	inUse   []int64 // GPUs used by the queues of the subtree

	// Per flavor.
	nominalSum []int64 // sum of nominal over all nodes
	inUseSum   []int64 // GPUs in use over all queues

	// order lists, per node, the flavors of its Quotas in Spec order, so that
	// Spec() gives back what New was given. Copy-on-write: SetQuota replaces
	// a node's slice rather than appending to one a clone may share.
	order [][]FlavorID

	// Per node: the settings SetNode may change. Copied by Clone.
	weight    []float64
	weightSet []bool
	rules     []Rules
	strategy  []Strategy
	// fungibility is each queue's flavorFungibility.
	fungibility []Fungibility
	// groups holds the nodes' resource groups. It changes only with the
	// configuration (SetQuota, SetNode), so clones share it and an edit
	// replaces it whole (ownGroups): usage what-ifs never copy it.
	groups *groupSet

	// changes counts the changes to quotas, settings and usage (Changes).
	changes uint64
}

// shape is the part of a Tree no call can change.
type shape struct {
	flavors  []string
	flavorID map[string]FlavorID
	// Named resources besides GPUs; a (flavor, resource) pair is one
	// column of the flat state, GPUs of flavor f being column f.
	resources    []string
	resourceID   map[string]ResourceID
	allResources []ResourceID // 1..len(resources), shared by implicit groups
	cols         int

	names     []string
	nodeID    map[string]NodeID
	parent    []NodeID
	kind      []Kind
	depth     []int32
	end       []NodeID // subtree of n is [n, end[n])
	children  [][]NodeID
	height    []int32 // Kueue's height: edges down to the furthest leaf (a cohort with children: at least 1)
	queues    []NodeID
	roots     []NodeID
	specOrder []NodeID // Spec position -> ID
}

// New checks spec and builds its Tree with no usage. It refuses the whole
// spec on the first broken rule, in Spec order, with a *SpecError naming the
// node, flavor and field.
func New(spec Spec) (*Tree, error) {
	spec = spec.clone()
	s := &shape{flavorID: make(map[string]FlavorID, len(spec.Flavors))}
	for _, f := range spec.Flavors {
		if f == "" {
			return nil, &SpecError{Field: "flavors", Detail: "empty flavor name", Err: ErrInvalidName}
		}
		if _, dup := s.flavorID[f]; dup {
			return nil, &SpecError{Flavor: f, Field: "flavors", Err: ErrDuplicateFlavor}
		}
		if len(s.flavors) == math.MaxInt32 {
			return nil, &SpecError{Field: "flavors", Detail: "too many flavors", Err: ErrInvalidSpec}
		}
		s.flavorID[f] = FlavorID(len(s.flavors))
		s.flavors = append(s.flavors, f)
	}
	_ = len(s.flavors)
	if err := s.resolveResources(spec.Resources); err != nil {
		return nil, err
	}
	C := s.cols

	pos := make(map[string]int, len(spec.Nodes))
	for i, n := range spec.Nodes {
		if err := checkNode(n, s); err != nil {
			return nil, err
		}
		if _, dup := pos[n.Name]; dup {
			return nil, &SpecError{Node: n.Name, Field: "name", Err: ErrDuplicateNode}
		}
		pos[n.Name] = i
	}
	if len(spec.Nodes) > math.MaxInt32/max(C, 1) {
		return nil, &SpecError{Field: "nodes", Detail: "too many nodes", Err: ErrInvalidSpec}
	}
	kids := make([][]int, len(spec.Nodes))
	var roots []int
	for i, n := range spec.Nodes {
		if n.Parent == "" {
			roots = append(roots, i)
			for _, q := range n.Quotas {
				if q.BorrowingLimit.set || q.LendingLimit.set {
					return nil, &SpecError{Node: n.Name, Flavor: q.Flavor, Field: "borrowingLimit/lendingLimit",
						Detail: "a root has no parent to borrow from or lend to", Err: ErrLimitOnRoot}
				}
			}
			continue
		}
		p, ok := pos[n.Parent]
		if !ok {
			return nil, &SpecError{Node: n.Name, Field: "parent", Detail: fmt.Sprintf("parent %q", n.Parent), Err: ErrUnknownParent}
		}
		if spec.Nodes[p].Kind == Queue {
			return nil, &SpecError{Node: n.Parent, Field: "kind", Detail: fmt.Sprintf("child %q", n.Name), Err: ErrQueueWithChildren}
		}
		kids[p] = append(kids[p], i)
	}

	// Number the nodes in pre-order from each root. A node never reached
	// has an ancestor chain that never ends at a root: a cycle.
	N := len(spec.Nodes)
	id := make([]NodeID, N)
	for i := range id {
		id[i] = None
	}
	s.names = make([]string, 0, N)
	s.parent = make([]NodeID, 0, N)
	s.depth = make([]int32, 0, N)
	s.end = make([]NodeID, N)
	var stack []int
	for _, r := range roots {
		stack = append(stack[:0], r)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			me := NodeID(len(s.names))
			id[i] = me
			s.names = append(s.names, spec.Nodes[i].Name)
			p, d := None, int32(0)
			if spec.Nodes[i].Parent != "" {
				p = id[pos[spec.Nodes[i].Parent]]
				d = s.depth[p] + 1
			}
			s.parent = append(s.parent, p)
			s.depth = append(s.depth, d)
			for k := len(kids[i]) - 1; k >= 0; k-- {
				stack = append(stack, kids[i][k])
			}
		}
	}
	for i, n := range spec.Nodes {
		if id[i] == None {
			return nil, &SpecError{Node: n.Name, Field: "parent", Detail: "its ancestors never reach a root", Err: ErrCycle}
		}
	}
	// Subtree ends: walking IDs backwards, a node's end is the largest end
	// among its children, or itself + 1.
	for n := NodeID(N - 1); n >= 0; n-- {
		if s.end[n] == 0 {
			s.end[n] = n + 1
		}
		if p := s.parent[n]; p != None {
			s.end[p] = max(s.end[p], s.end[n])
		}
	}

	s.nodeID = make(map[string]NodeID, N)
	s.kind = make([]Kind, N)
	s.children = make([][]NodeID, N)
	s.specOrder = make([]NodeID, N)
	t := &Tree{
		s:           s,
		nominal:     make([]int64, N*C),
		borrow:      make([]int64, N*C),
		lend:        make([]int64, N*C),
		served:      make([]bool, N*C),
		subtree:     make([]int64, N*C),
		usage:       make([]int64, N*C),
		inUse:       make([]int64, N*C),
		nominalSum:  make([]int64, C),
		inUseSum:    make([]int64, C),
		order:       make([][]FlavorID, N),
		weight:      make([]float64, N),
		weightSet:   make([]bool, N),
		rules:       make([]Rules, N),
		strategy:    make([]Strategy, N),
		fungibility: make([]Fungibility, N),
		groups:      &groupSet{declared: make([][]group, N), implicit: make([]group, N)},
	}
	for i := range t.borrow {
		t.borrow[i], t.lend[i] = noLimit, noLimit
	}
	for i, n := range spec.Nodes {
		me := id[i]
		s.specOrder[i] = me
		s.nodeID[n.Name] = me
		s.kind[me] = n.Kind
		t.setSettings(me, n)
		for _, k := range kids[i] {
			s.children[me] = append(s.children[me], id[k])
		}
		if n.Kind == Queue {
			s.queues = append(s.queues, me)
		}
		if n.Parent == "" {
			s.roots = append(s.roots, me)
		}
		t.groups.declared[me], _ = resolveGroups(n, s) // checkNode refused bad ones
		for _, q := range n.Quotas {
			f := s.flavorID[q.Flavor]
			t.setCol(me, FlavorID(f), q.Nominal*milli, scaleLimit(q.BorrowingLimit.encode(), milli), scaleLimit(q.LendingLimit.encode(), milli))
			t.order[me] = append(t.order[me], f)
			for _, rq := range q.Resources {
				c := s.col(int(f), s.resourceID[rq.Name])
				t.setCol(me, c, rq.Nominal, rq.BorrowingLimit.encode(), rq.LendingLimit.encode())
			}
		}
	}
	for n := range NodeID(N) {
		t.groups.implicit[n] = t.implicitGroup(n)
	}
	// Heights: children have larger IDs than their parent (pre-order).
	s.height = make([]int32, N)
	for n := NodeID(N - 1); n >= 0; n-- {
		if s.kind[n] == Cohort && len(s.children[n]) > 0 {
			s.height[n] = max(s.height[n], 1)
		}
		if p := s.parent[n]; p != None && s.kind[n] == Cohort {
			s.height[p] = max(s.height[p], s.height[n]+1)
		}
	}
	slices.Sort(s.queues)
	slices.Sort(s.roots)
	for c, sum := range t.nominalSum {
		if sum > maxBase || sum < 0 {
			f, r := s.split(FlavorID(c))
			return nil, &SpecError{Flavor: s.flavors[f], Field: "nominal",
				Detail: fmt.Sprintf("nominal quotas of %s add up to %d, above %d", s.resourceName(r), s.out(FlavorID(c), sum), MaxAmount), Err: ErrAmountTooLarge}
		}
	}
	// Children have larger IDs than their parent: one backward pass
	// accumulates every subtree quota.
	for n := NodeID(N - 1); n >= 0; n-- {
		for f := FlavorID(0); int(f) < C; f++ {
			x := t.at(n, f)
			t.subtree[x] += t.nominal[x]
			if p := s.parent[n]; p != None {
				t.subtree[t.at(p, f)] += t.subtree[x] - t.local(x)
			}
		}
	}
	return t, nil
}

// checkNode applies the rules that concern one node alone.
func checkNode(n NodeSpec, s *shape) error {
	flavors := s.flavorID
	if n.Name == "" {
		return &SpecError{Field: "name", Detail: "empty node name", Err: ErrInvalidName}
	}
	if n.Kind != Cohort && n.Kind != Queue {
		got := "missing"
		if n.Kind != 0 {
			got = n.Kind.String()
		}
		return &SpecError{Node: n.Name, Field: "kind", Detail: got + `: want "cohort" (quota.Cohort) or "queue" (quota.Queue)`, Err: ErrInvalidKind}
	}
	if n.Parent == n.Name {
		return &SpecError{Node: n.Name, Field: "parent", Detail: "a node cannot be its own parent", Err: ErrCycle}
	}
	if w := n.Weight; w != nil && (*w < 0 || math.IsNaN(*w) || math.IsInf(*w, 0)) {
		return &SpecError{Node: n.Name, Field: "weight", Detail: fmt.Sprintf("weight %v", *w), Err: ErrInvalidWeight}
	}
	if n.Kind == Cohort && (n.Preemption != Rules{} || n.QueueingStrategy != BestEffortFIFO || n.FlavorFungibility != Fungibility{}) {
		return &SpecError{Node: n.Name, Field: "preemption", Err: ErrRulesOnCohort}
	}
	if err := checkRules(n); err != nil {
		return err
	}
	seen := make(map[string]bool, len(n.Quotas))
	for _, q := range n.Quotas {
		if seen[q.Flavor] {
			return &SpecError{Node: n.Name, Flavor: q.Flavor, Field: "quotas", Err: ErrDuplicateFlavor}
		}
		seen[q.Flavor] = true
		if err := checkQuota(n.Name, q, flavors); err != nil {
			return err
		}
		if err := checkResourceQuotas(n.Name, q, s); err != nil {
			return err
		}
	}
	_, err := resolveGroups(n, s)
	return err
}

// checkRules refuses enum values outside their range, which a Go caller
// (not JSON) can construct.
func checkRules(n NodeSpec) error {
	r := n.Preemption
	switch {
	case int(r.WithinQueue) >= len(withinQueueNames()):
		return &SpecError{Node: n.Name, Field: "preemption.withinQueue", Detail: r.WithinQueue.String(), Err: ErrInvalidSpec}
	case int(r.ReclaimWithinCohort) >= len(reclaimNames()):
		return &SpecError{Node: n.Name, Field: "preemption.reclaimWithinCohort", Detail: r.ReclaimWithinCohort.String(), Err: ErrInvalidSpec}
	case int(r.BorrowWithinCohort.Policy) >= len(borrowNames()):
		return &SpecError{Node: n.Name, Field: "preemption.borrowWithinCohort.policy", Detail: r.BorrowWithinCohort.Policy.String(), Err: ErrInvalidSpec}
	case int(n.QueueingStrategy) >= len(strategyNames()):
		return &SpecError{Node: n.Name, Field: "queueingStrategy", Detail: n.QueueingStrategy.String(), Err: ErrInvalidSpec}
	case !n.FlavorFungibility.WhenCanBorrow.Valid():
		return &SpecError{Node: n.Name, Field: "flavorFungibility.whenCanBorrow", Detail: n.FlavorFungibility.WhenCanBorrow.String(), Err: ErrInvalidSpec}
	case !n.FlavorFungibility.WhenCanPreempt.Valid():
		return &SpecError{Node: n.Name, Field: "flavorFungibility.whenCanPreempt", Detail: n.FlavorFungibility.WhenCanPreempt.String(), Err: ErrInvalidSpec}
	case r.BorrowWithinCohort.Policy != BorrowNever && r.ReclaimWithinCohort == ReclaimNever:
		// Kueue refuses it too: borrowing by preemption is a form of
		// reclaiming, so it needs reclaimWithinCohort.
		return &SpecError{Node: n.Name, Field: "preemption.borrowWithinCohort.policy",
			Detail: "needs reclaimWithinCohort other than Never", Err: ErrInvalidSpec}
	}
	return nil
}

// checkQuota applies the rules of one flavor quota; SetQuota uses it too.
func checkQuota(node string, q FlavorQuota, flavors map[string]FlavorID) error {
	if _, ok := flavors[q.Flavor]; !ok {
		return &SpecError{Node: node, Flavor: q.Flavor, Field: "flavor", Err: ErrUnknownFlavor}
	}
	bl, blSet := q.BorrowingLimit.Get()
	ll, llSet := q.LendingLimit.Get()
	for _, c := range []struct {
		field string
		v     int64
		set   bool
	}{{"nominal", q.Nominal, true}, {"borrowingLimit", bl, blSet}, {"lendingLimit", ll, llSet}} {
		if !c.set {
			continue
		}
		if c.v < 0 {
			return &SpecError{Node: node, Flavor: q.Flavor, Field: c.field, Detail: fmt.Sprint(c.v), Err: ErrNegativeAmount}
		}
		if c.v > MaxAmount {
			return &SpecError{Node: node, Flavor: q.Flavor, Field: c.field, Detail: fmt.Sprintf("%d above %d", c.v, MaxAmount), Err: ErrAmountTooLarge}
		}
	}
	if llSet && ll > q.Nominal {
		return &SpecError{Node: node, Flavor: q.Flavor, Field: "lendingLimit", Detail: fmt.Sprintf("%d > nominal %d", ll, q.Nominal), Err: ErrLendingAboveQuota}
	}
	return nil
}

// at is the flat index of (node, flavor).
func (t *Tree) at(n NodeID, f FlavorID) int { return int(n)*t.s.cols + int(f) }

// local is Kueue's localQuota: the part of the subtree quota the lending
// limit keeps out of the parent's sight. Without a lending limit all of it
// is lent, so nothing is local.
func (t *Tree) local(x int) int64 {
	if t.lend[x] == noLimit {
		return 0
	}
	return max(0, t.subtree[x]-t.lend[x])
}

// Changes counts the changes to the tree's quotas, settings and usage: a
// caller that read the tree when it stood at a count may keep what it
// found while the count stands. A copy (Clone, CopyTo) takes its
// source's count and counts on its own.
func (t *Tree) Changes() uint64 { return t.changes }

// Undoing runs fn, which must undo every change it makes to the tree, and
// then sets Changes back to its count before fn: a what-if that takes
// usage off and puts it back leaves what callers keep by the count valid.
// Nothing read inside fn may be kept by the counts fn passed through.
func (t *Tree) Undoing(fn func()) {
	c := t.changes
	defer func() { t.changes = c }()
	fn()
}

// Clone returns an independent copy: the flat state slices are copied, the
// immutable shape is shared. Cost is a handful of slice copies of
// nodes x flavors words.
func (t *Tree) Clone() *Tree {
	c := &Tree{s: t.s}
	t.copyInto(c)
	return c
}

// CopyTo overwrites dst with t's state, reusing dst's memory when it has
// room, so that a what-if loop can reset a scratch tree without allocating.
// dst must be t itself or come from t (or one of its clones) by Clone.
func (t *Tree) CopyTo(dst *Tree) {
	if dst.s != t.s {
		panic("quota: CopyTo between trees of different shapes")
	}
	t.copyInto(dst)
}

func (t *Tree) copyInto(c *Tree) {
	c.changes = t.changes
	c.nominal = append(c.nominal[:0], t.nominal...)
	c.borrow = append(c.borrow[:0], t.borrow...)
	c.lend = append(c.lend[:0], t.lend...)
	c.served = append(c.served[:0], t.served...)
	c.subtree = append(c.subtree[:0], t.subtree...)
	c.usage = append(c.usage[:0], t.usage...)
	c.inUse = append(c.inUse[:0], t.inUse...)
	c.nominalSum = append(c.nominalSum[:0], t.nominalSum...)
	c.inUseSum = append(c.inUseSum[:0], t.inUseSum...)
	// The per-node slices are never written in place, only replaced.
	c.order = append(c.order[:0], t.order...)
	c.weight = append(c.weight[:0], t.weight...)
	c.weightSet = append(c.weightSet[:0], t.weightSet...)
	c.rules = append(c.rules[:0], t.rules...)
	c.strategy = append(c.strategy[:0], t.strategy...)
	c.fungibility = append(c.fungibility[:0], t.fungibility...)
	c.groups = t.groups
}

// Spec returns the current configuration, reflecting SetQuota and SetNode edits, with
// nodes and quota entries in the order New was given them.
func (t *Tree) Spec() Spec {
	s := t.s
	out := Spec{Flavors: slices.Clone(s.flavors), Resources: slices.Clone(s.resources)}
	if len(s.specOrder) > 0 {
		out.Nodes = make([]NodeSpec, len(s.specOrder))
	}
	for i, n := range s.specOrder {
		ns := NodeSpec{
			Name:              s.names[n],
			Kind:              s.kind[n],
			Preemption:        t.rules[n],
			QueueingStrategy:  t.strategy[n],
			FlavorFungibility: t.fungibility[n],
			ResourceGroups:    t.groupSpecs(n),
		}
		if p := s.parent[n]; p != None {
			ns.Parent = s.names[p]
		}
		if t.weightSet[n] {
			w := t.weight[n]
			ns.Weight = &w
		}
		if th := ns.Preemption.BorrowWithinCohort.MaxPriorityThreshold; th != nil {
			v := *th
			ns.Preemption.BorrowWithinCohort.MaxPriorityThreshold = &v
		}
		for _, f := range t.order[n] {
			ns.Quotas = append(ns.Quotas, t.quotaOf(n, f))
		}
		out.Nodes[i] = ns
	}
	return out
}

func (t *Tree) quotaOf(n NodeID, f FlavorID) FlavorQuota {
	x := t.at(n, f)
	q := FlavorQuota{
		Flavor:         t.s.flavors[f],
		Nominal:        t.nominal[x] / milli,
		BorrowingLimit: decodeLimit(scaleLimitDown(t.borrow[x])),
		LendingLimit:   decodeLimit(scaleLimitDown(t.lend[x])),
	}
	for r := range ResourceID(len(t.s.resources)) {
		c := t.s.col(int(f), r+1)
		if y := t.at(n, c); t.served[y] {
			q.Resources = append(q.Resources, ResourceQuota{Name: t.s.resources[r], Nominal: t.nominal[y],
				BorrowingLimit: decodeLimit(t.borrow[y]), LendingLimit: decodeLimit(t.lend[y])})
		}
	}
	return q
}

// Node returns the ID of the node called name.
func (t *Tree) Node(name string) (NodeID, bool) {
	id, ok := t.s.nodeID[name]
	return id, ok
}

// Flavor returns the ID of the flavor called name.
func (t *Tree) Flavor(name string) (FlavorID, bool) {
	id, ok := t.s.flavorID[name]
	return id, ok
}

// Name returns a node's name.
func (t *Tree) Name(n NodeID) string { return t.s.names[n] }

// FlavorName returns a flavor's name.
func (t *Tree) FlavorName(f FlavorID) string { return t.s.flavors[f] }

// Flavors returns the flavor names in FlavorID order. The caller owns the slice.
func (t *Tree) Flavors() []string { return slices.Clone(t.s.flavors) }

// NumNodes returns how many nodes the tree has; IDs are 0..NumNodes()-1.
func (t *Tree) NumNodes() int { return len(t.s.names) }

// NumFlavors returns how many flavors the tree has; IDs are 0..NumFlavors()-1.
func (t *Tree) NumFlavors() int { return len(t.s.flavors) }

// Parent returns a node's parent, or None and false for a root.
func (t *Tree) Parent(n NodeID) (NodeID, bool) {
	p := t.s.parent[n]
	return p, p != None
}

// Root returns the root of the tree n belongs to.
func (t *Tree) Root(n NodeID) NodeID {
	for t.s.parent[n] != None {
		n = t.s.parent[n]
	}
	return n
}

// Roots returns the roots in ID order. The slice belongs to the Tree: read it, never modify it.
func (t *Tree) Roots() []NodeID { return t.s.roots }

// Children returns a node's children in Spec order. The slice belongs to the
// Tree: read it, never modify it.
func (t *Tree) Children(n NodeID) []NodeID { return t.s.children[n] }

// Subtree returns the IDs of n's subtree, n included, as the range [n, end).
func (t *Tree) Subtree(n NodeID) (first, end NodeID) { return n, t.s.end[n] }

// Depth returns how many edges separate n from its root.
func (t *Tree) Depth(n NodeID) int { return int(t.s.depth[n]) }

// IsQueue reports whether n is a queue (a leaf that holds workloads).
func (t *Tree) IsQueue(n NodeID) bool { return t.s.kind[n] == Queue }

// Kind returns whether n is a cohort or a queue.
func (t *Tree) Kind(n NodeID) Kind { return t.s.kind[n] }

// Queues returns every queue in ID order (pre-order of the tree). The slice
// belongs to the Tree: read it, never modify it.
func (t *Tree) Queues() []NodeID { return t.s.queues }

// Rules returns a queue's preemption rules (zero for a cohort).
func (t *Tree) Rules(q NodeID) Rules { return t.rules[q] }

// Strategy returns a queue's queueing strategy.
func (t *Tree) Strategy(q NodeID) Strategy { return t.strategy[q] }

// Weight returns a node's fair-sharing weight (1 when the spec left it unset).
func (t *Tree) Weight(n NodeID) float64 { return t.weight[n] }

// Serves reports whether node n lists flavor f in its quotas. A queue can
// only use the flavors it serves.
func (t *Tree) Serves(n NodeID, f FlavorID) bool { return t.served[t.at(n, f)] }

// Quota returns node n's own quota for flavor f (zero values when it does
// not list f).
func (t *Tree) Quota(n NodeID, f FlavorID) FlavorQuota { return t.quotaOf(n, f) }

// Nominal returns node n's own nominal quota of flavor f.
func (t *Tree) Nominal(n NodeID, f FlavorID) int64 { return t.nominal[t.at(n, f)] / milli }

// SubtreeQuota is Kueue's SubtreeQuota: n's nominal quota plus what its
// children lend it.
func (t *Tree) SubtreeQuota(n NodeID, f FlavorID) int64 { return t.subtree[t.at(n, f)] / milli }

// LocalQuota is Kueue's localQuota: the part of n's subtree quota kept from
// its parent by the lending limit.
func (t *Tree) LocalQuota(n NodeID, f FlavorID) int64 { return t.local(t.at(n, f)) / milli }

// Usage is Kueue's Usage, the quantity counted against SubtreeQuota: for a
// queue, the GPUs its workloads hold; for a cohort, the GPUs its children
// use above their local quotas. See InUse for the plain count. GPU
// figures that hold shares are rounded up to whole GPUs; UsageOf gives
// them in thousandths.
func (t *Tree) Usage(n NodeID, f FlavorID) int64 { return ceilGPUs(t.usage[t.at(n, f)]) }

// InUse returns the GPUs of flavor f held by all queues under n.
func (t *Tree) InUse(n NodeID, f FlavorID) int64 { return ceilGPUs(t.inUse[t.at(n, f)]) }

// Borrowed returns how far n's usage exceeds its subtree quota: the GPUs it
// borrows from the rest of the tree, reclaimable by preemption. Never negative.
func (t *Tree) Borrowed(n NodeID, f FlavorID) int64 {
	x := t.at(n, f)
	return ceilGPUs(max(0, t.usage[x]-t.subtree[x]))
}
