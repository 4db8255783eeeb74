package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
)

// TestIndexChecksNodeEntriesAtTheirBounds: a node entry holds at least
// one GPU, and the indexed workloads of a node at most its capacity
// (an Update counts the workload's old GPUs there as gone).
func TestIndexChecksNodeEntriesAtTheirBounds(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, lower))
	x := preempt.NewIndex(e.f, e.tree)
	w := func(id string) *gang.Workload {
		return &gang.Workload{ID: id, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
	}
	run := func(id string, nodes ...placement.NodeGPUs) preempt.Running {
		return preempt.Running{W: w(id), Queue: e.q("a"), Nodes: nodes, Started: t0.Add(-time.Hour), Preemptible: true}
	}
	require.NoError(t, x.Add(run("five", placement.NodeGPUs{Node: 0, GPUs: 5})))
	for _, tc := range []struct {
		name  string
		nodes []placement.NodeGPUs
		ok    bool
	}{
		{"no GPUs on a node", []placement.NodeGPUs{{Node: 1, GPUs: 1}, {Node: 0, GPUs: 0}}, false},
		{"negative GPUs", []placement.NodeGPUs{{Node: 1, GPUs: -1}}, false},
		{"one past what node 0 has left", []placement.NodeGPUs{{Node: 0, GPUs: 4}}, false},
		{"exactly what node 0 has left", []placement.NodeGPUs{{Node: 0, GPUs: 3}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := x.Add(run("new", tc.nodes...))
			if !tc.ok {
				var ie *preempt.IndexError
				require.ErrorAs(t, err, &ie)
				assert.ErrorIs(t, err, preempt.ErrInvalid)
				assert.Equal(t, 1, x.Len())
				return
			}
			require.NoError(t, err)
			require.NoError(t, x.Remove("new"))
		})
	}
	// Growing in place to the whole node: its own 5 GPUs are not counted twice.
	require.NoError(t, x.Update(run("five", placement.NodeGPUs{Node: 0, GPUs: 8})))
	require.ErrorIs(t, x.Update(run("five", placement.NodeGPUs{Node: 0, GPUs: 9})), preempt.ErrInvalid)
}

// TestIndexRefusesTheFlavorPastTheLast: a tree of one flavor has flavor
// ID 0 only; a workload said to run on flavor 1 is refused, not filed
// under the slot of the next queue's first flavor.
func TestIndexRefusesTheFlavorPastTheLast(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, cohort("c", "", 16), queue("a", "c", 8, lower), queue("b", "c", 8, lower))
	x := preempt.NewIndex(e.f, e.tree)
	w := &gang.Workload{ID: "w", Queue: "a", PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
	r := preempt.Running{W: w, Queue: e.q("a"), Flavor: 1, Nodes: []placement.NodeGPUs{{Node: 0, GPUs: 1}},
		Started: t0.Add(-time.Hour), Preemptible: true}
	var ie *preempt.IndexError
	require.ErrorAs(t, x.Add(r), &ie)
	assert.ErrorIs(t, ie, preempt.ErrInvalid)
	assert.Equal(t, 0, x.Len())
	r.Flavor = 0
	require.NoError(t, x.Add(r))
}
