package fleet_test

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Pods that share a GPU, take MIG slices or need cores only, on a fleet
// of one time-sliced H100 node, one MIG-partitioned H100 node and one
// A100 node; a workload that accepts either model lands on the only node
// with eight whole-free GPUs, the A100 one, and is charged there. A MIG
// profile no accepted model's nodes have is refused at submission.
func Example_sharedGPUs() {
	cores := map[string]int64{"cpu": 64000}
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Spec{Levels: []string{"rack", "node"}, Nodes: []topology.NodeSpec{
		{Name: "h0", Path: []string{"r0"}, GPUs: 8, Flavor: "H100", Resources: cores},
		{Name: "m0", Path: []string{"r0"}, GPUs: 8, Flavor: "H100", MIG: true, Resources: cores},
		{Name: "a0", Path: []string{"r1"}, GPUs: 8, Flavor: "A100", Resources: cores}}}
	cfg.Quota = quota.Spec{Flavors: []string{"H100", "A100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
		{Name: "team", Kind: quota.Queue, Quotas: []quota.FlavorQuota{
			{Flavor: "H100", Nominal: 16, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 128000}}},
			{Flavor: "A100", Nominal: 8, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000}}}}}}}
	s, err := fleet.New(cfg)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	work := func(id string, ps gang.PodSet, models ...string) gang.Workload {
		ps.Name = "server"
		return gang.Workload{ID: id, Queue: "team", Shape: gang.Inference, Flavors: models, PodSets: []gang.PodSet{ps}}
	}
	_ = s.Submit(now, work("chat-small", gang.PodSet{Count: 2, GPUShare: 500}, "H100"))
	_ = s.Submit(now, work("notebook", gang.PodSet{Count: 2, MIG: "3g.40gb"}, "H100"))
	_ = s.Submit(now, work("tokenizer", gang.PodSet{Count: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 16000}}}, "H100"))
	_ = s.Submit(now, work("embed", gang.PodSet{Count: 1, GPUsPerPod: 8}, "H100", "A100"))
	fmt.Print(s.Schedule(now))
	for _, r := range s.Snapshot().Running {
		fmt.Printf("%s on %s: %d thousandths of GPU\n", r.ID, r.Flavor, r.MilliGPUs)
	}
	err = s.Submit(now, work("bad", gang.PodSet{Count: 1, MIG: "3g.40gb"}, "A100"))
	fmt.Println(err)
	// Output:
	// admit chat-small queue=team wait=0s span=node: h0=0 server[0]@h0/gpu0:500m server[1]@h0/gpu0:500m
	// admit notebook queue=team wait=0s span=node: m0=0 server[0]@m0/gpu0:3g.40gb#0 server[1]@m0/gpu0:3g.40gb#4
	// admit tokenizer queue=team wait=0s span=node: h0=0
	// admit embed queue=team wait=0s span=node: a0=8
	// chat-small on H100: 1000 thousandths of GPU
	// embed on A100: 8000 thousandths of GPU
	// notebook on H100: 857 thousandths of GPU
	// tokenizer on H100: 0 thousandths of GPU
	// fleet: workload can never fit the fleet: placement: MIG profile no accepted GPU model has: submit "bad": pod set "server": no accepted GPU model has MIG profile "3g.40gb"
}
