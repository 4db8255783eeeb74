package fleet_test

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Inference, under its guarantee, takes back a GPU that borrowed batch
// work time-slices: the batch pods sharing one GPU drain for it (no
// nomination: PendingView.Reclaiming lists them), and once they have
// exited the replica starts on the GPU they freed.
func Example_reclaimShares() {
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Spec{Levels: []string{"leaf", "node"}, Nodes: []topology.NodeSpec{
		{Name: "n0", Path: []string{"l0"}, GPUs: 2, Flavor: "H100"}}}
	cfg.Quota.Nodes[1].Quotas[0].Nominal, cfg.Quota.Nodes[1].Quotas[0].LendingLimit = 2, quota.Limit{}
	cfg.Quota.Nodes[2].Quotas[0].Nominal = 0
	s, err := fleet.New(cfg)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		_ = s.Submit(now, gang.Workload{ID: fmt.Sprintf("eval-%d", i), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
			Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUShare: 500}}, Drain: gang.DrainContract{Preemptible: true}})
	}
	fmt.Println("batch admitted:", len(s.Schedule(now).Admit))

	now = now.Add(10 * time.Minute)
	_ = s.Submit(now, gang.Workload{ID: "replica", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
		Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 1}}})
	d := s.Schedule(now)
	for _, x := range d.Drain {
		fmt.Printf("drain %s (%s) for %v by %s\n", x.ID, x.Reason, x.Beneficiaries, x.Deadline.Format("15:04:05"))
	}
	fmt.Println("waits on:", s.Snapshot().Pending[0].Reclaiming)

	for _, x := range d.Drain {
		_ = s.Exited(now.Add(time.Minute), x.ID, gang.ExitDrained)
	}
	for _, a := range s.Schedule(now.Add(time.Minute)).Admit {
		fmt.Printf("admit %s on %s: %d GPU\n", a.ID, a.Pods[0].Node, a.Pods[0].GPUs)
	}
	// Output:
	// batch admitted: 4
	// drain eval-0 (reclaim) for [replica] by 00:12:00
	// drain eval-1 (reclaim) for [replica] by 00:12:00
	// waits on: [eval-0 eval-1]
	// admit replica on n0: 1 GPU
}
