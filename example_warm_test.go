package fleet_test

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// The host reports where a model's weights are cached; a replica naming
// that model starts there rather than on the tightest cold node.
func ExampleScheduler_SetWarm() {
	s, err := fleet.New(fleet.ReferenceConfig())
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := s.SetWarm(now, "node-1-4-2", []string{"llama-70b"}); err != nil {
		panic(err)
	}
	_ = s.Submit(now, gang.Workload{ID: "chat-1", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
		Shape: gang.Inference, Model: "llama-70b", PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 4}}})
	d := s.Schedule(now)
	fmt.Println(d.Admit[0].ID, "on", d.Admit[0].Pods[0].Node, "; warm:", s.Warm("node-1-4-2"))
	// Output:
	// chat-1 on node-1-4-2 ; warm: [llama-70b]
}
