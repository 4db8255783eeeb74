package quota_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// Every amount may be exactly MaxAmount and not one GPU more: a single
// quota or limit, the sum of one flavor's nominal quotas, a request, and
// the usage of one flavor across the tree.
func TestMaxAmountIsTheLastAcceptedAmount(t *testing.T) {
	maxQ := quota.MaxAmount
	spec := func(nodes ...quota.NodeSpec) error {
		_, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: append([]quota.NodeSpec{cohort("root", "")}, nodes...)})
		return err
	}
	for _, c := range []struct {
		name  string
		nodes []quota.NodeSpec
		err   error
	}{
		{"nominal at the bound", []quota.NodeSpec{queue("a", "root", q("H100", maxQ))}, nil},
		{"nominal above", []quota.NodeSpec{queue("a", "root", q("H100", maxQ+1))}, quota.ErrAmountTooLarge},
		{"borrowing limit at the bound", []quota.NodeSpec{queue("a", "root", qb("H100", 1, maxQ))}, nil},
		{"borrowing limit above", []quota.NodeSpec{queue("a", "root", qb("H100", 1, maxQ+1))}, quota.ErrAmountTooLarge},
		{"lending limit at the bound", []quota.NodeSpec{queue("a", "root", ql("H100", maxQ, maxQ))}, nil},
		{"nominal sum at the bound", []quota.NodeSpec{queue("a", "root", q("H100", maxQ-1)), queue("b", "root", q("H100", 1))}, nil},
		{"nominal sum above", []quota.NodeSpec{queue("a", "root", q("H100", maxQ)), queue("b", "root", q("H100", 1))}, quota.ErrAmountTooLarge},
		{"negative nominal", []quota.NodeSpec{queue("a", "root", q("H100", -1))}, quota.ErrNegativeAmount},
		{"zero nominal", []quota.NodeSpec{queue("a", "root", q("H100", 0))}, nil},
	} {
		err := spec(c.nodes...)
		if c.err == nil {
			assert.NoError(t, err, c.name)
		} else {
			assert.ErrorIs(t, err, c.err, c.name)
		}
	}

	// A named resource's quota has the same bound, and its error names
	// the resource's field.
	cpu := func(nominal int64) error {
		_, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
			cohort("root", ""), {Name: "a", Parent: "root", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100",
				Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: nominal}}}}}}})
		return err
	}
	assert.NoError(t, cpu(maxQ), "a resource's nominal at the bound")
	err := cpu(maxQ + 1)
	assert.ErrorIs(t, err, quota.ErrAmountTooLarge)
	var se *quota.SpecError
	if assert.ErrorAs(t, err, &se) {
		assert.Equal(t, "resources[cpu].nominal", se.Field)
	}

	f := build(t, []string{"H100"}, cohort("root", ""), queue("a", "root", q("H100", maxQ-1)), queue("b", "root", q("H100", 0)))
	a, b, h := f.n("a"), f.n("b"), f.fl("H100")
	assert.Equal(t, quota.ReasonBadRequest, f.tree.Fits(a, h, maxQ+1).Reason.Kind, "a request above MaxAmount")
	v := f.tree.Fits(a, h, maxQ)
	assert.Equal(t, quota.ReasonQuota, v.Reason.Kind, "a request of MaxAmount is judged, not refused: %s", v)
	assert.Equal(t, int64(1), v.Reason.ShortBy)
	assert.Equal(t, quota.FitsNominal, f.tree.Fits(a, h, maxQ-1).Mode)
	assert.Equal(t, quota.FitsNominal, f.tree.Fits(a, h, 0).Mode, "zero GPUs always fit")
	assert.Equal(t, quota.ReasonBadRequest, f.tree.Fits(a, h, -1).Reason.Kind)

	assert.ErrorIs(t, f.tree.AddUsage(a, h, maxQ+1), quota.ErrAmountTooLarge)
	assert.ErrorIs(t, f.tree.AddUsage(a, h, -1), quota.ErrNegativeAmount)
	require.NoError(t, f.tree.AddUsage(a, h, maxQ-1))
	require.NoError(t, f.tree.AddUsage(b, h, 1), "usage may reach MaxAmount")
	assert.ErrorIs(t, f.tree.AddUsage(b, h, 1), quota.ErrAmountTooLarge, "but not pass it")
	assert.Equal(t, maxQ, f.tree.InUse(f.n("root"), h))
	require.NoError(t, f.tree.RemoveUsage(b, h, 1), "removing all a queue holds")
	assert.ErrorIs(t, f.tree.RemoveUsage(b, h, 1), quota.ErrUsageUnderflow, "and not one more")

	require.NoError(t, f.tree.SetQuota(b, q("H100", 1)), "nominal sum back at the bound")
	require.NoError(t, f.tree.SetQuota(b, q("H100", 1)), "the same quota again: its old value leaves the sum")
	assert.ErrorIs(t, f.tree.SetQuota(b, q("H100", 2)), quota.ErrAmountTooLarge)
	assert.Equal(t, int64(1), f.tree.Nominal(b, h), "the refused edit left the tree unchanged")

	// A request in thousandths of a GPU is judged the same way.
	g := build(t, []string{"H100"}, cohort("root", ""), queue("a", "root", q("H100", 2)))
	v = g.tree.FitsRequest(g.n("a"), g.fl("H100"), quota.Request{MilliGPUs: 2500})
	require.Equal(t, quota.NoFit, v.Mode, v.String())
	assert.Equal(t, int64(500), v.Reason.ShortBy, "short by half a GPU, in thousandths")
	assert.True(t, g.tree.FitsRequest(g.n("a"), g.fl("H100"), quota.Request{MilliGPUs: 2000}).Fits())
}

