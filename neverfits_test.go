package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// reachConfig is three 8-GPU H100 nodes in one leaf and one MIG node of
// 8 H100s in another, each with 64 cores, and a queue owning all 32 GPUs
// and 256 cores.
func reachConfig() fleet.Config {
	res := map[string]int64{"cpu": 64000}
	node := func(name, leaf string, mig bool) topology.NodeSpec {
		return topology.NodeSpec{Name: name, Path: []string{leaf}, GPUs: 8, Flavor: "H100", MIG: mig, Resources: res}
	}
	return fleet.Config{
		Topology: topology.Spec{Levels: []string{"leaf", "node"}, Nodes: []topology.NodeSpec{
			node("h0", "l0", false), node("h1", "l0", false), node("h2", "l0", false), node("m0", "l1", true)}},
		Quota: quota.Spec{Flavors: []string{"H100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
			{Name: "team", Kind: quota.Queue, Quotas: []quota.FlavorQuota{
				{Flavor: "H100", Nominal: 32, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 256000}}}}}}},
		Classes: []fleet.PriorityClass{{Name: "c", Value: 1}},
	}
}

func teamWork(id string, sets ...gang.PodSet) gang.Workload {
	for i := range sets {
		if sets[i].Name == "" {
			sets[i].Name = fmt.Sprintf("p%d", i)
		}
	}
	return gang.Workload{ID: id, Queue: "team", PriorityClass: "c", Shape: gang.Batch, Flavor: "H100", PodSets: sets}
}

// Work that would be accepted and then wait forever is refused at Submit
// with ErrNeverFits, the state unchanged; an elastic set whose MinCount
// fits is accepted though its Count is beyond reach.
func TestSubmitRefusesWorkThatCanNeverFit(t *testing.T) {
	cpu := func(m int64) []gang.Resource { return []gang.Resource{{Name: "cpu", Amount: m}} }
	for _, tt := range []struct {
		name string
		w    gang.Workload
		want error // nil: accepted
	}{
		{"cpu per pod above every node's", teamWork("w", gang.PodSet{Count: 1, GPUsPerPod: 1, Resources: cpu(64001)}), fleet.ErrNeverFits},
		{"cpu per pod of a node", teamWork("w", gang.PodSet{Count: 1, GPUsPerPod: 1, Resources: cpu(64000)}), nil},
		{"cpu total overflowing int64", teamWork("w", gang.PodSet{Count: 4, GPUsPerPod: 1, Resources: cpu(1 << 62)}), fleet.ErrNeverFits},
		{"cpu total of 2^20 pods overflowing", teamWork("w", gang.PodSet{Count: 1 << 20, Resources: cpu(1 << 43)}), fleet.ErrNeverFits},
		{"cpu totals of two pod sets overflowing", teamWork("w",
			gang.PodSet{Count: 1, GPUsPerPod: 1, Resources: cpu(1 << 62)}, gang.PodSet{Count: 1, GPUsPerPod: 1, Resources: cpu(1 << 62)}), fleet.ErrNeverFits},
		{"nine 7g.80gb slices on eight MIG GPUs", teamWork("w", gang.PodSet{Count: 9, MIG: "7g.80gb"}), fleet.ErrNeverFits},
		{"eight 7g.80gb slices", teamWork("w", gang.PodSet{Count: 8, MIG: "7g.80gb"}), nil},
		{"57 1g.10gb slices on eight MIG GPUs", teamWork("w", gang.PodSet{Count: 57, MIG: "1g.10gb"}), fleet.ErrNeverFits},
		{"40 half GPUs on one node", func() gang.Workload {
			w := teamWork("w", gang.PodSet{Count: 40, GPUShare: 500})
			w.Topology.Required = "node"
			return w
		}(), fleet.ErrNeverFits},
		{"16 half GPUs on one node", func() gang.Workload {
			w := teamWork("w", gang.PodSet{Count: 16, GPUShare: 500})
			w.Topology.Required = "node"
			return w
		}(), nil},
		{"elastic beyond reach, its minimum within", teamWork("w", gang.PodSet{Count: 16, MinCount: 2, GPUsPerPod: 8}), nil},
		{"elastic, its minimum beyond reach", teamWork("w", gang.PodSet{Count: 16, MinCount: 5, GPUsPerPod: 8}), fleet.ErrNeverFits},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := fleet.New(reachConfig())
			require.NoError(t, err)
			before := s.Snapshot()
			err = s.Submit(t0, tt.w)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
			assert.Equal(t, before, s.Snapshot(), "state unchanged")
		})
	}
}

