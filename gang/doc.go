// Package gang is fleet's workload model: what one unit of work asks for,
// how it may be stopped, and the states it moves through.
//
// A [Workload] is admitted whole or not at all. It is made of pod sets
// (a count of pods with the same GPUs each; a pod never spans nodes; a pod
// set may name [RankGroup]s of consecutive ranks to keep together), a
// [TopologyRequest] (a required level one domain of which holds every pod,
// a preferred level to try first, and optional segments), where it may run
// (GPU flavor, pools in order of preference), a [DrainContract] (is it
// preemptible, its grace period, its checkpoints) and an optional [Spread]
// for inference high availability. A 512-GPU training job is one pod set of
// 64 pods x 8 GPUs; an inference replica is 1 pod x 1 to 8 GPUs.
//
// What it is not: gang does no placement, quota or preemption, and knows
// nothing of a fleet. It imports no other fleet package. Checks that need
// the fleet take its level names and GPUs per node as plain values
// ([Workload.ValidateFor]). Priority classes and their defaults (such as
// the grace period a zero GracePeriod stands for) belong to the scheduler.
//
// Obligations of the caller:
//   - Validate a workload before handing it on: other packages assume a
//     valid one (ValidateFor when the fleet is known).
//   - Treat a submitted workload as immutable; take a [Workload.Clone] to
//     derive a changed one. The host updates Drain.LastCheckpoint through
//     the scheduler, not by writing to a shared copy.
//   - Drive [State] only along [CanTransition].
//
// The helpers read on every decision (GPUs, Pods, WholeNode,
// SegmentedPodSet) do not allocate.
//
//	w := gang.Workload{
//		ID: "llm-pretrain", Queue: "research", Priority: 500, Shape: gang.Training,
//		PodSets:  []gang.PodSet{{Name: "workers", Count: 64, GPUsPerPod: 8}},
//		Topology: gang.TopologyRequest{Required: "spine", Preferred: "leaf"},
//		Drain:    gang.DrainContract{Preemptible: true, CheckpointInterval: 30 * time.Minute},
//	}
//	if err := w.ValidateFor([]string{"spine", "leaf", "node"}, 8); err != nil {
//		var fe *gang.FieldError
//		errors.As(err, &fe) // fe.Field is "podSets[0].gpusPerPod" and the like
//	}
//	fmt.Println(w.GPUs(), w.WholeNode(8)) // 512 true
//
// In JSON, field names are as in the struct tags (camelCase), a Shape is
// its name, durations are integer nanoseconds (as encoding/json writes a
// time.Duration) and LastCheckpoint is RFC 3339.
package gang
