package preempt_test

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// A research gang reclaims its quota from batch work that borrowed it;
// the plan is accepted and the victims drain.
func Example() {
	f, _ := topology.New(topology.Uniform(topology.UniformSpec{
		Levels: []string{"leaf", "node"}, Fanout: []int{1, 4}, GPUsPerNode: 8, Flavor: "H100"}))
	tree, _ := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
		{Name: "all", Kind: quota.Cohort},
		{Name: "research", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 16}},
			Preemption: quota.Rules{ReclaimWithinCohort: quota.ReclaimAny}},
		{Name: "batch", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 16}}},
	}})
	research, _ := tree.Node("research")
	batch, _ := tree.Node("batch")
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

	var running []preempt.Running
	for n := range topology.NodeID(4) {
		w := &gang.Workload{ID: fmt.Sprintf("eval-%d", n), Priority: int32(n),
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}
		_ = f.Allocate(n, 8)
		_ = tree.AddUsage(batch, 0, 8)
		running = append(running, preempt.Running{W: w, Queue: batch, Nodes: []placement.NodeGPUs{{Node: n, GPUs: 8}},
			Started: now.Add(-time.Duration(n+1) * 10 * time.Minute), Preemptible: true})
	}
	w := &gang.Workload{ID: "pretrain", Priority: 100, PodSets: []gang.PodSet{{Name: "w", Count: 2, GPUsPerPod: 8}}}

	// The host keeps an index of what runs (Add on start, Update on
	// drain or checkpoint, Remove on exit) and a scratch mirror of the
	// fleet; the search reads them and changes neither the fleet nor the
	// tree.
	index := preempt.NewIndex(f, tree)
	for _, r := range running {
		_ = index.Add(r)
	}
	view := preempt.View{Fleet: f, Tree: tree, Index: index, Scratch: f.Clone()}
	s := preempt.NewSearcher(preempt.Options{})
	plan, err := s.Victims(view, preempt.Request{W: w, Queue: research, Now: now}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range plan.Victims {
		fmt.Printf("%s %s frees %d GPUs by %s\n", v.ID, v.Reason, v.GPUs, v.Deadline.Format(time.TimeOnly))
	}
	fmt.Printf("target %s, lost %.0f GPU-s\n", plan.Target.Format(f), plan.LostGPUSeconds)
	// The scheduler drains the victims and nominates the target for the
	// beneficiary; the fleet and the tree are as they were.
	fmt.Println("free GPUs:", f.Stats(topology.Root, topology.AllGroups).FreeGPUs)
	// Output:
	// eval-0 Reclaim frees 8 GPUs by 12:02:00
	// eval-1 Reclaim frees 8 GPUs by 12:02:00
	// target leaf-0 (span leaf): node-0-0=8 node-0-1=8, lost 17280 GPU-s
	// free GPUs: 0
}
