package quota_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

func q(flavor string, nominal int64) quota.FlavorQuota {
	return quota.FlavorQuota{Flavor: flavor, Nominal: nominal}
}

func qb(flavor string, nominal, borrowing int64) quota.FlavorQuota {
	return quota.FlavorQuota{Flavor: flavor, Nominal: nominal, BorrowingLimit: quota.LimitOf(borrowing)}
}

func ql(flavor string, nominal, lending int64) quota.FlavorQuota {
	return quota.FlavorQuota{Flavor: flavor, Nominal: nominal, LendingLimit: quota.LimitOf(lending)}
}

func cohort(name, parent string, quotas ...quota.FlavorQuota) quota.NodeSpec {
	return quota.NodeSpec{Name: name, Parent: parent, Kind: quota.Cohort, Quotas: quotas}
}

func queue(name, parent string, quotas ...quota.FlavorQuota) quota.NodeSpec {
	return quota.NodeSpec{Name: name, Parent: parent, Kind: quota.Queue, Quotas: quotas}
}

// fixture wraps a tree with name-based helpers so tables read as prose.
type fixture struct {
	t    *testing.T
	tree *quota.Tree
}

func build(t *testing.T, flavors []string, nodes ...quota.NodeSpec) fixture {
	t.Helper()
	tree, err := quota.New(quota.Spec{Flavors: flavors, Nodes: nodes})
	require.NoError(t, err)
	return fixture{t, tree}
}

func (f fixture) n(name string) quota.NodeID {
	f.t.Helper()
	id, ok := f.tree.Node(name)
	require.True(f.t, ok, name)
	return id
}

func (f fixture) fl(name string) quota.FlavorID {
	f.t.Helper()
	id, ok := f.tree.Flavor(name)
	require.True(f.t, ok, name)
	return id
}

func (f fixture) add(queue, flavor string, gpus int64) {
	f.t.Helper()
	require.NoError(f.t, f.tree.AddUsage(f.n(queue), f.fl(flavor), gpus))
}

func (f fixture) fits(queue, flavor string, gpus int64) quota.Verdict {
	return f.tree.Fits(f.n(queue), f.fl(flavor), gpus)
}

type fitCase struct {
	name    string
	queue   string
	flavor  string
	gpus    int64
	mode    quota.Mode
	from    string // FitsBorrowing: the node lent from
	height  int
	reason  quota.ReasonKind
	bite    string // NoFit: the node whose limit bites
	limit   int64
	shortBy int64
}

func checkFits(t *testing.T, f fixture, cases []fitCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := f.fits(c.queue, c.flavor, c.gpus)
			require.Equal(t, c.mode, v.Mode, v.String())
			switch c.mode {
			case quota.FitsBorrowing:
				assert.Equal(t, c.from, f.tree.Name(v.From))
				assert.Equal(t, c.height, v.Height)
			case quota.FitsNominal:
				assert.Equal(t, f.n(c.queue), v.From)
				assert.Zero(t, v.Height)
			case quota.NoFit:
				assert.Equal(t, c.reason, v.Reason.Kind, v.String())
				if c.bite != "" {
					assert.Equal(t, c.bite, f.tree.Name(v.Reason.Node))
				}
				assert.Equal(t, c.limit, v.Reason.Limit)
				assert.Equal(t, c.shortBy, v.Reason.ShortBy)
				assert.Equal(t, c.gpus-v.Available, v.Reason.ShortBy)
			}
			assert.NotEmpty(t, v.String())
		})
	}
}

