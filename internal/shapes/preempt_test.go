package shapes_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// The victim shapes are consistent (the tree's usage is the fleet's
// allocation, every running workload's GPUs are allocated) and seeded.
func TestVictimShapes(t *testing.T) {
	for name, build := range map[string]func(int, shapes.Fill, uint64) *shapes.Victim{
		"clear": shapes.Clear, "reclaim": shapes.Reclaim, "spike": shapes.Spike,
	} {
		for _, fill := range shapes.Fills() {
			t.Run(fmt.Sprintf("%s/fill=%v", name, fill), func(t *testing.T) {
				v := build(2048, fill, 1)
				held := 0
				for _, r := range v.Running {
					for _, x := range r.Nodes {
						held += x.GPUs
					}
				}
				var used int64
				for _, q := range v.Tree.Queues() {
					used += v.Tree.InUse(q, quota.FlavorID(0))
				}
				alloc := v.Fleet.Stats(topology.Root, topology.AllGroups).Allocated
				require.Equal(t, alloc, held)
				require.Equal(t, int64(alloc), used)
				w := build(2048, fill, 1)
				require.Equal(t, v.Fleet.String(), w.Fleet.String())
				require.Equal(t, len(v.Running), len(w.Running))
			})
		}
	}
}
