package fleet_test

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// The host loop on the reference fleet: inference at its trough, batch
// borrowing what it lends, then an inference spike that drains the
// cheapest borrowed work and starts the replicas on its GPUs.
func Example() {
	s, err := fleet.New(fleet.ReferenceConfig())
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	replica := func(id string) gang.Workload {
		return gang.Workload{ID: id, Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
			Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 8}}}
	}
	batch := func(id string, nodes int) gang.Workload {
		return gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
			PodSets:  []gang.PodSet{{Name: "workers", Count: nodes, GPUsPerPod: 8}},
			Topology: gang.TopologyRequest{Required: "spine", Preferred: "leaf"},
			Drain:    gang.DrainContract{Preemptible: true, CheckpointInterval: 20 * time.Minute}}
	}
	// The trough: 64 inference nodes; research idle, so batch borrows.
	for i := range 64 {
		_ = s.Submit(now, replica(fmt.Sprintf("inf-%d", i)))
	}
	_ = s.Submit(now, batch("sweep-a", 64))
	_ = s.Submit(now, batch("sweep-b", 64))
	_ = s.Submit(now, batch("sweep-c", 64))
	d := s.Schedule(now)
	fmt.Printf("admitted %d, free GPUs %d\n", len(d.Admit), s.Snapshot().Fleet.FreeGPUs)

	// An hour later sweep-b checkpoints; then inference needs 8 more nodes.
	now = now.Add(time.Hour)
	_ = s.Checkpointed(now, "sweep-b", now.Add(-5*time.Minute))
	for i := range 8 {
		_ = s.Submit(now, replica(fmt.Sprintf("spike-%d", i)))
	}
	fmt.Print(s.Schedule(now))
	x, _ := s.Explain("spike-3")
	fmt.Println(x)

	// The victim checkpoints and exits within its grace period.
	now = now.Add(90 * time.Second)
	_ = s.Exited(now, "sweep-b", gang.ExitDrained)
	d = s.Schedule(now)
	fmt.Printf("admitted %d replicas after %s\n", len(d.Admit), d.Admit[0].Wait)
	// Output:
	// admitted 67, free GPUs 0
	// drain sweep-b for spike-0,spike-1,spike-2,spike-3,spike-4,spike-5,spike-6,spike-7 by 01:02:00 (reclaim, lost 68.3 GPU-h)
	// spike-3: waiting for 1 victims to drain, capacity back by 01:02:00
	// admitted 8 replicas after 1m30s
}