func TestBorrowingLimit(t *testing.T) {
	f := build(t, []string{"H100"},
		cohort("root", ""),
		queue("a", "root", qb("H100", 10, 5)),
		queue("b", "root", q("H100", 10)),
	)
	checkFits(t, f, []fitCase{
		{name: "within nominal", queue: "a", flavor: "H100", gpus: 10, mode: quota.FitsNominal},
		{name: "up to the limit", queue: "a", flavor: "H100", gpus: 15, mode: quota.FitsBorrowing, from: "root", height: 1},
		{name: "past the limit", queue: "a", flavor: "H100", gpus: 16, mode: quota.NoFit,
			reason: quota.ReasonBorrowingLimit, bite: "a", limit: 5, shortBy: 1},
		{name: "unlimited sibling takes all", queue: "b", flavor: "H100", gpus: 20, mode: quota.FitsBorrowing, from: "root", height: 1},
		{name: "tree exhausted", queue: "b", flavor: "H100", gpus: 21, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 20, shortBy: 1},
	})
	// Once b uses 8 of its own, only 2 of b's quota are left to lend: the
	// tree, not a's limit, binds.
	f.add("b", "H100", 8)
	checkFits(t, f, []fitCase{
		{name: "tree binds", queue: "a", flavor: "H100", gpus: 13, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 20, shortBy: 1},
	})
	assert.Equal(t, int64(15), f.tree.Potential(f.n("a"), f.fl("H100")))
	f.add("b", "H100", 8) // b now borrows 6 of a's quota
	checkFits(t, f, []fitCase{
		{name: "tree binds before the limit", queue: "a", flavor: "H100", gpus: 5, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 20, shortBy: 1},
	})
	assert.Equal(t, int64(6), f.tree.Borrowed(f.n("b"), f.fl("H100")))
	assert.Equal(t, int64(0), f.tree.Borrowed(f.n("a"), f.fl("H100")))
}

func TestLendingLimitKeepsQuotaPrivate(t *testing.T) {
	f := build(t, []string{"H100"},
		cohort("root", ""),
		queue("a", "root", ql("H100", 10, 4)),
		queue("b", "root", q("H100", 0)),
	)
	h := f.fl("H100")
	assert.Equal(t, int64(6), f.tree.LocalQuota(f.n("a"), h))
	assert.Equal(t, int64(4), f.tree.SubtreeQuota(f.n("root"), h))
	checkFits(t, f, []fitCase{
		{name: "b borrows only what a lends", queue: "b", flavor: "H100", gpus: 4, mode: quota.FitsBorrowing, from: "root", height: 1},
		{name: "b cannot reach a's private part", queue: "b", flavor: "H100", gpus: 5, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 4, shortBy: 1},
	})
	f.add("b", "H100", 4)
	checkFits(t, f, []fitCase{
		{name: "a keeps its private 6", queue: "a", flavor: "H100", gpus: 6, mode: quota.FitsNominal},
		{name: "but not the lent 4", queue: "a", flavor: "H100", gpus: 7, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 4, shortBy: 1},
	})
	// a's usage inside its local quota never reaches the parent.
	f.add("a", "H100", 6)
	assert.Equal(t, int64(4), f.tree.Usage(f.n("root"), h))
	assert.Equal(t, int64(10), f.tree.InUse(f.n("root"), h))
}

func TestCohortPoolSharedByChildren(t *testing.T) {
	// root
	// ├── research (pool 6)
	// │   ├── x 2
	// │   └── y 2
	// └── ops
	//     └── z 4
	f := build(t, []string{"H100"},
		cohort("root", ""),
		cohort("research", "root", q("H100", 6)),
		queue("x", "research", q("H100", 2)),
		queue("y", "research", q("H100", 2)),
		cohort("ops", "root"),
		queue("z", "ops", q("H100", 4)),
	)
	checkFits(t, f, []fitCase{
		{name: "own quota", queue: "x", flavor: "H100", gpus: 2, mode: quota.FitsNominal},
		{name: "cohort pool", queue: "x", flavor: "H100", gpus: 8, mode: quota.FitsBorrowing, from: "research", height: 1},
		{name: "pool and sibling", queue: "x", flavor: "H100", gpus: 10, mode: quota.FitsBorrowing, from: "research", height: 1},
		{name: "other cohort's quota", queue: "x", flavor: "H100", gpus: 14, mode: quota.FitsBorrowing, from: "root", height: 2},
		{name: "z borrows the pool", queue: "z", flavor: "H100", gpus: 14, mode: quota.FitsBorrowing, from: "root", height: 2},
		{name: "nothing more", queue: "z", flavor: "H100", gpus: 15, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 14, shortBy: 1},
	})
	f.add("x", "H100", 7) // 2 own + 5 of the pool
	h := f.fl("H100")
	assert.Equal(t, int64(7), f.tree.Usage(f.n("research"), h))
	assert.Equal(t, int64(0), f.tree.Borrowed(f.n("research"), h))
	assert.Equal(t, int64(5), f.tree.Borrowed(f.n("x"), h))
	checkFits(t, f, []fitCase{
		{name: "y still within nominal", queue: "y", flavor: "H100", gpus: 2, mode: quota.FitsNominal},
		{name: "y borrows the rest of the pool", queue: "y", flavor: "H100", gpus: 3, mode: quota.FitsBorrowing, from: "research", height: 1},
		{name: "y borrows from ops", queue: "y", flavor: "H100", gpus: 4, mode: quota.FitsBorrowing, from: "root", height: 2},
	})
}

