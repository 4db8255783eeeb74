package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
)

// groupsConfig is shareConfig's fleet with queue "team"'s quota in two
// resource groups, as a Kueue ClusterQueue whose GPUs and cpu come from
// different flavors: GPUs of H100 then A100, cpu of "ondemand" (8 cores)
// then "spot" (16 cores).
func groupsConfig() fleet.Config {
	cfg := shareConfig()
	cfg.Quota.Flavors = append(cfg.Quota.Flavors, "ondemand", "spot")
	for i, n := range cfg.Quota.Nodes {
		if n.Name != "team" {
			continue
		}
		n.Quotas = []quota.FlavorQuota{
			{Flavor: "H100", Nominal: 16}, {Flavor: "A100", Nominal: 8},
			{Flavor: "ondemand", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 8000}}},
			{Flavor: "spot", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 16000}}},
		}
		n.ResourceGroups = []quota.ResourceGroup{
			{GPUs: true, Flavors: []string{"H100", "A100"}},
			{Resources: []string{"cpu"}, Flavors: []string{"ondemand", "spot"}},
		}
		n.Preemption.WithinQueue = quota.WithinQueueLowerPriority
		cfg.Quota.Nodes[i] = n
	}
	return cfg
}

func cpuPods(name string, count, gpus int, cpu int64) gang.PodSet {
	return gang.PodSet{Name: name, Count: count, GPUsPerPod: gpus, Resources: []gang.Resource{{Name: "cpu", Amount: cpu}}}
}

// usage is queue team's usage of GPUs (thousandths) and cpu per flavor.
func usage(s *fleet.Scheduler) map[string]int64 {
	out := map[string]int64{}
	for _, f := range []string{"H100", "A100", "ondemand", "spot"} {
		for _, r := range []string{"", "cpu"} {
			if v := s.UsageOf("team", f, r); v != 0 {
				out[f+"/"+r] = v
			}
		}
	}
	return out
}

func TestResourceGroupsChargeEachPodSetInTheFirstFlavorOfEachGroupThatFits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		work    []gang.Workload
		usage   map[string]int64
		flavors [][]map[string]string // per workload, RunningView.Flavors
	}{
		{
			name:    "GPUs in the model, cpu in the first cpu flavor",
			work:    []gang.Workload{{ID: "a", PodSets: []gang.PodSet{cpuPods("w", 2, 2, 3000)}}},
			usage:   map[string]int64{"H100/": 4000, "ondemand/cpu": 6000},
			flavors: [][]map[string]string{{{"cpu": "ondemand"}}},
		},
		{
			name: "the first cpu flavor full, the next",
			work: []gang.Workload{
				{ID: "a", PodSets: []gang.PodSet{cpuPods("w", 2, 2, 3000)}},
				{ID: "b", PodSets: []gang.PodSet{cpuPods("w", 1, 1, 4000)}},
			},
			usage:   map[string]int64{"H100/": 5000, "ondemand/cpu": 6000, "spot/cpu": 4000},
			flavors: [][]map[string]string{{{"cpu": "ondemand"}}, {{"cpu": "spot"}}},
		},
		{
			name: "a launcher and its workers in different cpu flavors",
			work: []gang.Workload{{ID: "a", PodSets: []gang.PodSet{
				{Name: "launcher", Count: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 6000}}},
				cpuPods("workers", 2, 1, 2000)}}},
			usage:   map[string]int64{"H100/": 2000, "ondemand/cpu": 6000, "spot/cpu": 4000},
			flavors: [][]map[string]string{{{"cpu": "ondemand"}, {"cpu": "spot"}}},
		},
		{
			name:    "whole GPUs only: nothing else charged",
			work:    []gang.Workload{{ID: "a", PodSets: []gang.PodSet{{Name: "w", Count: 1, GPUsPerPod: 8}}}},
			usage:   map[string]int64{"H100/": 8000},
			flavors: [][]map[string]string{nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fleet.New(groupsConfig())
			require.NoError(t, err)
			for _, w := range tc.work {
				w.Queue, w.Priority, w.Shape, w.Flavor = "team", 10, gang.Inference, "H100"
				require.NoError(t, s.Submit(t0, w))
			}
			d := s.Schedule(t0)
			require.Len(t, d.Admit, len(tc.work), "%+v", d)
			require.NoError(t, s.CheckInvariants())
			assert.Equal(t, tc.usage, usage(s))
			snap := s.Snapshot()
			var got [][]map[string]string
			for _, r := range snap.Running {
				got = append(got, r.Flavors)
			}
			assert.Equal(t, tc.flavors, got)

			r, err := fleet.Restore(groupsConfig(), snap)
			require.NoError(t, err)
			require.NoError(t, r.CheckInvariants())
			assert.Equal(t, snap, r.Snapshot(), "a restart charges what the admission did")

			for _, w := range tc.work {
				require.NoError(t, s.Exited(t0.Add(time.Minute), w.ID, gang.ExitFinished))
			}
			require.NoError(t, s.CheckInvariants())
			assert.Empty(t, usage(s))
		})
	}
}

