package quota_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// twoLevelTree is root > mid > {q, m2} and root > z, each queue with 4
// GPUs and 4 cores nominal (z 8 and 8): q uses 3 GPUs and m2 m2Use.
func twoLevelTree(t *testing.T, m2Use int64) (*quota.Tree, quota.NodeID, quota.FlavorID, quota.ResourceID) {
	t.Helper()
	queue := func(name, parent string, n int64) quota.NodeSpec {
		return quota.NodeSpec{Name: name, Parent: parent, Kind: quota.Queue, Quotas: []quota.FlavorQuota{
			{Flavor: "H100", Nominal: n, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: n * 1000}}}}}
	}
	tr, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
		{Name: "root", Kind: quota.Cohort},
		{Name: "mid", Parent: "root", Kind: quota.Cohort},
		queue("q", "mid", 4), queue("m2", "mid", 4), queue("z", "root", 8),
	}})
	require.NoError(t, err)
	q, _ := tr.Node("q")
	m2, _ := tr.Node("m2")
	f, _ := tr.Flavor("H100")
	cpu, _ := tr.Resource("cpu")
	require.NoError(t, tr.AddUsage(q, f, 3))
	require.NoError(t, tr.AddUsage(m2, f, m2Use))
	return tr, q, f, cpu
}

// q's own quota holds one more GPU; what it asks beyond that comes from
// the lowest subtree with room for it: mid while m2 lends, else the root.
// FitsRequest and the flavor assigner give the same height.
func TestBorrowingHeightCountsWhatTheQueueStillHolds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m2Use  int64
		gpus   int64
		from   string
		height int
	}{
		{"m2 full: the second GPU from the root", 4, 2, "root", 2},
		{"m2 full: three from the root", 4, 3, "root", 2},
		{"m2 lends two: three from mid", 2, 3, "mid", 1},
		{"m2 lends two: four from the root", 2, 4, "root", 2},
		{"m2 lends two: five from the root", 2, 5, "root", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, q, f, _ := twoLevelTree(t, tc.m2Use)
			v := tr.Fits(q, f, tc.gpus)
			require.Equal(t, quota.FitsBorrowing, v.Mode)
			require.Equal(t, tc.from, tr.Name(v.From))
			require.Equal(t, tc.height, v.Height)
			a := tr.Assign(q, []quota.PodSetRequest{{MilliGPUs: tc.gpus * 1000}}, quota.AssignOptions{})
			require.Equal(t, quota.AssignFit, a.Mode)
			require.Equal(t, tc.height, a.PodSets[0][0].Height)
			require.Equal(t, tc.height, a.Height)
		})
	}
}

// A request whose resources borrow at different heights borrows at the
// highest: GPUs from the root, cores from mid.
func TestFitsRequestBorrowsAtTheHighestOfItsResources(t *testing.T) {
	tr, q, f, cpu := twoLevelTree(t, 4)
	for _, tc := range []struct {
		name   string
		req    quota.Request
		from   string
		height int
	}{
		{"GPUs from the root, cores from mid", quota.Request{MilliGPUs: 3000, Resources: []quota.Amount{{Resource: cpu, Value: 5000}}}, "root", 2},
		{"cores alone from mid", quota.Request{MilliGPUs: 1000, Resources: []quota.Amount{{Resource: cpu, Value: 5000}}}, "mid", 1},
		{"cores from the root, GPUs within nominal", quota.Request{MilliGPUs: 1000, Resources: []quota.Amount{{Resource: cpu, Value: 9000}}}, "root", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tr.FitsRequest(q, f, tc.req)
			require.Equal(t, quota.FitsBorrowing, v.Mode)
			require.Equal(t, tc.from, tr.Name(v.From))
			require.Equal(t, tc.height, v.Height)
		})
	}
}

// Valid accepts the declared fungibility values only.
func TestWhenCanPreemptValidIsTheDeclaredValues(t *testing.T) {
	require.True(t, quota.PreemptTryNextFlavor.Valid())
	require.True(t, quota.Preempt.Valid())
	require.False(t, quota.WhenCanPreempt(2).Valid())
	require.False(t, quota.WhenCanPreempt(255).Valid())
}
