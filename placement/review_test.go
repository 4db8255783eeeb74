package placement_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
)

// A spread limit counted per node-level domain is a per-node limit.
func TestSpreadAtNodeLevelLimitsPodsPerNode(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	w := work("r", 4, 1, "", "")
	w.Spread = gang.Spread{MaxPerDomain: 1, Level: "node"}
	require.NoError(t, w.ValidateFor(f.Levels(), 8))
	_, err := placement.Place(f, w, placement.Options{})
	require.ErrorIs(t, err, placement.ErrNoFit, "two nodes cannot hold four pods at one per node")

	w.PodSets[0].Count = 2
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"node-0-0-0=1", "node-0-0-1=1"}, nodesOf(f, a))
}