func TestResourceGroupsWaitWhenNoFlavorOfAGroupFits(t *testing.T) {
	s, err := fleet.New(groupsConfig())
	require.NoError(t, err)
	fill := gang.Workload{ID: "fill", Queue: "team", Priority: 10, Shape: gang.Inference, Flavor: "H100",
		PodSets: []gang.PodSet{{Name: "launcher", Count: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 4000}}},
			cpuPods("w", 1, 1, 12000)}}
	require.NoError(t, s.Submit(t0, fill))
	require.Len(t, s.Schedule(t0).Admit, 1)
	// 5 cores: 4 left in ondemand and 4 in spot, 8 in all.
	w := gang.Workload{ID: "big", Queue: "team", Priority: 10, Shape: gang.Inference, Flavor: "H100",
		PodSets: []gang.PodSet{cpuPods("w", 1, 1, 5000)}}
	require.NoError(t, s.Submit(t0, w))
	d := s.Schedule(t0)
	assert.Empty(t, d.Admit)
	assert.Empty(t, d.Drain)
	why, err := s.Explain("big")
	require.NoError(t, err)
	assert.Contains(t, why.Message, "5000 cpu of ondemand do not fit, 4000 available")
	assert.Equal(t, map[string]int64{"H100/": 1000, "ondemand/cpu": 4000, "spot/cpu": 12000}, usage(s))

	never := w
	never.ID = "never"
	never.PodSets = []gang.PodSet{cpuPods("w", 1, 1, 17000)}
	err = s.Submit(t0, never)
	require.ErrorIs(t, err, fleet.ErrNeverFits)
	assert.Contains(t, err.Error(), "in one flavor")
}

func TestResourceGroupsReclaimCpuFromAHolderOnAnotherModel(t *testing.T) {
	s, err := fleet.New(groupsConfig())
	require.NoError(t, err)
	low := gang.Workload{ID: "low", Queue: "team", Priority: 1, Shape: gang.Batch, Flavor: "A100",
		Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}, PodSets: []gang.PodSet{cpuPods("w", 1, 1, 8000)}}
	fill := gang.Workload{ID: "fill", Queue: "team", Priority: 1, Shape: gang.Batch, Flavor: "H100",
		Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}, PodSets: []gang.PodSet{cpuPods("w", 1, 1, 16000)}}
	require.NoError(t, s.Submit(t0, low))
	require.NoError(t, s.Submit(t0, fill))
	require.Len(t, s.Schedule(t0).Admit, 2)
	assert.Equal(t, map[string]int64{"A100/": 1000, "H100/": 1000, "ondemand/cpu": 8000, "spot/cpu": 16000}, usage(s))

	now := t0.Add(time.Hour)
	high := gang.Workload{ID: "high", Queue: "team", Priority: 10, Shape: gang.Inference, Flavor: "H100",
		PodSets: []gang.PodSet{cpuPods("w", 1, 1, 8000)}}
	require.NoError(t, s.Submit(now, high))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1, "%+v", d)
	assert.Equal(t, "low", d.Drain[0].ID, "the A100 holder frees ondemand's cpu")
	require.NoError(t, s.Exited(now.Add(time.Minute), "low", gang.ExitDrained))
	d = s.Schedule(now.Add(time.Minute))
	require.Len(t, d.Admit, 1)
	require.NoError(t, s.CheckInvariants())
	assert.Equal(t, map[string]int64{"H100/": 2000, "ondemand/cpu": 8000, "spot/cpu": 16000}, usage(s))
}

