package quota_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/quota"
)

// reference is the brute-force model: the spec plus GPUs in use per queue
// and flavor, with every quantity recomputed from the leaves on demand,
// straight from the Kueue formulas, with no incremental state.
type reference struct {
	spec  quota.Spec
	usage map[string][]int64 // queue -> per flavor
}

func newReference(spec quota.Spec) *reference {
	r := &reference{spec: spec, usage: map[string][]int64{}}
	for _, n := range spec.Nodes {
		r.usage[n.Name] = make([]int64, len(spec.Flavors))
	}
	return r
}

func (r *reference) node(name string) quota.NodeSpec {
	for _, n := range r.spec.Nodes {
		if n.Name == name {
			return n
		}
	}
	panic("no node " + name)
}

func (r *reference) children(name string) []string {
	var out []string
	for _, n := range r.spec.Nodes {
		if n.Parent == name && name != "" {
			out = append(out, n.Name)
		}
	}
	return out
}

func (r *reference) quota(name string, f int) (fq quota.FlavorQuota, ok bool) {
	for _, fq := range r.node(name).Quotas {
		if fq.Flavor == r.spec.Flavors[f] {
			return fq, true
		}
	}
	return quota.FlavorQuota{}, false
}

func (r *reference) subtree(name string, f int) int64 {
	fq, _ := r.quota(name, f)
	s := fq.Nominal
	for _, c := range r.children(name) {
		s += r.subtree(c, f) - r.local(c, f)
	}
	return s
}

func (r *reference) local(name string, f int) int64 {
	fq, _ := r.quota(name, f)
	if ll, ok := fq.LendingLimit.Get(); ok {
		return max(0, r.subtree(name, f)-ll)
	}
	return 0
}

func (r *reference) use(name string, f int) int64 {
	if r.node(name).Kind == quota.Queue {
		return r.usage[name][f]
	}
	var u int64
	for _, c := range r.children(name) {
		u += max(0, r.use(c, f)-r.local(c, f))
	}
	return u
}

func (r *reference) inUse(name string, f int) int64 {
	u := r.usage[name][f]
	for _, c := range r.children(name) {
		u += r.inUse(c, f)
	}
	return u
}

func (r *reference) available(name string, f int) int64 {
	n := r.node(name)
	if n.Parent == "" {
		return r.subtree(name, f) - r.use(name, f)
	}
	parent := r.available(n.Parent, f)
	l := r.local(name, f)
	fq, _ := r.quota(name, f)
	if bl, ok := fq.BorrowingLimit.Get(); ok {
		parent = min(parent, r.subtree(name, f)-l-max(0, r.use(name, f)-l)+bl)
	}
	return max(0, l-r.use(name, f)) + parent
}

func (r *reference) potential(name string, f int) int64 {
	n := r.node(name)
	if n.Parent == "" {
		return r.subtree(name, f)
	}
	v := r.local(name, f) + r.potential(n.Parent, f)
	fq, _ := r.quota(name, f)
	if bl, ok := fq.BorrowingLimit.Get(); ok {
		v = min(v, r.subtree(name, f)+bl)
	}
	return v
}

// fits returns the mode and, when borrowing, the node lent from and its
// height as Kueue counts it (down to the furthest leaf of its subtree).
func (r *reference) fits(name string, f int, gpus int64) (quota.Mode, string, int) {
	if _, ok := r.quota(name, f); !ok || gpus > max(0, r.available(name, f)) {
		return quota.NoFit, "", 0
	}
	if r.use(name, f)+gpus <= r.subtree(name, f) || r.node(name).Parent == "" {
		return quota.FitsNominal, name, 0
	}
	rest := gpus - max(0, r.local(name, f)-r.use(name, f))
	from := name
	for p := r.node(name).Parent; p != ""; p = r.node(p).Parent {
		from = p
		if r.use(p, f)+rest <= r.subtree(p, f) {
			break
		}
		rest -= max(0, r.local(p, f)-r.use(p, f))
	}
	return quota.FitsBorrowing, from, r.height(from)
}

