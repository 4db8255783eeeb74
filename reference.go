package fleet

import (
	"math"
	"time"

	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Priority classes of the reference configuration.
const (
	ClassProdInference    = "prod-inference"    // priority 1000: inference serving, the highest
	ClassReservedResearch = "reserved-research" // priority 500: research training, 120 s drain, 5 min minimum runtime
	ClassPreemptibleBatch = "preemptible-batch" // priority 100: batch filler, 120 s drain, 1 min minimum runtime
)

// ReferenceConfig is the reference fleet of the design: 2,048 H100s as
// 4 spines x 8 leaves x 8 nodes x 8 GPUs, and a quota tree where
// prod-inference is guaranteed 1,200 GPUs and lends up to 700 of them
// while idle, research has 848 reserved, and batch has no guarantee and
// borrows what is left. Priority: prod-inference > reserved-research >
// preemptible-batch, with the 120 s drain contract. Research may also
// evict batch while it borrows (Kueue's borrowWithinCohort with a
// threshold at batch's priority), and a research gang may evict research
// runs of its priority queued after it (Kueue's withinClusterQueue:
// LowerOrNewerEqualPriority): small runs that passed a large gang in the
// BestEffortFIFO queue cannot keep it waiting for days. Work that has
// waited ReferenceWaitLimit may evict research runs of its priority
// queued before it too (Policy.WaitLimit), so older runs cannot either.
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
					Preemption: quota.Rules{WithinQueue: quota.WithinQueueLowerOrNewerEqualPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority,
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
		Policy: Policy{WaitLimit: ReferenceWaitLimit},
	}
}

// ReferenceConfigFor is the reference configuration on another fleet:
// the same classes and rules, and quotas in the reference proportions of
// the spec's GPUs (inference guaranteed 1,200/2,048 of them and lending up
// to 700/2,048, research the rest). It serves benchmarks and simulations
// at 16,384 and 131,072 GPUs, and small fleets in tests.
func ReferenceConfigFor(spec topology.Spec) Config {
	cfg := ReferenceConfig()
	cfg.Topology = spec
	total := 0
	for _, n := range spec.Nodes {
		total += n.GPUs
	}
	share := func(n float64) int64 { return int64(math.Round(n * float64(total) / 2048)) }
	inference := share(1200)
	for i := range cfg.Quota.Nodes {
		q := &cfg.Quota.Nodes[i].Quotas
		switch cfg.Quota.Nodes[i].Name {
		case "prod-inference":
			(*q)[0].Nominal, (*q)[0].LendingLimit = inference, quota.LimitOf(share(700))
		case "research":
			(*q)[0].Nominal = int64(total) - inference
		}
	}
	return cfg
}
