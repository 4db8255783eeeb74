package quota_test

import (
	"fmt"
	"os"

	"github.com/fleetsched/fleet/quota"
)

// referenceFleet is the quota tree of the reference fleet: 2,048 H100s.
// prod-inference is guaranteed 1,200 GPUs, needs about 500 at its trough and
// lends the other 700; research has 848 reserved and lends them when idle;
// batch has no guarantee and lives on what it borrows.
func referenceFleet() quota.Spec {
	zero := 0.0
	return quota.Spec{
		Flavors: []string{"H100"},
		Nodes: []quota.NodeSpec{
			{Name: "fleet", Kind: quota.Cohort},
			{Name: "prod-inference", Parent: "fleet", Kind: quota.Queue,
				Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 1200, LendingLimit: quota.LimitOf(700)}},
				Preemption: quota.Rules{
					WithinQueue:         quota.WithinQueueLowerPriority,
					ReclaimWithinCohort: quota.ReclaimAny,
				},
			},
			{Name: "research", Parent: "fleet", Kind: quota.Queue,
				Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 848}},
				Preemption: quota.Rules{
					WithinQueue:         quota.WithinQueueLowerOrNewerEqualPriority,
					ReclaimWithinCohort: quota.ReclaimLowerPriority,
				},
				QueueingStrategy: quota.StrictFIFO,
			},
			{Name: "batch", Parent: "fleet", Kind: quota.Queue, Weight: &zero,
				Quotas:     []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}},
				Preemption: quota.Rules{WithinQueue: quota.WithinQueueLowerPriority},
			},
		},
	}
}

func Example() {
	tree, err := quota.New(referenceFleet())
	if err != nil {
		panic(err)
	}
	capacity := map[string]int64{"H100": 2048}
	if err := tree.ValidateCapacity(capacity); err != nil {
		panic(err)
	}
	if err := tree.RenderCapacity(os.Stdout, capacity); err != nil {
		panic(err)
	}
	// Output:
	// ### Quotas
	//
	// | node           | parent | kind   | flavor | nominal | borrowing limit | lending limit   | weight |
	// | -------------- | ------ | ------ | ------ | ------- | --------------- | --------------- | ------ |
	// | fleet          | —      | cohort | —      | 0       | —               | —               | 1      |
	// | prod-inference | fleet  | queue  | H100   | 1200    | unlimited       | 700 (keeps 500) | 1      |
	// | research       | fleet  | queue  | H100   | 848     | unlimited       | all             | 1      |
	// | batch          | fleet  | queue  | H100   | 0       | unlimited       | all             | 0      |
	//
	// ### Preemption
	//
	// | queue          | within queue              | reclaim within cohort | borrow within cohort | queueing       |
	// | -------------- | ------------------------- | --------------------- | -------------------- | -------------- |
	// | prod-inference | LowerPriority             | Any                   | Never                | BestEffortFIFO |
	// | research       | LowerOrNewerEqualPriority | LowerPriority         | Never                | StrictFIFO     |
	// | batch          | LowerPriority             | Never                 | Never                | BestEffortFIFO |
	//
	// ### Totals
	//
	// | flavor | guaranteed | capacity | unpromised |
	// | ------ | ---------- | -------- | ---------- |
	// | H100   | 2048       | 2048     | 0          |
}

func ExampleTree_Fits() {
	tree, _ := quota.New(referenceFleet())
	h100, _ := tree.Flavor("H100")
	inference, _ := tree.Node("prod-inference")
	research, _ := tree.Node("research")
	batch, _ := tree.Node("batch")

	// Night: inference runs 500 replicas' worth, research is busy.
	_ = tree.AddUsage(inference, h100, 500)
	_ = tree.AddUsage(research, h100, 848)
	fmt.Println(tree.Fits(batch, h100, 700))
	_ = tree.AddUsage(batch, h100, 700)
	fmt.Println(tree.Fits(batch, h100, 8))

	// Morning: inference wants 64 more. Batch holds the GPUs inference lent,
	// so it does not fit now; but inference is below its guarantee and
	// batch borrows, so preempting batch gives them back.
	fmt.Println(tree.Fits(inference, h100, 64))
	fmt.Printf("batch borrows %d, share %v\n", tree.Borrowed(batch, h100), tree.DominantShare(batch).Value())
	_ = tree.RemoveUsage(batch, h100, 64) // the host drained 64 GPUs of batch
	fmt.Println(tree.Fits(inference, h100, 64))
	// Output:
	// queue "batch": 700 H100 GPUs fit by borrowing from cohort "fleet", 1 level(s) up
	// queue "batch": 8 H100 GPUs do not fit, 0 available: the quota of "fleet" (1548) is used up, short by 8
	// queue "prod-inference": 64 H100 GPUs do not fit, 0 available: the quota of "fleet" (1548) is used up, short by 64
	// batch borrows 700, share +Inf
	// queue "prod-inference": 64 H100 GPUs fit within its nominal quota
}

// A queue whose GPUs and cpu sit in different resource groups: the
// launcher takes cpu of "default", the workers H100 GPUs and cpu of
// "default"; once "default" runs short, the workers' cpu comes from
// "spot" while the launcher's still fits "default"; the third job fits
// H100 only by preemption.
func ExampleTree_Assign() {
	tree, err := quota.New(quota.Spec{
		Flavors:   []string{"H100", "default", "spot"},
		Resources: []string{"cpu"},
		Nodes: []quota.NodeSpec{{
			Name: "research", Kind: quota.Queue,
			Quotas: []quota.FlavorQuota{
				{Flavor: "H100", Nominal: 16},
				{Flavor: "default", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000}}},
				{Flavor: "spot", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 128000}}},
			},
			ResourceGroups: []quota.ResourceGroup{
				{GPUs: true, Flavors: []string{"H100"}},
				{Resources: []string{"cpu"}, Flavors: []string{"default", "spot"}},
			},
		}},
	})
	if err != nil {
		panic(err)
	}
	q, _ := tree.Node("research")
	cpu, _ := tree.Resource("cpu")
	job := []quota.PodSetRequest{
		{Resources: []quota.Amount{{Resource: cpu, Value: 2000}}},                   // launcher
		{MilliGPUs: 8000, Resources: []quota.Amount{{Resource: cpu, Value: 32000}}}, // workers
	}
	for range 3 {
		a := tree.Assign(q, job, quota.AssignOptions{})
		fmt.Print(a.Mode)
		for _, c := range a.Charges {
			fmt.Printf(" %s:%s=%d", tree.FlavorName(c.Flavor), tree.ResourceName(c.Resource), c.Value)
		}
		fmt.Println()
		if a.Mode == quota.AssignFit {
			_ = tree.AddCharges(q, a.Charges)
		}
	}
	// Output:
	// Fit H100:GPUs=8000 default:cpu=34000
	// Fit H100:GPUs=8000 default:cpu=2000 spot:cpu=32000
	// Preempt H100:GPUs=8000 default:cpu=2000 spot:cpu=32000
}
