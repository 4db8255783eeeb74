package quota_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

func TestNewRefusesBadSpecs(t *testing.T) {
	neg, nan := -1.0, math.NaN()
	ok := func() []quota.NodeSpec {
		return []quota.NodeSpec{cohort("root", ""), queue("a", "root", q("H100", 1))}
	}
	for _, c := range []struct {
		name    string
		flavors []string
		nodes   []quota.NodeSpec
		err     error
		node    string
		field   string
	}{
		{"duplicate node", nil, append(ok(), queue("a", "root")), quota.ErrDuplicateNode, "a", "name"},
		{"unknown parent", nil, append(ok(), queue("b", "nowhere")), quota.ErrUnknownParent, "b", "parent"},
		{"self cycle", nil, append(ok(), cohort("c", "c")), quota.ErrCycle, "c", "parent"},
		{"cycle", nil, append(ok(), cohort("c", "d"), cohort("d", "c")), quota.ErrCycle, "c", "parent"},
		{"queue with children", nil, append(ok(), queue("b", "a")), quota.ErrQueueWithChildren, "a", "kind"},
		{"negative nominal", nil, append(ok(), queue("b", "root", q("H100", -1))), quota.ErrNegativeAmount, "b", "nominal"},
		{"negative borrowing", nil, append(ok(), queue("b", "root", qb("H100", 1, -1))), quota.ErrNegativeAmount, "b", "borrowingLimit"},
		{"negative lending", nil, append(ok(), queue("b", "root", ql("H100", 1, -1))), quota.ErrNegativeAmount, "b", "lendingLimit"},
		{"lending above nominal", nil, append(ok(), queue("b", "root", ql("H100", 1, 2))), quota.ErrLendingAboveQuota, "b", "lendingLimit"},
		{"negative weight", nil, append(ok(), quota.NodeSpec{Name: "b", Parent: "root", Kind: quota.Queue, Weight: &neg}), quota.ErrInvalidWeight, "b", "weight"},
		{"NaN weight", nil, append(ok(), quota.NodeSpec{Name: "b", Parent: "root", Kind: quota.Queue, Weight: &nan}), quota.ErrInvalidWeight, "b", "weight"},
		{"unknown flavor", nil, append(ok(), queue("b", "root", q("B200", 1))), quota.ErrUnknownFlavor, "b", "flavor"},
		{"duplicate flavor entry", nil, append(ok(), queue("b", "root", q("H100", 1), q("H100", 2))), quota.ErrDuplicateFlavor, "b", "quotas"},
		{"duplicate flavor", []string{"H100", "H100"}, ok(), quota.ErrDuplicateFlavor, "", "flavors"},
		{"empty flavor", []string{""}, ok(), quota.ErrInvalidName, "", "flavors"},
		{"empty name", nil, append(ok(), queue("", "root")), quota.ErrInvalidName, "", "name"},
		{"no kind", nil, append(ok(), quota.NodeSpec{Name: "b", Parent: "root"}), quota.ErrInvalidKind, "b", "kind"},
		{"limit on root", nil, []quota.NodeSpec{queue("solo", "", qb("H100", 1, 1))}, quota.ErrLimitOnRoot, "solo", "borrowingLimit/lendingLimit"},
		{"rules on cohort", nil, append(ok(), quota.NodeSpec{Name: "c", Parent: "root", Kind: quota.Cohort, QueueingStrategy: quota.StrictFIFO}), quota.ErrRulesOnCohort, "c", "preemption"},
		{"enum out of range", nil, append(ok(), quota.NodeSpec{Name: "b", Parent: "root", Kind: quota.Queue, Preemption: quota.Rules{WithinQueue: 9}}), quota.ErrInvalidSpec, "b", "preemption.withinQueue"},
		{"too large", nil, append(ok(), queue("b", "root", q("H100", quota.MaxAmount+1))), quota.ErrAmountTooLarge, "b", "nominal"},
		{"sum too large", nil, append(ok(), queue("b", "root", q("H100", quota.MaxAmount))), quota.ErrAmountTooLarge, "", "nominal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			flavors := c.flavors
			if flavors == nil {
				flavors = []string{"H100"}
			}
			tree, err := quota.New(quota.Spec{Flavors: flavors, Nodes: c.nodes})
			require.Nil(t, tree)
			require.ErrorIs(t, err, c.err)
			require.ErrorIs(t, err, quota.ErrInvalidSpec)
			var se *quota.SpecError
			require.True(t, errors.As(err, &se))
			assert.Equal(t, c.node, se.Node)
			assert.Equal(t, c.field, se.Field)
			assert.Contains(t, err.Error(), "quota: ")
		})
	}
}

func TestSeveralRootsAreIndependent(t *testing.T) {
	f := build(t, []string{"H100"},
		queue("solo", "", q("H100", 4)),
		cohort("root", ""),
		queue("a", "root", q("H100", 0)),
		queue("b", "root", q("H100", 8)),
	)
	assert.Equal(t, []quota.NodeID{f.n("solo"), f.n("root")}, f.tree.Roots())
	checkFits(t, f, []fitCase{
		{name: "solo has its own", queue: "solo", flavor: "H100", gpus: 4, mode: quota.FitsNominal},
		{name: "solo borrows from nobody", queue: "solo", flavor: "H100", gpus: 5, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "solo", limit: 4, shortBy: 1},
		{name: "a borrows only in its tree", queue: "a", flavor: "H100", gpus: 9, mode: quota.NoFit,
			reason: quota.ReasonQuota, bite: "root", limit: 8, shortBy: 1},
	})
}

