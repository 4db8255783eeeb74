package calendar_test

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Research books one whole spine for a three-day pretraining run, two days
// ahead. Spine 0 runs inference that never ends, spine 1 borrowed batch
// work, spine 2 a job expected to end tomorrow; spine 3 is empty.
func Example() {
	fleet, _ := topology.New(topology.Reference()) // 4 spines x 8 leaves x 8 nodes x 8 H100
	tree, _ := quota.New(quota.Spec{
		Flavors: []string{"H100"},
		Nodes: []quota.NodeSpec{
			{Name: "all", Kind: quota.Cohort},
			{Name: "prod-inference", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 1200}}},
			{Name: "research", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 600}}},
			{Name: "batch", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}}},
		},
	})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cal, _ := calendar.New(now, calendar.Config{Fleet: fleet, Quota: tree})

	node := func(name string) placement.NodeGPUs {
		n, _ := fleet.Node(name)
		return placement.NodeGPUs{Node: n, GPUs: 8}
	}
	running := []calendar.Running{ // what the scheduler's ledger holds now
		{ID: "chat-1", Queue: "prod-inference", Nodes: []placement.NodeGPUs{node("node-0-0-0")}},
		{ID: "evals-9", Queue: "batch", Preemptible: true, Borrowing: true, Nodes: []placement.NodeGPUs{node("node-1-2-3")}},
		{ID: "sft-4", Queue: "research", Nodes: []placement.NodeGPUs{node("node-2-5-1")}, End: now.Add(24 * time.Hour)},
	}
	req := calendar.Request{ID: "pretrain", Queue: "research", Flavor: "H100", GPUs: 512, Level: "spine",
		Start: now.Add(48 * time.Hour), Duration: 72 * time.Hour}
	options, _ := cal.Propose(now, req, running)
	for _, o := range options {
		fmt.Printf("option %d: %v, displaces %d blocking + %d borrowed GPUs %v, feasible %v\n",
			o.Index, o.DomainNames, o.Displaced.Blocking, o.Displaced.Borrowed, o.Displaced.Workloads, o.Feasible())
	}

	b, _ := cal.Approve(now, "pretrain", 0, "alice")
	fmt.Printf("approved %s on %v by %s: drain from %s, start %s\n", b.ID, b.Domains, b.ApprovedBy,
		b.DrainAt().Format("Jan 2 15:04:05"), b.Start.Format("Jan 2 15:04"))

	// A second spine for research in the same window would take research
	// 424 GPUs beyond its 600 guarantee: 1,800 guaranteed + 424 > 2,048.
	req2 := req
	req2.ID = "pretrain-2"
	options, _ = cal.Propose(now, req2, running)
	fmt.Println("second spine:", options[0].DomainNames, options[0].Quota)

	for _, h := range cal.Held(now.Add(48*time.Hour - time.Minute)) {
		fmt.Printf("%s holds %s: %s\n", h.Booking, h.Name, h.Phase)
	}
	// Output:
	// option 0: [spine-3], displaces 0 blocking + 0 borrowed GPUs [], feasible true
	// option 1: [spine-2], displaces 0 blocking + 0 borrowed GPUs [], feasible true
	// option 2: [spine-1], displaces 0 blocking + 8 borrowed GPUs [evals-9], feasible true
	// option 3: [spine-0], displaces 8 blocking + 0 borrowed GPUs [chat-1], feasible true
	// approved pretrain on [spine-3] by alice: drain from Dec 3 08:58:00, start Dec 3 09:00
	// second spine: [spine-2] calendar: guarantees plus bookings exceed capacity: H100 commits 2224 of 2048 GPUs at 2026-12-03T09:00:00Z (queue "research"), 176 over: book 176 fewer GPUs, pick a window clear of other bookings, or raise research's nominal quota by as much and lower another queue's (SetQueue)
	// pretrain holds spine-3: draining
}
