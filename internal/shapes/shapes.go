// Package shapes builds the reference benchmark states of the design,
// seeded, so that figures compare across packages and with other
// schedulers run on the same shapes.
package shapes

import (
	"fmt"
	"math/rand/v2"

	"github.com/fleetsched/fleet/topology"
)

// Ladder returns the fleet-size ladder benchmarks run at.
func Ladder() []int { return []int{2048, 16384, 131072} }

// NewFleet builds the scaled reference fleet of about gpus GPUs.
func NewFleet(gpus int) *topology.Fleet {
	f, err := topology.New(topology.Scaled(gpus))
	if err != nil {
		panic(fmt.Sprintf("shapes: %v", err))
	}
	return f
}

// Fragmented fills f as the "fragmented" shape: in every spine but the
// last, each node holds one workload of a random 0-8 GPUs (0 = empty); the
// last spine is empty. It returns the GPUs allocated per node.
func Fragmented(f *topology.Fleet, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	_, hi := f.DomainsAt(1)
	last, _ := f.Nodes(hi - 1)
	alloc := make([]int, f.NumNodes())
	for n := range topology.NodeID(last) {
		g := r.IntN(f.Capacity(n) + 1)
		if g > 0 {
			if err := f.Allocate(n, g); err != nil {
				panic(err)
			}
		}
		alloc[n] = g
	}
	return alloc
}