func TestAccessors(t *testing.T) {
	th := int32(100)
	f := build(t, []string{"H100", "H200"},
		queue("q0", "top", q("H100", 1)),
		cohort("top", ""),
		cohort("mid", "top"),
		quota.NodeSpec{Name: "q1", Parent: "mid", Kind: quota.Queue, QueueingStrategy: quota.StrictFIFO,
			Preemption: quota.Rules{ReclaimWithinCohort: quota.ReclaimLowerPriority, BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}},
		queue("q2", "top"),
	)
	tr := f.tree
	// Pre-order IDs: top, q0, mid, q1, q2.
	for i, name := range []string{"top", "q0", "mid", "q1", "q2"} {
		assert.Equal(t, quota.NodeID(i), f.n(name))
		assert.Equal(t, name, tr.Name(quota.NodeID(i)))
	}
	assert.Equal(t, []quota.NodeID{1, 3, 4}, tr.Queues())
	assert.Equal(t, []quota.NodeID{1, 2, 4}, tr.Children(0))
	first, end := tr.Subtree(f.n("mid"))
	assert.Equal(t, [2]quota.NodeID{2, 4}, [2]quota.NodeID{first, end})
	p, ok := tr.Parent(f.n("q1"))
	assert.True(t, ok)
	assert.Equal(t, f.n("mid"), p)
	_, ok = tr.Parent(f.n("top"))
	assert.False(t, ok)
	assert.Equal(t, 2, tr.Depth(f.n("q1")))
	assert.Equal(t, f.n("top"), tr.Root(f.n("q1")))
	assert.True(t, tr.IsQueue(f.n("q1")))
	assert.False(t, tr.IsQueue(f.n("mid")))
	assert.Equal(t, quota.StrictFIFO, tr.Strategy(f.n("q1")))
	th2, ok := tr.Rules(f.n("q1")).BorrowWithinCohort.Threshold()
	assert.True(t, ok)
	assert.Equal(t, int32(100), th2)
	th = 5 // the tree keeps its own copy
	th2, _ = tr.Rules(f.n("q1")).BorrowWithinCohort.Threshold()
	assert.Equal(t, int32(100), th2)
	assert.Equal(t, 1.0, tr.Weight(f.n("q1")))
	assert.Equal(t, []string{"H100", "H200"}, tr.Flavors())
	_, ok = tr.Node("nope")
	assert.False(t, ok)
	_, ok = tr.Flavor("nope")
	assert.False(t, ok)
}

func TestSpecJSONRoundTrip(t *testing.T) {
	data, err := os.ReadFile("testdata/reference_fleet.json")
	require.NoError(t, err)
	spec, err := quota.ParseSpec(data)
	require.NoError(t, err)
	tree, err := quota.New(spec)
	require.NoError(t, err)
	assert.Equal(t, spec, tree.Spec())
	out, err := json.MarshalIndent(tree.Spec(), "", "  ")
	require.NoError(t, err)
	assert.JSONEq(t, string(data), string(out))
	again, err := quota.ParseSpec(out)
	require.NoError(t, err)
	assert.Equal(t, spec, again)
}

func TestParseSpecIsStrict(t *testing.T) {
	for _, c := range []string{
		`{"flavors":["H100"],"nodes":[{"name":"a","kind":"queue","colour":"red"}]}`,
		`{"flavors":["H100"],"nodes":[{"name":"a","kind":"leaf"}]}`,
		`{"flavors":["H100"],"nodes":[{"name":"a","kind":"queue","preemption":{"withinQueue":"Always"}}]}`,
		`{"flavors":["H100"]} {}`,
		`{"flavors":["H100"],"nodes":[{"name":"a","kind":"queue","quotas":[{"flavor":"H100","nominal":1.5}]}]}`,
		`[`,
	} {
		_, err := quota.ParseSpec([]byte(c))
		require.ErrorIs(t, err, quota.ErrInvalidSpec, c)
		var se *quota.SpecError
		require.True(t, errors.As(err, &se), c)
	}
}

// A SpecError names the node, flavor and field it has, in that order,
// and leaves out the ones it has not.
func TestSpecErrorNamesWhatItHas(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  quota.SpecError
		want string
	}{
		{"everything", quota.SpecError{Node: "a", Flavor: "H100", Field: "nominal", Detail: "9 above 8", Err: quota.ErrAmountTooLarge},
			`quota: amount too large: node "a", flavor "H100", field nominal, 9 above 8`},
		{"no node", quota.SpecError{Flavor: "H100", Field: "nominal", Err: quota.ErrAmountTooLarge},
			`quota: amount too large: flavor "H100", field nominal`},
		{"no flavor", quota.SpecError{Node: "a", Field: "weight", Err: quota.ErrInvalidWeight},
			`quota: invalid fair-sharing weight: node "a", field weight`},
		{"detail alone", quota.SpecError{Detail: "two roots", Err: quota.ErrInvalidSpec},
			`quota: invalid spec: two roots`},
		{"nothing", quota.SpecError{Err: quota.ErrCycle}, quota.ErrCycle.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
		})
	}
}