func TestAdoptionTakesTheFlavorsTheHostNames(t *testing.T) {
	s, err := fleet.New(groupsConfig())
	require.NoError(t, err)
	w := gang.Workload{ID: "a", Queue: "team", Priority: 10, Shape: gang.Inference, Flavor: "H100",
		PodSets: []gang.PodSet{cpuPods("w", 1, 1, 2000)}}
	pods := []fleet.PodAssignment{{PodSet: "w", Node: "h0", GPUs: 1}}
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods,
		Flavors: []map[string]string{{"cpu": "spot"}}}))
	require.NoError(t, s.CheckInvariants())
	assert.Equal(t, map[string]int64{"H100/": 1000, "spot/cpu": 2000}, usage(s))

	w.ID = "b"
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods}))
	assert.Equal(t, map[string]int64{"H100/": 2000, "ondemand/cpu": 2000, "spot/cpu": 2000}, usage(s),
		"no flavors named: the first that fits")

	w.ID = "c"
	for _, bad := range [][]map[string]string{{{"cpu": "A100"}}, {{"gpu": "spot"}}, {{}, {}}} {
		err := s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods, Flavors: bad})
		assert.ErrorIs(t, err, fleet.ErrInvalid, "%v", bad)
	}
	require.NoError(t, s.CheckInvariants())
}

func TestSetQueueReorderingAGroupsFlavorsChargesNewWorkThereAndOldWorkAsBefore(t *testing.T) {
	s, err := fleet.New(groupsConfig())
	require.NoError(t, err)
	old := gang.Workload{ID: "old", Queue: "team", Priority: 10, Shape: gang.Inference, Flavor: "H100",
		PodSets: []gang.PodSet{cpuPods("w", 1, 1, 2000)}}
	require.NoError(t, s.Submit(t0, old))
	require.Len(t, s.Schedule(t0).Admit, 1)

	var team quota.NodeSpec
	for _, n := range groupsConfig().Quota.Nodes {
		if n.Name == "team" {
			team = n
		}
	}
	team.ResourceGroups[1].Flavors = []string{"spot", "ondemand"}
	now := t0.Add(time.Minute)
	require.NoError(t, s.SetQueue(now, team))
	nw := old
	nw.ID = "new"
	require.NoError(t, s.Submit(now, nw))
	require.Len(t, s.Schedule(now).Admit, 1)
	require.NoError(t, s.CheckInvariants())
	assert.Equal(t, map[string]int64{"H100/": 2000, "ondemand/cpu": 2000, "spot/cpu": 2000}, usage(s),
		"old work stays charged where it was, new work takes the new first flavor")

	snap := s.Snapshot()
	r, err := fleet.Restore(groupsConfig(), snap)
	require.NoError(t, err)
	require.NoError(t, r.CheckInvariants())
	assert.Equal(t, snap, r.Snapshot())

	for _, id := range []string{"old", "new"} {
		require.NoError(t, s.Exited(now, id, gang.ExitFinished))
	}
	require.NoError(t, s.CheckInvariants())
	assert.Empty(t, usage(s))
}
