package topology_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/topology"
)

// TestAbsentNodeTakesNothingUntilBroughtIn: a node declared absent has its
// place in the tree but no healthy capacity and refuses allocations; once
// healthy it counts like any other, and the aggregates equal those of a
// fleet built with it present.
func TestAbsentNodeTakesNothingUntilBroughtIn(t *testing.T) {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{2, 2}, GPUsPerNode: 8, Flavor: "H100"})
	present, err := topology.New(spec)
	require.NoError(t, err)
	spec.Nodes[3].Absent = true
	f, err := topology.New(spec)
	require.NoError(t, err)
	n, _ := f.Node("node-1-1")

	assert.Equal(t, topology.Absent, f.Health(n))
	st := f.Stats(topology.Root, topology.AllGroups)
	assert.Equal(t, 32, st.GPUs, "capacity of every node, whatever its health")
	assert.Equal(t, 24, st.HealthyGPUs)
	assert.Equal(t, 24, st.FreeGPUs)
	assert.Equal(t, 3, st.FreeNodes)
	assert.ErrorIs(t, f.Allocate(n, 1), topology.ErrNodeDown)
	assert.Equal(t, byte('-'), f.NodeRune(n))
	assert.True(t, topology.Absent.Gone())
	assert.True(t, topology.Down.Gone())
	assert.False(t, topology.Cordoned.Gone())
	assert.Equal(t, "absent", topology.Absent.String())

	require.NoError(t, f.SetHealth(n, topology.Healthy))
	assert.Equal(t, present.Stats(topology.Root, topology.AllGroups), f.Stats(topology.Root, topology.AllGroups))
	assert.Equal(t, present.String(), f.String())
	require.NoError(t, f.Allocate(n, 8))
}