func TestUnlimitedBorrowerAndWeightZero(t *testing.T) {
	zero, two := 0.0, 2.0
	f := build(t, []string{"H100"},
		cohort("root", ""),
		queue("prod", "root", q("H100", 10)),
		queue("research", "root", q("H100", 10)),
		quota.NodeSpec{Name: "batch", Parent: "root", Kind: quota.Queue, Weight: &zero, Quotas: []quota.FlavorQuota{q("H100", 0)}},
		quota.NodeSpec{Name: "heavy", Parent: "root", Kind: quota.Queue, Weight: &two, Quotas: []quota.FlavorQuota{q("H100", 0)}},
	)
	checkFits(t, f, []fitCase{
		{name: "borrows everything idle", queue: "batch", flavor: "H100", gpus: 20, mode: quota.FitsBorrowing, from: "root", height: 1},
	})
	assert.Equal(t, 0.0, f.tree.DominantShare(f.n("batch")).Value(), "not borrowing: share 0")
	f.add("batch", "H100", 1)
	f.add("prod", "H100", 15)
	f.add("heavy", "H100", 4)
	batch, prod, heavy := f.tree.DominantShare(f.n("batch")), f.tree.DominantShare(f.n("prod")), f.tree.DominantShare(f.n("heavy"))
	assert.True(t, math.IsInf(batch.Value(), 1), "weight 0 borrower: infinite share")
	assert.Equal(t, int64(math.MaxInt64), batch.Rounded())
	// Kueue: borrowed * 1000 / lendable(parent tree) / weight.
	assert.Equal(t, quota.Share{Borrowed: 5, Lendable: 20, Weight: 1}, prod)
	assert.Equal(t, 250.0, prod.Value())
	assert.Equal(t, 100.0, heavy.Value())
	assert.Equal(t, 1, batch.Compare(prod), "weight 0 borrowers are preempted first")
	assert.Equal(t, 1, prod.Compare(heavy))
	assert.Equal(t, -1, heavy.Compare(batch))
	assert.Equal(t, 0.0, f.tree.DominantShare(f.n("root")).Value(), "a root borrows from nobody")
	with := f.tree.DominantShareWith(f.n("research"), f.fl("H100"), 12)
	assert.Equal(t, 100.0, with.Value(), "an incoming 12 would make research borrow 2")
}

func TestFlavorsDoNotMix(t *testing.T) {
	f := build(t, []string{"H100", "H200"},
		cohort("root", ""),
		queue("a", "root", q("H100", 8)),
		queue("b", "root", q("H200", 8)),
		queue("c", "root", q("H100", 0), q("H200", 0)),
	)
	checkFits(t, f, []fitCase{
		{name: "a has no H200", queue: "a", flavor: "H200", gpus: 1, mode: quota.NoFit, reason: quota.ReasonNotServed, bite: "a", shortBy: 1},
		{name: "a cannot borrow b's H200 as H100", queue: "a", flavor: "H100", gpus: 9, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 8, shortBy: 1},
		{name: "c borrows H100", queue: "c", flavor: "H100", gpus: 8, mode: quota.FitsBorrowing, from: "root", height: 1},
		{name: "c borrows H200", queue: "c", flavor: "H200", gpus: 8, mode: quota.FitsBorrowing, from: "root", height: 1},
	})
	err := f.tree.AddUsage(f.n("a"), f.fl("H200"), 1)
	require.ErrorIs(t, err, quota.ErrFlavorNotServed)
	f.add("c", "H200", 8)
	checkFits(t, f, []fitCase{
		{name: "H200 use leaves H100 alone", queue: "a", flavor: "H100", gpus: 8, mode: quota.FitsNominal},
	})
}

