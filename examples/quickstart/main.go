// Quickstart builds the reference fleet (4 spines x 8 leaf switches x 8
// nodes x 8 H100 GPUs), fills it with a mix of whole-node training gangs
// and small inference replicas, and prints what a scheduler sees: the
// occupancy map, the stranded GPUs that no whole-node gang can use, and
// the largest gang that could still start at each level.
//
//	go run ./examples/quickstart
//
// The output is the same on every run: the replicas are scattered by a
// seeded generator.
package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"

	"github.com/fleetsched/fleet/topology"
)

const (
	replicas = 96 // inference replicas of 1-4 GPUs
	seed1    = 2048
	seed2    = 8
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run builds the fleet, allocates the mix and writes the report to w.
func run(w io.Writer) error {
	f, err := topology.New(topology.Reference())
	if err != nil {
		return err
	}
	leaf, _ := f.Level("leaf")

	// Whole-node training gangs take whole leaf switches: all or nothing,
	// one leaf per 64 GPUs.
	trainingGangs := []struct {
		name   string
		leaves []string
	}{
		{"pretrain-512", []string{"leaf-0-0", "leaf-0-1", "leaf-0-2", "leaf-0-3", "leaf-0-4", "leaf-0-5", "leaf-0-6", "leaf-0-7"}},
		{"finetune-128", []string{"leaf-1-0", "leaf-1-1"}},
		{"rl-64", []string{"leaf-2-5"}},
	}
	trained := make([]bool, f.NumNodes())
	for _, g := range trainingGangs {
		gpus := 0
		for _, name := range g.leaves {
			d, ok := f.Domain(leaf, name)
			if !ok {
				return fmt.Errorf("gang %s: unknown leaf %q", g.name, name)
			}
			lo, hi := f.Nodes(d)
			for n := lo; n < hi; n++ {
				if err := f.Allocate(n, f.Capacity(n)); err != nil {
					return fmt.Errorf("gang %s: %w", g.name, err)
				}
				trained[n] = true
				gpus += f.Capacity(n)
			}
		}
		unit := "leaves"
		if len(g.leaves) == 1 {
			unit = "leaf"
		}
		fmt.Fprintf(w, "training gang %-13s %4d GPUs on %d %s\n", g.name, gpus, len(g.leaves), unit)
	}

	// Inference replicas land wherever a naive spreader puts them: a random
	// node with room. This is the fragmentation a placement policy must avoid.
	rng := rand.New(rand.NewPCG(seed1, seed2))
	placed, gpus := 0, 0
	for placed < replicas {
		n := topology.NodeID(rng.IntN(f.NumNodes()))
		size := 1 + rng.IntN(4)
		if trained[n] || f.Free(n) < size {
			continue
		}
		if err := f.Allocate(n, size); err != nil {
			return err
		}
		placed++
		gpus += size
	}
	fmt.Fprintf(w, "inference replicas         %4d GPUs in %d replicas of 1-4 GPUs\n\n", gpus, placed)

	if err := f.Render(w); err != nil {
		return err
	}

	stranded, frac := f.Stranded()
	fmt.Fprintf(w, "\nstranded GPUs: %d (%.1f%% of healthy GPUs)\n", stranded, 100*frac)
	fmt.Fprintln(w, "largest free block (whole free nodes in one domain):")
	wholeFree := f.FreeNodes(topology.Root, topology.AllGroups)
	spineBlock := 0
	for l := topology.Level(0); int(l) < f.Depth(); l++ {
		nodes, d := f.LargestFreeBlock(l, topology.AllGroups)
		if l == 1 {
			spineBlock = nodes
		}
		name := f.DomainName(d)
		if l == 0 {
			name = "the fleet"
		}
		fmt.Fprintf(w, "  %-6s %3d nodes (%4d GPUs) in %s\n", f.LevelName(l), nodes, nodes*f.MaxGPUsPerNode(), name)
	}
	// The point of the exercise: free capacity is not usable capacity.
	const gang = 64 // nodes: a 512-GPU gang that must sit on one spine
	if spineBlock < gang && wholeFree >= gang {
		fmt.Fprintf(w, "\na %d-node gang fits in the fleet's %d free nodes but on no single spine\n", gang, wholeFree)
	}
	return nil
}
