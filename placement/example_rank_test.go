package placement_test

import (
	"fmt"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Place a 64 x 8-GPU gang whose ranks come in tensor-parallel groups of 8
// that must share a leaf, and pipeline stages of 32 ranks that should share
// a spine, on the reference fleet where one busy node breaks up many
// leaves: no spine has 8 whole leaves free. The rank order puts each stage
// under one spine and each group on one leaf; without the groups, the same
// gang fills the spine with the most free nodes, takes two nodes on
// another, and splits groups across leaves.
func ExamplePlacer_Place_rankGroups() {
	f, _ := topology.New(topology.Reference())
	busy := []int{4, 2, 6, 5} // per spine s: leaves 0..busy[s]-1 have one busy node
	for s, leaves := range busy {
		for l := range leaves {
			n, _ := f.Node(fmt.Sprintf("node-%d-%d-0", s, l))
			_ = f.Allocate(n, 8)
		}
	}
	w := &gang.Workload{ID: "pretrain", Queue: "research", Shape: gang.Training,
		PodSets: []gang.PodSet{{Name: "workers", Count: 64, GPUsPerPod: 8, RankGroups: []gang.RankGroup{
			{Size: 8, Level: "leaf", Required: true}, // tensor parallel: one leaf
			{Size: 32, Level: "spine"},               // a pipeline stage: one spine if it can
		}}},
		Topology: gang.TopologyRequest{Preferred: "spine"}}
	if err := w.ValidateFor(f.Levels(), 8); err != nil {
		panic(err)
	}
	a, err := placement.Place(f, w, placement.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d GPUs, span %s\n", a.Workload, a.GPUs(), f.LevelName(a.Span))
	order := a.RankOrder(0)
	for r := 0; r < len(order); r += 8 {
		first, last := order[r].Node, order[r+7].Node
		fmt.Printf("ranks %2d-%-2d %s .. %s\n", r, r+7, f.NodeName(first), f.NodeName(last))
	}

	w.PodSets[0].RankGroups = nil
	a, _ = placement.Place(f, w, placement.Options{})
	split := 0
	order = a.RankOrder(0)
	for r := 0; r < len(order); r += 8 {
		if f.DomainOf(order[r].Node, 2) != f.DomainOf(order[r+7].Node, 2) {
			split++
		}
	}
	fmt.Printf("without rank groups: span %s, %d of 8 groups of 8 ranks split across leaves\n", f.LevelName(a.Span), split)
	// Output:
	// pretrain: 512 GPUs, span fleet
	// ranks  0-7  node-0-4-0 .. node-0-4-7
	// ranks  8-15 node-0-5-0 .. node-0-5-7
	// ranks 16-23 node-0-6-0 .. node-0-6-7
	// ranks 24-31 node-0-7-0 .. node-0-7-7
	// ranks 32-39 node-1-2-0 .. node-1-2-7
	// ranks 40-47 node-1-3-0 .. node-1-3-7
	// ranks 48-55 node-1-4-0 .. node-1-4-7
	// ranks 56-63 node-1-5-0 .. node-1-5-7
	// without rank groups: span fleet, 2 of 8 groups of 8 ranks split across leaves
}