func TestUsageErrorsLeaveTreeUnchanged(t *testing.T) {
	f := build(t, []string{"H100"},
		cohort("root", ""),
		queue("a", "root", q("H100", 4)),
	)
	f.add("a", "H100", 3)
	before := f.tree.Clone()
	h, a, root := f.fl("H100"), f.n("a"), f.n("root")
	for _, c := range []struct {
		name string
		err  error
		call func() error
	}{
		{"unknown node", quota.ErrUnknownNode, func() error { return f.tree.AddUsage(99, h, 1) }},
		{"unknown flavor", quota.ErrUnknownFlavor, func() error { return f.tree.AddUsage(a, 7, 1) }},
		{"cohort", quota.ErrNotQueue, func() error { return f.tree.AddUsage(root, h, 1) }},
		{"negative", quota.ErrNegativeAmount, func() error { return f.tree.AddUsage(a, h, -1) }},
		{"huge", quota.ErrAmountTooLarge, func() error { return f.tree.AddUsage(a, h, quota.MaxAmount) }},
		{"underflow", quota.ErrUsageUnderflow, func() error { return f.tree.RemoveUsage(a, h, 4) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			require.ErrorIs(t, err, c.err)
			var ue *quota.UsageError
			require.True(t, errors.As(err, &ue))
			assert.Equal(t, before, f.tree)
		})
	}
	v := f.tree.Fits(root, h, 1)
	assert.Equal(t, quota.ReasonBadRequest, v.Reason.Kind)
}

func TestRemoveThenAddIsExact(t *testing.T) {
	f := build(t, []string{"H100"},
		cohort("root", ""),
		cohort("mid", "root", ql("H100", 3, 1)),
		queue("a", "mid", ql("H100", 4, 2)),
		queue("b", "mid", qb("H100", 1, 2)),
		queue("c", "root", q("H100", 5)),
	)
	f.add("a", "H100", 9)
	f.add("b", "H100", 2)
	f.add("c", "H100", 1)
	before := f.tree.Clone()
	a, h := f.n("a"), f.fl("H100")
	require.NoError(t, f.tree.RemoveUsage(a, h, 7))
	require.NoError(t, f.tree.AddUsage(a, h, 7))
	assert.True(t, quota.SameState(before, f.tree), "the tree is as it was")
	assert.Greater(t, f.tree.Changes(), before.Changes(), "both changes are counted")
}

func TestCloneIsIndependent(t *testing.T) {
	f := build(t, []string{"H100"}, cohort("root", ""), queue("a", "root", q("H100", 4)))
	a, h := f.n("a"), f.fl("H100")
	c := f.tree.Clone()
	require.NoError(t, c.AddUsage(a, h, 3))
	require.NoError(t, c.SetQuota(a, q("H100", 9)))
	assert.Equal(t, int64(0), f.tree.Usage(a, h))
	assert.Equal(t, int64(4), f.tree.Nominal(a, h))
	f.tree.CopyTo(c)
	assert.Equal(t, f.tree, c)
	allocs := testing.AllocsPerRun(100, func() { f.tree.CopyTo(c) })
	assert.Zero(t, allocs)
}