// When a queue's borrowing limit allows exactly what its cohort has left,
// the cohort's quota is blamed: the limit bites only when it is the
// smaller term.
func TestBorrowingLimitTiedWithCohortRemainder(t *testing.T) {
	for _, c := range []struct {
		name    string
		bUses   int64
		reason  quota.ReasonKind
		bite    string
		limit   int64
		shortBy int64
	}{
		{"limit below the remainder", 1, quota.ReasonBorrowingLimit, "a", 2, 1},
		{"tie: the cohort", 2, quota.ReasonQuota, "root", 8, 1},
		{"remainder below the limit", 3, quota.ReasonQuota, "root", 8, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			// a may take its 4 plus at most 2 borrowed; the cohort holds 8.
			f := build(t, []string{"H100"}, cohort("root", ""), queue("a", "root", qb("H100", 4, 2)), queue("b", "root", q("H100", 4)))
			f.add("b", "H100", c.bUses)
			v := f.fits("a", "H100", 7)
			require.Equal(t, quota.NoFit, v.Mode, v.String())
			assert.Equal(t, c.reason, v.Reason.Kind, v.String())
			assert.Equal(t, c.bite, f.tree.Name(v.Reason.Node))
			assert.Equal(t, c.limit, v.Reason.Limit)
			assert.Equal(t, c.shortBy, v.Reason.ShortBy)
			assert.Equal(t, int64(6), v.Reason.Potential, "4 own + 2 borrowed, with the tree idle")
			assert.Equal(t, quota.FitsBorrowing, f.fits("a", "H100", 7-c.shortBy).Mode)
			assert.Contains(t, v.String(), "never fits", "6 is the most a can ever take")
			if six := f.fits("a", "H100", 6); !six.Fits() {
				assert.NotContains(t, six.String(), "never fits", "6 fit in a tree left idle")
			}
		})
	}
}

// Weight 0 makes a borrower's share infinite and sorts it after every
// weighted one; a weight-0 node that does not borrow has share 0, as does
// a borrower whose tree lends nothing.
func TestShareWeightZeroAndEdges(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name    string
		s       quota.Share
		value   float64
		rounded int64
	}{
		{"weight 0, borrowing", quota.Share{Borrowed: 1, Lendable: 10, Weight: 0}, inf, math.MaxInt64},
		{"weight 0, not borrowing", quota.Share{Borrowed: 0, Lendable: 10, Weight: 0}, 0, 0},
		{"nothing lendable", quota.Share{Borrowed: 1, Lendable: 0, Weight: 1}, 0, 0},
		{"weighted", quota.Share{Borrowed: 1, Lendable: 3, Weight: 2}, 1000.0 / 3 / 2, 167},
		{"rounded up", quota.Share{Borrowed: 1, Lendable: 3, Weight: 1}, 1000.0 / 3, 334},
		{"exact", quota.Share{Borrowed: 5, Lendable: 20, Weight: 1}, 250, 250},
	} {
		assert.InDelta(t, c.value, c.s.Value(), 1e-9, c.name)
		assert.Equal(t, c.rounded, c.s.Rounded(), c.name)
		assert.Equal(t, c.s.Borrowed > 0, c.s.Borrowing(), c.name)
	}
	z1 := quota.Share{Borrowed: 1, Lendable: 10}
	z2 := quota.Share{Borrowed: 2, Lendable: 10}
	w := quota.Share{Borrowed: 9, Lendable: 10, Weight: 0.001}
	idle := quota.Share{Lendable: 10}
	for _, c := range []struct {
		name string
		a, b quota.Share
		want int
	}{
		{"weight-0 borrowers by unweighted ratio", z1, z2, -1},
		{"weight-0 borrowers by unweighted ratio, reversed", z2, z1, 1},
		{"equal weight-0 borrowers", z1, z1, 0},
		{"weight 0 after any weighted share", z1, w, 1},
		{"weighted before weight 0", w, z1, -1},
		{"a weight-0 node not borrowing is share 0", idle, w, -1},
		{"a weight-0 node not borrowing is share 0, reversed", w, idle, 1},
		{"weight-0 borrowers of a tree that lends nothing: ratio 0", quota.Share{Borrowed: 1}, z1, -1},
		{"equal weighted shares", w, w, 0},
	} {
		assert.Equal(t, c.want, c.a.Compare(c.b), c.name)
	}

	zero := 0.0
	f := build(t, []string{"H100"}, cohort("root", ""), queue("a", "root", q("H100", 4)),
		quota.NodeSpec{Name: "z", Parent: "root", Kind: quota.Queue, Weight: &zero, Quotas: []quota.FlavorQuota{q("H100", 4)}})
	f.add("z", "H100", 4)
	s := f.tree.DominantShare(f.n("z"))
	assert.Equal(t, quota.Share{Weight: 0}, s, "at its quota: not borrowing, nothing lendable counted")
	assert.Zero(t, s.Value())
	s = f.tree.DominantShareWith(f.n("z"), f.fl("H100"), 1)
	assert.Equal(t, quota.Share{Borrowed: 1, Lendable: 8, Weight: 0}, s, "one above: borrowing")
	assert.True(t, math.IsInf(s.Value(), 1))
	assert.Equal(t, quota.Share{Weight: 1}, f.tree.DominantShareWith(f.n("a"), f.fl("H100"), 4), "exactly its quota")
}

