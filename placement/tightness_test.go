package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// modelsFleet is spines x leaves x nodes of 8 GPUs whose second half
// (the second leaf of one spine, the second spine of two) is A100 and the
// rest H100, with used GPUs per node name.
func modelsFleet(t *testing.T, spines, leaves, nodes int, used map[string]int) *topology.Fleet {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"spine", "leaf", "node"},
		Fanout: []int{spines, leaves, nodes}, GPUsPerNode: 8, Flavor: "H100"})
	for i := range spec.Nodes {
		if i >= len(spec.Nodes)/2 {
			spec.Nodes[i].Flavor = "A100"
		}
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	alloc(t, f, used)
	return f
}

// Across GPU models, the tightest fit counts the pods of the gang's size
// the chosen domain takes within its spread limits, the gang's own trial
// pods not counted against them: each model's count starts from empty
// per-node and per-domain tallies. The H100 domain holds 5 such pods, the
// A100 one 4, so A100 is the tighter; counted after the trial (the H100
// trial's pods filling its roomier nodes to the limit), H100 would look
// tighter.
func TestTightnessAcrossModelsCountsSpreadFromEmpty(t *testing.T) {
	for _, c := range []struct {
		name   string
		fleet  func(t *testing.T) *topology.Fleet
		work   func() *gang.Workload
		domain string
	}{
		{
			name: "per-node limit, one leaf per model",
			fleet: func(t *testing.T) *topology.Fleet {
				// H100 leaf free 2, 2, 1, 0; A100 leaf free 1, 1, 1, 1.
				return modelsFleet(t, 1, 2, 4, map[string]int{
					"node-0-0-0": 6, "node-0-0-1": 6, "node-0-0-2": 7, "node-0-0-3": 8,
					"node-0-1-0": 7, "node-0-1-1": 7, "node-0-1-2": 7, "node-0-1-3": 7,
				})
			},
			work: func() *gang.Workload {
				w := work("w", 4, 1, "leaf", "leaf")
				w.Spread = gang.Spread{MaxPerNode: 2}
				return w
			},
			domain: "leaf-0-1",
		},
		{
			name: "per-leaf limit, one spine per model",
			fleet: func(t *testing.T) *topology.Fleet {
				// H100 leaves free 2, 2, 1, 0; A100 leaves free 1 each.
				used := map[string]int{
					"node-0-0-0": 6, "node-0-1-0": 6, "node-0-2-0": 7, "node-0-3-0": 8,
					"node-0-0-1": 8, "node-0-1-1": 8, "node-0-2-1": 8, "node-0-3-1": 8,
				}
				for _, n := range []string{"node-1-0-0", "node-1-1-0", "node-1-2-0", "node-1-3-0"} {
					used[n] = 7
				}
				for _, n := range []string{"node-1-0-1", "node-1-1-1", "node-1-2-1", "node-1-3-1"} {
					used[n] = 8
				}
				return modelsFleet(t, 2, 4, 2, used)
			},
			work: func() *gang.Workload {
				w := work("w", 4, 1, "spine", "")
				w.Spread = gang.Spread{MaxPerDomain: 2, Level: "leaf"}
				return w
			},
			domain: "spine-1",
		},
	} {
		f := c.fleet(t)
		a, err := placement.NewPlacer(placement.Options{}).Place(f, c.work())
		require.NoError(t, err, c.name)
		assert.Equal(t, "A100", f.GroupFlavor(a.Group), c.name)
		assert.Equal(t, c.domain, f.DomainName(a.Domain), c.name)
	}
}
