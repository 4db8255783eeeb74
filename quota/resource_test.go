package quota_test

import (
	"testing"

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