func TestSetQuota(t *testing.T) {
	f := build(t, []string{"H100", "H200"},
		cohort("root", ""),
		queue("a", "root", q("H100", 10)),
		queue("b", "root", q("H100", 10)),
	)
	a, h := f.n("a"), f.fl("H100")
	f.add("a", "H100", 8)
	require.NoError(t, f.tree.SetQuota(a, ql("H100", 6, 0)))
	assert.Equal(t, int64(2), f.tree.Borrowed(a, h), "a queue above its new quota is a borrower")
	assert.Equal(t, int64(10), f.tree.SubtreeQuota(f.n("root"), h))
	assert.Equal(t, int64(2), f.tree.Usage(f.n("root"), h))
	checkFits(t, f, []fitCase{
		{name: "b keeps all but what a borrows", queue: "b", flavor: "H100", gpus: 8, mode: quota.FitsNominal},
		{name: "b cannot get back 2 without preemption", queue: "b", flavor: "H100", gpus: 9, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 10, shortBy: 1},
	})

	// A new flavor entry makes the queue serve it; Spec reflects the edits.
	require.NoError(t, f.tree.SetQuota(a, q("H200", 2)))
	spec := f.tree.Spec()
	assert.Equal(t, []quota.FlavorQuota{ql("H100", 6, 0), q("H200", 2)}, spec.Nodes[1].Quotas)

	before := f.tree.Clone()
	for _, c := range []struct {
		name string
		node quota.NodeID
		fq   quota.FlavorQuota
		err  error
	}{
		{"unknown node", 42, q("H100", 1), quota.ErrUnknownNode},
		{"unknown flavor", a, q("B200", 1), quota.ErrUnknownFlavor},
		{"negative", a, q("H100", -1), quota.ErrNegativeAmount},
		{"lending above nominal", a, ql("H100", 1, 2), quota.ErrLendingAboveQuota},
		{"limit on root", f.n("root"), qb("H100", 1, 2), quota.ErrLimitOnRoot},
		{"too large", a, q("H100", quota.MaxAmount), quota.ErrAmountTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := f.tree.SetQuota(c.node, c.fq)
			require.ErrorIs(t, err, c.err)
			require.ErrorIs(t, err, quota.ErrInvalidSpec)
			var se *quota.SpecError
			require.True(t, errors.As(err, &se))
			assert.Equal(t, before, f.tree)
		})
	}
}

func TestValidateCapacity(t *testing.T) {
	f := build(t, []string{"H200", "H100"},
		cohort("root", "", q("H100", 100)),
		queue("a", "root", q("H100", 1000), q("H200", 10)),
		queue("b", "root", q("H200", 10)),
	)
	require.NoError(t, f.tree.ValidateCapacity(map[string]int64{"H100": 1100, "H200": 20, "B200": 8}))
	err := f.tree.ValidateCapacity(map[string]int64{"H100": 1000})
	require.ErrorIs(t, err, quota.ErrOverPromised)
	var ce *quota.CapacityError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, []quota.OverPromise{
		{Flavor: "H200", Guaranteed: 20, Capacity: 0},
		{Flavor: "H100", Guaranteed: 1100, Capacity: 1000},
	}, ce.Over)
	assert.Equal(t, "quota: guarantees exceed fleet capacity: H200 guarantees 20 GPUs, fleet has 0 "+
		"(no node in service has flavor H200: set the nodes' Flavor, topology.NodeSpec.Flavor or UniformSpec.Flavor); "+
		"H100 guarantees 1100 GPUs, fleet has 1000 (lower the nominal quotas or add nodes)", err.Error())
}

func TestFitsAndUsageDoNotAllocate(t *testing.T) {
	f := build(t, []string{"H100"},
		cohort("root", ""),
		cohort("mid", "root", ql("H100", 3, 1)),
		queue("a", "mid", qb("H100", 4, 2)),
	)
	a, h := f.n("a"), f.fl("H100")
	var v quota.Verdict
	allocs := testing.AllocsPerRun(100, func() {
		_ = f.tree.AddUsage(a, h, 2)
		v = f.tree.Fits(a, h, 50)
		_ = f.tree.DominantShare(a)
		_ = f.tree.RemoveUsage(a, h, 2)
	})
	assert.Zero(t, allocs)
	assert.False(t, v.Fits())
}