// height is Kueue's getNodeHeight: a cohort with any child is at least
// 1, and one more than its highest child cohort.
func (r *reference) height(name string) int {
	h := 0
	for _, n := range r.spec.Nodes {
		if n.Parent != name {
			continue
		}
		h = max(h, 1)
		if n.Kind == quota.Cohort {
			h = max(h, r.height(n.Name)+1)
		}
	}
	return h
}

func (r *reference) share(name string) quota.Share {
	n := r.node(name)
	s := quota.Share{Weight: 1}
	if n.Weight != nil {
		s.Weight = *n.Weight
	}
	if n.Parent == "" {
		return s
	}
	for f := range r.spec.Flavors {
		s.Borrowed += max(0, r.use(name, f)-r.subtree(name, f))
	}
	if s.Borrowed > 0 {
		for f := range r.spec.Flavors {
			s.Lendable += r.potential(n.Parent, f)
		}
	}
	return s
}

// check compares every quantity of every node and flavor, and Fits for a
// few request sizes around the queue's availability.
func (r *reference) check(t require.TestingT, tree *quota.Tree) {
	for _, n := range r.spec.Nodes {
		id, ok := tree.Node(n.Name)
		require.True(t, ok)
		for f, fname := range r.spec.Flavors {
			fid, _ := tree.Flavor(fname)
			where := fmt.Sprintf("node %s flavor %s", n.Name, fname)
			require.Equal(t, r.subtree(n.Name, f), tree.SubtreeQuota(id, fid), "subtree "+where)
			require.Equal(t, r.local(n.Name, f), tree.LocalQuota(id, fid), "local "+where)
			require.Equal(t, r.use(n.Name, f), tree.Usage(id, fid), "usage "+where)
			require.Equal(t, r.inUse(n.Name, f), tree.InUse(id, fid), "inUse "+where)
			require.Equal(t, max(0, r.use(n.Name, f)-r.subtree(n.Name, f)), tree.Borrowed(id, fid), "borrowed "+where)
			avail := tree.Available(id, fid)
			require.GreaterOrEqual(t, avail, int64(0), "available "+where)
			require.Equal(t, max(0, r.available(n.Name, f)), avail, "available "+where)
			require.Equal(t, r.potential(n.Name, f), tree.Potential(id, fid), "potential "+where)
			if n.Kind != quota.Queue {
				continue
			}
			for _, g := range []int64{0, 1, avail - 1, avail, avail + 1} {
				if g < 0 {
					continue
				}
				mode, from, h := r.fits(n.Name, f, g)
				v := tree.Fits(id, fid, g)
				require.Equal(t, mode, v.Mode, "fits %d %s: %v", g, where, v)
				if mode == quota.FitsBorrowing {
					require.Equal(t, from, tree.Name(v.From), "from %d %s", g, where)
					require.Equal(t, h, v.Height, "height %d %s", g, where)
				}
				if mode == quota.NoFit {
					require.Equal(t, g-v.Available, v.Reason.ShortBy)
					require.NotEqual(t, quota.ReasonNone, v.Reason.Kind)
				}
			}
		}
		require.Equal(t, r.share(n.Name), tree.DominantShare(id), "share %s", n.Name)
	}
}

