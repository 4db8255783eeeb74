package fleet

import (
	"time"

	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Priority classes of the reference configuration.
const (
	ClassProdInference    = "prod-inference"
	ClassReservedResearch = "reserved-research"
	ClassPreemptibleBatch = "preemptible-batch"
)

// ReferenceConfig is the reference fleet of the design: 2,048 H100s as
// 4 spines x 8 leaves x 8 nodes x 8 GPUs, and a quota tree where
// prod-inference is guaranteed 1,200 GPUs and lends up to 700 of them
// while idle, research has 848 reserved, and batch has no guarantee and
// borrows what is left. Priority: prod-inference > reserved-research >
// preemptible-batch, with the 120 s drain contract. Research may also
// evict batch while it borrows (Kueue's borrowWithinCohort with a
// threshold at batch's priority).
func ReferenceConfig() Config {
	batchPriority := int32(100)
	return Config{
		Topology: topology.Reference(),
		Quota: quota.Spec{
			Flavors: []string{"H100"},
			Nodes: []quota.NodeSpec{
				{Name: "fleet", Kind: quota.Cohort},
				{Name: "prod-inference", Parent: "fleet", Kind: quota.Queue,
					Quotas:     []quota.FlavorQuota{{Flavor: "H100", Nominal: 1200, LendingLimit: quota.LimitOf(700)}},
					Preemption: quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny}},
				{Name: "research", Parent: "fleet", Kind: quota.Queue,
					Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 848}},
					Preemption: quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority,
						// A large gang that must borrow to start may still
						// evict preemptible batch filler (priority 100 or
						// less), so borrowed filler cannot starve it.
						BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &batchPriority}}},
				{Name: "batch", Parent: "fleet", Kind: quota.Queue,
					Quotas:     []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}},
					Preemption: quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}},
			},
		},
		Classes: []PriorityClass{
			{Name: ClassProdInference, Value: 1000},
			{Name: ClassReservedResearch, Value: 500, Grace: DefaultGrace, MinRuntime: 5 * time.Minute},
			{Name: ClassPreemptibleBatch, Value: 100, Grace: DefaultGrace, MinRuntime: time.Minute},
		},
	}
}
