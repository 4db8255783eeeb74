package quota_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/quota"
)

func resourceTree(t require.TestingT) *quota.Tree {
	tr, err := quota.New(quota.Spec{
		Flavors: []string{"H100", "L4"}, Resources: []string{"cpu", "memory"},
		Nodes: []quota.NodeSpec{
			{Name: "org", Kind: quota.Cohort},
			{Name: "a", Parent: "org", Kind: quota.Queue, Quotas: []quota.FlavorQuota{
				{Flavor: "H100", Nominal: 8, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000}, {Name: "memory", Nominal: 1 << 40}}},
				{Flavor: "L4", Nominal: 4, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 32000}}},
			}},
			{Name: "b", Parent: "org", Kind: quota.Queue, Quotas: []quota.FlavorQuota{
				{Flavor: "H100", Nominal: 8, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000, LendingLimit: quota.LimitOf(16000)}}},
			}},
		}})
	require.NoError(t, err)
	return tr
}

// Shares and resources are charged exactly: after any sequence of admits
// and exits, every queue's usage of every resource equals a recount of the
// requests that hold, and cohorts sum their queues.
func TestPropertyRequestsMatchRecount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tr := resourceTree(t)
		cpu, _ := tr.Resource("cpu")
		mem, _ := tr.Resource("memory")
		type held struct {
			q   quota.NodeID
			f   quota.FlavorID
			req quota.Request
		}
		var live []held
		for range rapid.IntRange(1, 50).Draw(t, "steps") {
			if len(live) > 0 && rapid.Bool().Draw(t, "exit") {
				i := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				require.NoError(t, tr.RemoveRequest(live[i].q, live[i].f, live[i].req))
				live = append(live[:i], live[i+1:]...)
			} else {
				q := quota.NodeID(rapid.IntRange(1, 2).Draw(t, "queue"))
				f := quota.FlavorID(rapid.IntRange(0, 1).Draw(t, "flavor"))
				req := quota.Request{MilliGPUs: int64(rapid.SampledFrom([]int{0, 100, 250, 500, 1000, 3000}).Draw(t, "milli"))}
				if rapid.Bool().Draw(t, "cpu") {
					req.Resources = append(req.Resources, quota.Amount{Resource: cpu, Value: int64(rapid.IntRange(1, 16).Draw(t, "cores")) * 1000})
				}
				if rapid.Bool().Draw(t, "mem") {
					req.Resources = append(req.Resources, quota.Amount{Resource: mem, Value: 1 << 30})
				}
				before := tr.Clone()
				v := tr.FitsRequest(q, f, req)
				if err := tr.AddRequest(q, f, req); err == nil {
					live = append(live, held{q, f, req})
				} else {
					require.Equal(t, before.Spec(), tr.Spec())
					for _, r := range []quota.ResourceID{quota.GPU, cpu, mem} {
						require.Equal(t, before.UsageOf(q, f, r), tr.UsageOf(q, f, r), "refused request left usage")
					}
					require.False(t, v.Fits() && tr.ServesResource(q, f, quota.GPU) && len(req.Resources) == 0 && req.MilliGPUs > 0, "fits but refused: %v", err)
				}
			}
			for _, q := range []quota.NodeID{1, 2} {
				for _, f := range []quota.FlavorID{0, 1} {
					for _, r := range []quota.ResourceID{quota.GPU, cpu, mem} {
						var want int64
						for _, h := range live {
							if h.q != q || h.f != f {
								continue
							}
							if r == quota.GPU {
								want += h.req.MilliGPUs
							}
							for _, a := range h.req.Resources {
								if a.Resource == r {
									want += a.Value
								}
							}
						}
						require.Equal(t, want, tr.InUseOf(q, f, r), "queue %d flavor %d %v", q, f, r)
					}
					require.Equal(t, (tr.InUseOf(q, f, quota.GPU)+999)/1000, tr.InUse(q, f), "whole GPUs round up")
				}
			}
			for _, f := range []quota.FlavorID{0, 1} {
				require.Equal(t, tr.InUseOf(1, f, cpu)+tr.InUseOf(2, f, cpu), tr.InUseOf(0, f, cpu), "cohort sums its queues")
			}
		}
	})
}

