package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/placement"
)

// Sub-node pods go to the tightest node that holds them (best fit), never
// the emptiest, and equal nodes break by ID: each case pins one side of a
// comparison.
func TestSubNodePodsTakeTheTightestNode(t *testing.T) {
	tests := []struct {
		name  string
		used  map[string]int
		gpus  int
		nodes []string
	}{
		{"tighter node over an empty one", map[string]int{"node-0-0-1": 5}, 3, []string{"node-0-0-1=3"}},
		{"tightest of two partly used", map[string]int{"node-0-0-0": 2, "node-0-0-1": 4}, 4, []string{"node-0-0-1=4"}},
		{"exact fit over a looser one", map[string]int{"node-0-0-0": 4, "node-0-0-1": 6}, 2, []string{"node-0-0-1=2"}},
		{"equal nodes: lowest ID", map[string]int{"node-0-0-0": 6, "node-0-0-1": 6}, 2, []string{"node-0-0-0=2"}},
		{"a node too full is skipped", map[string]int{"node-0-0-0": 7, "node-0-0-1": 5}, 2, []string{"node-0-0-1=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fleet(t, 1, 1, 2)
			alloc(t, f, tt.used)
			a, err := placement.Place(f, work("w", 1, tt.gpus, "", ""), placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.nodes, nodesOf(f, a))
		})
	}
}

// Whole-node gangs take the domain with the fewest free nodes that holds
// them, so big holes stay for big gangs; equal domains break by ID.
func TestWholeNodeGangsTakeTheTightestDomain(t *testing.T) {
	f := fleet(t, 1, 3, 4)
	alloc(t, f, map[string]int{"node-0-0-0": 8, "node-0-1-0": 8, "node-0-1-1": 8})
	a, err := placement.Place(f, work("g", 2, 8, "leaf", ""), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-1", f.DomainName(a.Domain), "2 free nodes beat 3 and 4")

	a, err = placement.Place(f, work("g", 3, 8, "leaf", ""), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-0", f.DomainName(a.Domain), "3 free nodes: the exact fit")

	alloc(t, f, map[string]int{"node-0-2-0": 8})
	a, err = placement.Place(f, work("g", 3, 8, "leaf", ""), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-0", f.DomainName(a.Domain), "two domains with 3 free nodes: lowest ID")
}
