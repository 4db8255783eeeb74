package gang_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/fleetsched/fleet/gang"
)

// A 512-GPU training gang and an inference replica, checked against the
// reference fleet (spine > leaf > node, 8 GPUs per node). They set
// Priority directly; a scheduler with priority classes would name a
// PriorityClass instead, whose value then replaces Priority.
func Example() {
	levels := []string{"spine", "leaf", "node"}
	const gpusPerNode = 8

	pretrain := gang.Workload{
		ID: "llm-pretrain", Queue: "research", Priority: 500, Shape: gang.Training,
		PodSets:  []gang.PodSet{{Name: "workers", Count: 64, GPUsPerPod: 8}},
		Topology: gang.TopologyRequest{Required: "spine", Preferred: "leaf"},
		Drain: gang.DrainContract{
			Preemptible:        true,
			CheckpointInterval: 30 * time.Minute,
		},
	}
	chat := gang.Workload{
		ID: "chat-replica-3", Queue: "prod-inference", Priority: 1000, Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 2}},
		Flavor:  "H100",
		Pools:   []string{"weights-cached", "general"},
	}

	for _, w := range []gang.Workload{pretrain, chat} {
		fmt.Printf("%s: %v, %d pods, %d GPUs, whole nodes: %v, valid: %v\n",
			w.ID, w.Shape, w.Pods(), w.GPUs(), w.WholeNode(gpusPerNode), w.ValidateFor(levels, gpusPerNode) == nil)
	}

	// A replica that asks for more than one node's GPUs per pod, and a
	// gang that names a level this fleet lacks.
	big := chat.Clone()
	big.PodSets[0].GPUsPerPod = 16
	err := big.ValidateFor(levels, gpusPerNode)
	fmt.Println(err)
	fmt.Println(errors.Is(err, gang.ErrInvalid), errors.Is(err, gang.ErrExceedsNode))

	rack := pretrain.Clone()
	rack.Topology.Required = "rack"
	fmt.Println(rack.Validate() == nil)
	var fe *gang.FieldError
	if errors.As(rack.ValidateFor(levels, gpusPerNode), &fe) {
		fmt.Printf("field %s, value %v: %v\n", fe.Field, fe.Value, fe.Err)
	}
	// Output:
	// llm-pretrain: training, 64 pods, 512 GPUs, whole nodes: true, valid: true
	// chat-replica-3: inference, 1 pods, 2 GPUs, whole nodes: false, valid: true
	// gang: larger than a node: workload "chat-replica-3": podSets[0].gpusPerPod = 16: a pod never spans nodes and a node has 8 GPUs
	// true true
	// true
	// field topology.required, value rack: gang: unknown topology level
}
