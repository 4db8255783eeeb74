package fleet_test

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// A queue whose quota is in two resource groups, as a Kueue
// ClusterQueue's resourceGroups: GPUs of the H100 flavor, and cores of
// "reserved" (16) then "spot" (64). Each pod set gets the first cpu flavor
// that still holds it: the training job's launcher takes reserved cores
// and its workers, which do not fit beside it, spot cores; the evaluation
// after it fits in what reserved has left. The admission says so, and a
// host passes it back when it adopts the job after a restart.
func Example_resourceGroups() {
	cores := map[string]int64{"cpu": 96000}
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Spec{Levels: []string{"rack", "node"}, Nodes: []topology.NodeSpec{
		{Name: "h0", Path: []string{"r0"}, GPUs: 8, Flavor: "H100", Resources: cores},
		{Name: "h1", Path: []string{"r0"}, GPUs: 8, Flavor: "H100", Resources: cores}}}
	cfg.Quota = quota.Spec{Flavors: []string{"H100", "reserved", "spot"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
		{Name: "team", Kind: quota.Queue,
			Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 16},
				{Flavor: "reserved", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 16000}}},
				{Flavor: "spot", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000}}}},
			ResourceGroups: []quota.ResourceGroup{{GPUs: true, Flavors: []string{"H100"}},
				{Resources: []string{"cpu"}, Flavors: []string{"reserved", "spot"}}}}}}
	s, err := fleet.New(cfg)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cpu := func(millicores int64) []gang.Resource { return []gang.Resource{{Name: "cpu", Amount: millicores}} }
	_ = s.Submit(now, gang.Workload{ID: "train", Queue: "team", Shape: gang.Training, Flavor: "H100",
		PodSets: []gang.PodSet{{Name: "launcher", Count: 1, Resources: cpu(8000)},
			{Name: "workers", Count: 2, GPUsPerPod: 4, Resources: cpu(16000)}}})
	_ = s.Submit(now, gang.Workload{ID: "eval", Queue: "team", Shape: gang.Batch, Flavor: "H100",
		PodSets: []gang.PodSet{{Name: "eval", Count: 1, GPUsPerPod: 1, Resources: cpu(8000)}}})
	for _, a := range s.Schedule(now).Admit {
		fmt.Println(a.ID, a.Flavors)
	}
	for _, v := range s.Snapshot().Queues[0].Flavors {
		for _, r := range v.Resources {
			fmt.Printf("%s: %d of %d %s in use\n", v.Flavor, r.InUse, r.Nominal, r.Resource)
		}
	}
	// Output:
	// train [map[cpu:reserved] map[cpu:spot]]
	// eval [map[cpu:reserved]]
	// reserved: 16000 of 16000 cpu in use
	// spot: 32000 of 64000 cpu in use
}
