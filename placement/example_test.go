package placement_test

import (
	"errors"
	"fmt"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Place a 512-GPU training gang that must share one spine and would like
// one leaf, then an inference replica, on the reference fleet with spine 0
// mostly busy.
func ExamplePlacer_Place() {
	f, _ := topology.New(topology.Reference())
	for n := range topology.NodeID(60) {
		_ = f.Allocate(n, 8) // spine 0: 60 of 64 nodes busy
	}
	_ = f.Allocate(61, 5) // one partly used node

	p := placement.NewPlacer(placement.Options{})
	train := &gang.Workload{ID: "llm-pretrain", Queue: "research", Shape: gang.Training,
		PodSets:  []gang.PodSet{{Name: "workers", Count: 64, GPUsPerPod: 8}},
		Topology: gang.TopologyRequest{Required: "spine", Preferred: "leaf"}}
	a, err := p.Place(f, train)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d GPUs on %s, span %s\n", a.Workload, a.GPUs(), f.DomainName(a.Domain), f.LevelName(a.Span))
	_ = placement.Apply(f, a)

	replica := &gang.Workload{ID: "chat-7", Queue: "inference", Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 2}}}
	a, _ = p.Place(f, replica)
	fmt.Println(a.Workload+":", a.Format(f))

	big := &gang.Workload{ID: "too-big", Queue: "research", Shape: gang.Training,
		PodSets:  []gang.PodSet{{Name: "workers", Count: 80, GPUsPerPod: 8}},
		Topology: gang.TopologyRequest{Required: "spine"}}
	_, err = p.Place(f, big)
	var nf *placement.NoFit
	if errors.As(err, &nf) {
		fmt.Println(nf.Cause, "-", err)
	}
	// Output:
	// llm-pretrain: 512 GPUs on spine-1, span spine
	// chat-7: node-0-7-5 (span node): node-0-7-5=2
	// fragmented - placement: workload "too-big" does not fit (fragmented): needs 640 GPUs in 80 pods, 1051 free but not together within one spine
}