// An elastic set of 2 to 16 8-GPU pods on a queue that reaches 56 GPUs
// is accepted, and starts at what fits.
func TestElasticSetBeyondReachWithAMinimumThatFitsIsAccepted(t *testing.T) {
	cfg := fleet.ReferenceConfigFor(topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"},
		Fanout: []int{2, 8}, GPUsPerNode: 8, Flavor: "H100"}))
	cfg.Quota.Nodes[1].Quotas[0].Nominal, cfg.Quota.Nodes[1].Quotas[0].LendingLimit = 72, quota.LimitOf(0)
	cfg.Quota.Nodes[2].Quotas[0].Nominal = 56
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	w := training("elastic", 16, fleet.ClassReservedResearch, "research")
	w.Topology = gang.TopologyRequest{}
	w.PodSets[0].MinCount = 2
	require.NoError(t, s.Submit(t0, w))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	assert.Len(t, d.Admit[0].Pods, 7, "56 GPUs of 8-GPU pods")
}

// A gang larger than the blocks of the booking it names is refused.
func TestAGangLargerThanItsBookingIsRefused(t *testing.T) {
	cfg := twoLeafConfig()
	cfg.Quota.Nodes[0].Quotas[0].Nominal = 64
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	_, err = s.Propose(t0, calendar.Request{ID: "b", Queue: "team", Flavor: "H100", GPUs: 32, Level: "leaf",
		Start: t0.Add(time.Hour), Duration: time.Hour})
	require.NoError(t, err)
	_, err = s.Approve(t0, "b", 0, "council")
	require.NoError(t, err)
	gangOf := func(id string, nodes int) gang.Workload {
		w := nodeJob(id, nodes)
		w.Booking = "b"
		return w
	}
	before := s.Snapshot()
	assert.ErrorIs(t, s.Submit(t0, gangOf("big", 5)), fleet.ErrNeverFits, "5 x 8 GPUs in a 32-GPU booking")
	assert.Equal(t, before, s.Snapshot())
	require.NoError(t, s.Submit(t0, gangOf("fits", 4)))
}

// Two pod sets asking 60,000 cpu each add up to 120,000 against a 96,000
// quota: never fits. A workload accepting [A100, H100] asking 40,000 cpu,
// beyond A100's 32,000 but within H100's, is accepted.
func TestResourceReachAddsUpPodSetsAndTriesEveryModel(t *testing.T) {
	cpu := []gang.Resource{{Name: "cpu", Amount: 60000}}
	for _, tt := range []struct {
		name string
		w    gang.Workload
		want error
	}{
		{"two pod sets of 60,000 cpu", func() gang.Workload {
			w := sharedWork("w", gang.PodSet{Name: "a", Count: 1, GPUsPerPod: 1, Resources: cpu})
			w.PodSets = append(w.PodSets, gang.PodSet{Name: "b", Count: 1, GPUsPerPod: 1, Resources: cpu})
			return w
		}(), fleet.ErrNeverFits},
		{"40,000 cpu on A100 or H100", func() gang.Workload {
			w := sharedWork("w", gang.PodSet{Count: 1, GPUsPerPod: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 40000}}})
			w.Flavor, w.Flavors = "", []string{"A100", "H100"}
			return w
		}(), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := fleet.New(shareConfig())
			require.NoError(t, err)
			err = s.Submit(t0, tt.w)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
}