func TestRequestsRefuseBadInputTyped(t *testing.T) {
	tr := resourceTree(t)
	a, _ := tr.Node("a")
	require.ErrorIs(t, tr.AddRequest(a, 0, quota.Request{Resources: []quota.Amount{{Resource: 9, Value: 1}}}), quota.ErrUnknownResource)
	require.ErrorIs(t, tr.AddRequest(a, 1, quota.Request{Resources: []quota.Amount{{Resource: 2, Value: 1}}}), quota.ErrFlavorNotServed, "L4 has no memory quota")
	require.ErrorIs(t, tr.AddRequest(a, 0, quota.Request{MilliGPUs: -1}), quota.ErrNegativeAmount)
	require.Zero(t, tr.InUseOf(a, 0, quota.GPU))
	_, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{{Name: "q", Kind: quota.Queue,
		Quotas: []quota.FlavorQuota{{Flavor: "H100", Resources: []quota.ResourceQuota{{Name: "gpu-mem", Nominal: 1}}}}}}})
	require.ErrorIs(t, err, quota.ErrUnknownResource)
	// Half a GPU is charged half a GPU; the GPU-count API rounds up.
	require.NoError(t, tr.AddRequest(a, 0, quota.Request{MilliGPUs: 500}))
	require.Equal(t, int64(500), tr.UsageOf(a, 0, quota.GPU))
	require.Equal(t, int64(1), tr.Usage(a, 0))
	require.Equal(t, int64(15), tr.Available(a, 0), "15.5 GPUs left with what b lends, 15 whole")
	require.True(t, tr.FitsRequest(a, 0, quota.Request{MilliGPUs: 7500}).Fits())
	v := tr.FitsRequest(a, 0, quota.Request{MilliGPUs: 100, Resources: []quota.Amount{{Resource: 1, Value: 200000}}})
	require.False(t, v.Fits())
	cpu, _ := tr.Resource("cpu")
	require.Equal(t, cpu, v.Resource)
}

// FitsRequest reports a request within nominal quota in every resource as
// fitting nominally, and one that borrows in any resource as borrowing,
// from the cohort it borrows from; its verdict names the flavor, and a
// flavor past the last one is a bad request.
func TestFitsRequestModeAndFlavor(t *testing.T) {
	tr := resourceTree(t)
	a, _ := tr.Node("a")
	org, _ := tr.Node("org")
	cpu, _ := tr.Resource("cpu")
	cores := func(m int64) []quota.Amount { return []quota.Amount{{Resource: cpu, Value: m}} }
	for _, tc := range []struct {
		name string
		req  quota.Request
		mode quota.Mode
		from quota.NodeID
	}{
		{"nothing asked", quota.Request{}, quota.FitsNominal, a},
		{"GPUs within nominal", quota.Request{MilliGPUs: 8000}, quota.FitsNominal, a},
		{"cores within nominal", quota.Request{MilliGPUs: 1000, Resources: cores(64000)}, quota.FitsNominal, a},
		{"borrowing GPUs", quota.Request{MilliGPUs: 9000}, quota.FitsBorrowing, org},
		{"borrowing cores only", quota.Request{MilliGPUs: 1000, Resources: cores(65000)}, quota.FitsBorrowing, org},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tr.FitsRequest(a, 0, tc.req)
			assert.Equal(t, tc.mode, v.Mode)
			assert.Equal(t, tc.from, v.From)
			assert.Contains(t, v.String(), " H100 GPUs fit ")
			if tc.mode == quota.FitsBorrowing {
				assert.Contains(t, v.String(), `borrowing from cohort "org"`)
			}
		})
	}
	v := tr.FitsRequest(a, quota.FlavorID(tr.NumFlavors()), quota.Request{MilliGPUs: 1000})
	assert.Equal(t, quota.ReasonBadRequest, v.Reason.Kind)
}

// A request may list a resource twice: it is charged the total, and
// released only when the queue holds the total.
func TestRequestListingAResourceTwice(t *testing.T) {
	tr := resourceTree(t)
	a, _ := tr.Node("a")
	cpu, _ := tr.Resource("cpu")
	twice := func(x, y int64) quota.Request {
		return quota.Request{Resources: []quota.Amount{{Resource: cpu, Value: x}, {Resource: cpu, Value: y}}}
	}
	require.NoError(t, tr.AddRequest(a, 0, twice(3000, 2000)), "5000 of 64000 cores")
	assert.Equal(t, int64(5000), tr.UsageOf(a, 0, cpu))
	for _, tc := range []struct {
		name string
		req  quota.Request
		err  error
		left int64
	}{
		{"more than held in total", twice(3000, 3000), quota.ErrUsageUnderflow, 5000},
		{"part of it", twice(1000, 1500), nil, 2500},
		{"the rest", twice(2000, 500), nil, 0},
		{"nothing held", twice(1, 0), quota.ErrUsageUnderflow, 0},
	} {
		err := tr.RemoveRequest(a, 0, tc.req)
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, tc.name)
		} else {
			assert.NoError(t, err, tc.name)
		}
		assert.Equal(t, tc.left, tr.UsageOf(a, 0, cpu), tc.name)
	}
}
