package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Leaves of unequal size (one node, then two): a one-node gang evicts
// the lowest-priority workload whichever leaf it sits in, with or without
// a required level.
func TestUnevenLeavesEvictTheLowestPriority(t *testing.T) {
	for _, required := range []string{"", "leaf", "node"} {
		t.Run("required="+required, func(t *testing.T) {
			f, err := topology.New(topology.Spec{Levels: []string{"leaf", "node"}, Nodes: []topology.NodeSpec{
				{Name: "a", Path: []string{"l0"}, GPUs: 8, Flavor: "H100"},
				{Name: "b", Path: []string{"l1"}, GPUs: 8, Flavor: "H100"},
				{Name: "c", Path: []string{"l1"}, GPUs: 8, Flavor: "H100"},
			}})
			require.NoError(t, err)
			tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{queue("a", "", 64, lower)}})
			require.NoError(t, err)
			e := &env{t: t, f: f, tree: tree, fl: 0}
			e.run("p3", "a", 3, time.Hour, []int{0}, []int{8})
			e.run("p1", "a", 1, time.Hour, []int{1}, []int{8})
			e.run("p5", "a", 5, time.Hour, []int{2}, []int{8})
			p, err := victims(t, e, e.req("new", "a", 9, 1, 8, required), nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"p1"}, ids(p))
		})
	}
}
