package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
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

// The Index refuses an elastic workload whose shrinkable pods do not add
// up: a pod of no GPUs, a pod off its nodes or beyond their GPUs, a pod
// set Keep does not cover, Keep outside its range, or pods that would
// give up every GPU; a well-formed one is indexed.
func TestIndexRefusesShrinkablePodsThatDoNotAddUp(t *testing.T) {
	pod := func(ps, idx, node, gpus int) placement.Pod {
		return placement.Pod{PodSet: ps, Index: idx, Node: topology.NodeID(node), GPUs: gpus}
	}
	for _, tc := range []struct {
		name   string
		pods   []placement.Pod
		keep   []int
		detail string
	}{
		{"well formed", []placement.Pod{pod(0, 3, 0, 2), pod(0, 2, 0, 2)}, []int{1}, ""},
		{"a pod of no GPUs", []placement.Pod{pod(0, 3, 0, 0)}, []int{0}, "a shrinkable pod is not on its nodes"},
		{"a pod off its nodes", []placement.Pod{pod(0, 3, 1, 2)}, []int{0}, "a shrinkable pod is not on its nodes"},
		{"pods beyond the node's GPUs", []placement.Pod{pod(0, 3, 0, 6), pod(0, 2, 0, 4)}, []int{0}, "a shrinkable pod is not on its nodes"},
		{"a pod set Keep does not cover", []placement.Pod{pod(1, 3, 0, 2)}, []int{0}, "a shrinkable pod of a pod set Keep does not cover"},
		{"Keep above the shrinkable pods", []placement.Pod{pod(0, 3, 0, 2)}, []int{2}, "Keep outside 0 and the pod set's shrinkable pods"},
		{"every GPU given up", []placement.Pod{pod(0, 1, 0, 4), pod(0, 0, 0, 4)}, []int{0}, "shrinkable pods hold all its GPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 1, 2, 8, queue("a", "", 64, lower))
			r := *e.run("el", "a", 1, time.Hour, []int{0}, []int{8})
			r.Shrinkable, r.Keep = tc.pods, tc.keep
			err := preempt.NewIndex(e.f, e.tree).Add(r)
			if tc.detail == "" {
				require.NoError(t, err)
				return
			}
			var ie *preempt.IndexError
			require.ErrorAs(t, err, &ie)
			require.ErrorIs(t, err, preempt.ErrInvalid)
			assert.Equal(t, tc.detail, ie.Detail)
		})
	}
}