// The last valid queue and flavor IDs are served; the first ones past the
// end are bad requests or unknown, never a panic.
func TestIDBoundariesInFitsAndUsage(t *testing.T) {
	f := build(t, []string{"H100", "A100"}, cohort("root", ""),
		queue("a", "root", q("H100", 4)), queue("b", "root", q("H100", 4), q("A100", 4)))
	last, lastF := quota.NodeID(f.tree.NumNodes()-1), quota.FlavorID(f.tree.NumFlavors()-1)
	require.Equal(t, "b", f.tree.Name(last))
	assert.Equal(t, quota.FitsNominal, f.tree.Fits(last, lastF, 1).Mode)
	assert.Equal(t, quota.FitsNominal, f.tree.Fits(last, 0, 1).Mode)
	assert.Equal(t, quota.ReasonBadRequest, f.tree.Fits(last+1, 0, 1).Reason.Kind)
	assert.Equal(t, quota.ReasonBadRequest, f.tree.Fits(last, lastF+1, 1).Reason.Kind)
	assert.Equal(t, quota.ReasonNotServed, f.tree.Fits(f.n("a"), lastF, 1).Reason.Kind)
	require.NoError(t, f.tree.AddUsage(last, lastF, 1))
	require.NoError(t, f.tree.AddUsage(last, 0, 1))
	assert.ErrorIs(t, f.tree.AddUsage(last+1, 0, 1), quota.ErrUnknownNode)
	assert.ErrorIs(t, f.tree.AddUsage(last, lastF+1, 1), quota.ErrUnknownFlavor)
	assert.ErrorIs(t, f.tree.AddUsage(-1, 0, 1), quota.ErrUnknownNode)
	assert.ErrorIs(t, f.tree.AddUsage(last, -1, 1), quota.ErrUnknownFlavor)
	assert.ErrorIs(t, f.tree.AddUsage(f.n("a"), lastF, 1), quota.ErrFlavorNotServed)
	assert.ErrorIs(t, f.tree.AddUsage(0, 0, 1), quota.ErrNotQueue)
	require.NoError(t, f.tree.SetQuota(last, q("A100", 5)))
	require.NoError(t, f.tree.SetQuota(0, q("H100", 1)), "node 0, the root")
	assert.ErrorIs(t, f.tree.SetQuota(last+1, q("A100", 5)), quota.ErrUnknownNode)
	assert.ErrorIs(t, f.tree.SetQuota(-1, q("A100", 5)), quota.ErrUnknownNode)
}

// With named resources the tree keeps more columns than flavors: a
// flavor ID just past the last flavor is still a bad request, never read
// as a resource column.
func TestFlavorPastTheEndWithResources(t *testing.T) {
	tr, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
		cohort("root", ""),
		{Name: "a", Parent: "root", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8,
			Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000}}}}}}})
	require.NoError(t, err)
	a, _ := tr.Node("a")
	v := tr.Fits(a, 1, 1)
	assert.Equal(t, quota.ReasonBadRequest, v.Reason.Kind, v.String())
	assert.Equal(t, quota.FitsNominal, tr.Fits(a, 0, 8).Mode)
}
