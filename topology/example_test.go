package topology_test

import (
	"fmt"

	"github.com/fleetsched/fleet/topology"
)

// Build the reference fleet, start a 16-node training gang on two leaves
// of spine 0, scatter a few inference replicas, and look at the map.
func Example() {
	f, err := topology.New(topology.Reference())
	if err != nil {
		panic(err)
	}
	for leaf := range 2 {
		for node := range 8 {
			n, _ := f.Node(fmt.Sprintf("node-0-%d-%d", leaf, node))
			_ = f.Allocate(n, 8) // a 16-node training gang
		}
	}
	for i, gpus := range []int{1, 2, 4, 1, 3} {
		n, _ := f.Node(fmt.Sprintf("node-%d-3-%d", 1+i%3, i))
		_ = f.Allocate(n, gpus) // inference replicas, scattered
	}
	fmt.Print(f)
	gpus, frac := f.Stranded()
	fmt.Printf("stranded: %d GPUs (%.2f%%)\n", gpus, 100*frac)
	nodes, d := f.LargestFreeBlock(2, 0)
	fmt.Printf("largest free leaf block: %d nodes on %s\n", nodes, f.DomainName(d))
	// Output:
	// spine-0
	//   leaf-0-0  00000000
	//   leaf-0-1  00000000
	//   leaf-0-2  88888888
	//   leaf-0-3  88888888
	//   leaf-0-4  88888888
	//   leaf-0-5  88888888
	//   leaf-0-6  88888888
	//   leaf-0-7  88888888
	// spine-1
	//   leaf-1-0  88888888
	//   leaf-1-1  88888888
	//   leaf-1-2  88888888
	//   leaf-1-3  78878888
	//   leaf-1-4  88888888
	//   leaf-1-5  88888888
	//   leaf-1-6  88888888
	//   leaf-1-7  88888888
	// spine-2
	//   leaf-2-0  88888888
	//   leaf-2-1  88888888
	//   leaf-2-2  88888888
	//   leaf-2-3  86885888
	//   leaf-2-4  88888888
	//   leaf-2-5  88888888
	//   leaf-2-6  88888888
	//   leaf-2-7  88888888
	// spine-3
	//   leaf-3-0  88888888
	//   leaf-3-1  88888888
	//   leaf-3-2  88888888
	//   leaf-3-3  88488888
	//   leaf-3-4  88888888
	//   leaf-3-5  88888888
	//   leaf-3-6  88888888
	//   leaf-3-7  88888888
	// free 1909/2048 GPUs, 235 whole nodes free, stranded 29 (1.4%)
	// stranded: 29 GPUs (1.42%)
	// largest free leaf block: 8 nodes on leaf-0-2
}