// genSpec draws a random forest: 1-2 flavors, up to 10 nodes, each node's
// parent an earlier cohort (or none), random quotas and limits, then the
// nodes in a random order so that New cannot rely on parents coming first.
func genSpec(t *rapid.T) quota.Spec {
	flavors := []string{"H100", "H200"}[:rapid.IntRange(1, 2).Draw(t, "flavors")]
	n := rapid.IntRange(1, 10).Draw(t, "nodes")
	parent := make([]int, n)
	hasKids := make([]bool, n)
	for i := range n {
		parent[i] = -1
		if i > 0 && rapid.IntRange(0, 5).Draw(t, "rootChance") > 0 {
			parent[i] = rapid.IntRange(0, i-1).Draw(t, "parent")
			hasKids[parent[i]] = true
		}
	}
	nodes := make([]quota.NodeSpec, n)
	for i := range n {
		ns := quota.NodeSpec{Name: fmt.Sprintf("n%d", i), Kind: quota.Cohort}
		if parent[i] >= 0 {
			ns.Parent = fmt.Sprintf("n%d", parent[i])
		}
		if !hasKids[i] && rapid.IntRange(0, 3).Draw(t, "queueChance") > 0 {
			ns.Kind = quota.Queue
		}
		if rapid.Bool().Draw(t, "hasWeight") {
			w := float64(rapid.IntRange(0, 3).Draw(t, "weight"))
			ns.Weight = &w
		}
		for _, f := range flavors {
			if rapid.IntRange(0, 4).Draw(t, "serves") == 0 {
				continue
			}
			ns.Quotas = append(ns.Quotas, genQuota(t, f, parent[i] < 0))
		}
		nodes[i] = ns
	}
	return quota.Spec{Flavors: flavors, Nodes: rapid.Permutation(nodes).Draw(t, "order")}
}

func genQuota(t *rapid.T, flavor string, root bool) quota.FlavorQuota {
	fq := quota.FlavorQuota{Flavor: flavor, Nominal: int64(rapid.IntRange(0, 12).Draw(t, "nominal"))}
	if root {
		return fq
	}
	if rapid.Bool().Draw(t, "hasBorrowing") {
		fq.BorrowingLimit = quota.LimitOf(int64(rapid.IntRange(0, 10).Draw(t, "borrowing")))
	}
	if rapid.Bool().Draw(t, "hasLending") {
		fq.LendingLimit = quota.LimitOf(int64(rapid.IntRange(0, int(fq.Nominal)).Draw(t, "lending")))
	}
	return fq
}

// model runs a random sequence of calls against a tree and the reference.
type model struct {
	tree *quota.Tree
	ref  *reference
}

func (m *model) queues() []quota.NodeID { return m.tree.Queues() }

// step draws and applies one call. It checks that a refused call changed
// nothing and that the reference agrees on whether to refuse.
func (m *model) step(t *rapid.T, admitOnly bool) {
	nodes := m.tree.NumNodes()
	fid := quota.FlavorID(rapid.IntRange(0, m.tree.NumFlavors()-1).Draw(t, "flavor"))
	f := int(fid)
	before := m.tree.Clone()
	var err error
	kind := rapid.IntRange(0, 3).Draw(t, "op")
	switch {
	case kind <= 1 && len(m.queues()) > 0: // add: admission through Fits, or raw bookkeeping
		qid := rapid.SampledFrom(m.queues()).Draw(t, "queue")
		name := m.tree.Name(qid)
		_, served := m.ref.quota(name, f)
		gpus := int64(rapid.IntRange(0, 30).Draw(t, "gpus"))
		if kind == 0 || admitOnly {
			if !m.tree.Fits(qid, fid, gpus).Fits() {
				return
			}
		}
		err = m.tree.AddUsage(qid, fid, gpus)
		if served {
			require.NoError(t, err)
			m.ref.usage[name][f] += gpus
		} else {
			require.ErrorIs(t, err, quota.ErrFlavorNotServed)
		}
	case kind == 2 && len(m.queues()) > 0: // remove, sometimes too much
		qid := rapid.SampledFrom(m.queues()).Draw(t, "queue")
		name := m.tree.Name(qid)
		_, served := m.ref.quota(name, f)
		u := m.ref.usage[name][f]
		gpus := int64(rapid.IntRange(0, int(u)+2).Draw(t, "gpus"))
		err = m.tree.RemoveUsage(qid, fid, gpus)
		switch {
		case !served:
			require.ErrorIs(t, err, quota.ErrFlavorNotServed)
		case gpus > u:
			require.ErrorIs(t, err, quota.ErrUsageUnderflow)
		default:
			require.NoError(t, err)
			m.ref.usage[name][f] -= gpus
		}
	default: // edit a quota, sometimes invalidly
		id := quota.NodeID(rapid.IntRange(0, nodes-1).Draw(t, "node"))
		name := m.tree.Name(id)
		_, hasParent := m.tree.Parent(id)
		fq := genQuota(t, m.tree.FlavorName(fid), !hasParent && rapid.IntRange(0, 4).Draw(t, "rootLimits") > 0)
		var want error
		switch rapid.IntRange(0, 5).Draw(t, "invalid") {
		case 0:
			fq.Nominal = -1
			want = quota.ErrNegativeAmount
		case 1:
			fq.LendingLimit = quota.LimitOf(fq.Nominal + 1)
			want = quota.ErrLendingAboveQuota
		}
		if want == nil && !hasParent && (!fq.BorrowingLimit.IsZero() || !fq.LendingLimit.IsZero()) {
			want = quota.ErrLimitOnRoot
		}
		err = m.tree.SetQuota(id, fq)
		if want != nil {
			require.ErrorIs(t, err, want)
			break
		}
		require.NoError(t, err)
		m.ref.setQuota(name, fq)
	}
	if err != nil {
		require.Equal(t, before, m.tree, "a refused call changed the tree")
	}
	require.Equal(t, m.ref.spec, m.tree.Spec())
}

