package calendar_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// referenceQuota guarantees 1,800 of the reference fleet's 2,048 H100s.
func referenceQuota() quota.Spec {
	h100 := func(n int64) []quota.FlavorQuota { return []quota.FlavorQuota{{Flavor: "H100", Nominal: n}} }
	return quota.Spec{
		Flavors: []string{"H100"},
		Nodes: []quota.NodeSpec{
			{Name: "all", Kind: quota.Cohort},
			{Name: "prod-inference", Parent: "all", Kind: quota.Queue, Quotas: h100(1200)},
			{Name: "research", Parent: "all", Kind: quota.Queue, Quotas: h100(600)},
			{Name: "batch", Parent: "all", Kind: quota.Queue, Quotas: h100(0)},
		},
	}
}

func mustFleet(t testing.TB, spec topology.Spec) *topology.Fleet {
	f, err := topology.New(spec)
	require.NoError(t, err)
	return f
}

func mustTree(t testing.TB, spec quota.Spec) *quota.Tree {
	tr, err := quota.New(spec)
	require.NoError(t, err)
	return tr
}

// t0 is a Tuesday morning.
var _ = time.UTC

func t0() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }

func newReference(t testing.TB) (*calendar.Calendar, *topology.Fleet) {
	f := mustFleet(t, topology.Reference())
	c, err := calendar.New(t0(), calendar.Config{Fleet: f, Quota: mustTree(t, referenceQuota())})
	require.NoError(t, err)
	return c, f
}

// onNodes is a workload on every node of domain name at level l, 8 GPUs each.
func onNodes(f *topology.Fleet, id, level, name string) []placement.NodeGPUs {
	l, _ := f.Level(level)
	d, _ := f.Domain(l, name)
	lo, hi := f.Nodes(d)
	var out []placement.NodeGPUs
	for n := lo; n < hi; n++ {
		out = append(out, placement.NodeGPUs{Node: n, GPUs: f.Capacity(n)})
	}
	return out
}

func spineRequest(id string, start time.Time) calendar.Request {
	return calendar.Request{ID: id, Queue: "research", Flavor: "H100", GPUs: 512, Level: "spine",
		Start: start, Duration: 72 * time.Hour}
}