func (r *reference) setQuota(name string, fq quota.FlavorQuota) {
	for i := range r.spec.Nodes {
		n := &r.spec.Nodes[i]
		if n.Name != name {
			continue
		}
		for j := range n.Quotas {
			if n.Quotas[j].Flavor == fq.Flavor {
				n.Quotas[j] = fq
				return
			}
		}
		n.Quotas = append(n.Quotas, fq)
	}
}

func newModel(t *rapid.T) *model {
	spec := genSpec(t)
	tree, err := quota.New(spec)
	require.NoError(t, err)
	return &model{tree: tree, ref: newReference(tree.Spec())}
}

// TestMatchesReference: after every step of a random call sequence the
// incremental tree equals the brute-force recomputation, Available is never
// negative, and refused calls changed nothing.
func TestMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newModel(t)
		m.ref.check(t, m.tree)
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			m.step(t, false)
			m.ref.check(t, m.tree)
		}
	})
}

// TestGuarantee is the promise "borrowed capacity can always be taken
// back": in any state reached by admissions that passed Fits (with
// releases and quota edits in between), a queue below its nominal quota
// gets back to it once the queues above their own quota give up only their
// excess.
func TestGuarantee(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newModel(t)
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			m.step(t, true)
			checkGuarantee(t, m.tree)
		}
	})
}

func checkGuarantee(t *rapid.T, tree *quota.Tree) {
	for f := quota.FlavorID(0); int(f) < tree.NumFlavors(); f++ {
		for _, q := range tree.Queues() {
			need := tree.Nominal(q, f) - tree.Usage(q, f)
			if !tree.Serves(q, f) || need <= 0 {
				continue
			}
			sim := tree.Clone()
			for _, p := range sim.Queues() {
				if excess := sim.Usage(p, f) - sim.Nominal(p, f); excess > 0 {
					require.NoError(t, sim.RemoveUsage(p, f, excess))
				}
			}
			v := sim.Fits(q, f, need)
			require.Equal(t, quota.FitsNominal, v.Mode, "queue %s needs %d: %v", tree.Name(q), need, v)
		}
	}
}

func TestReferenceAgreesOnExample(t *testing.T) {
	tree, err := quota.New(referenceFleet())
	require.NoError(t, err)
	ref := newReference(tree.Spec())
	h, _ := tree.Flavor("H100")
	for name, gpus := range map[string]int64{"prod-inference": 500, "research": 848, "batch": 700} {
		id, _ := tree.Node(name)
		require.NoError(t, tree.AddUsage(id, h, gpus))
		ref.usage[name][0] = gpus
	}
	ref.check(t, tree)
	assert.Equal(t, int64(1548), tree.Usage(0, h))
}
