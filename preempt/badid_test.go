package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Out-of-range queue, flavor and node IDs are refused with typed errors:
// by Victims as an invalid NoPlan, by the Index as an *IndexError.
func TestOutOfRangeIDsAreRefused(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, lower))
	e.run("lo", "a", 0, time.Hour, []int{0}, []int{8})
	v := e.view()
	s := preempt.NewSearcher(preempt.Options{})
	for _, c := range []struct {
		name string
		q    quota.NodeID
		f    quota.FlavorID
	}{{"negative queue", -1, 0}, {"queue past the end", 1, 0}, {"negative flavor", 0, -1}, {"flavor past the end", 0, 1}} {
		r := e.req("new", "a", 10, 1, 8, "")
		r.Queue, r.Flavor = c.q, c.f
		_, err := s.Victims(v, r, nil)
		require.ErrorIs(t, err, preempt.ErrInvalid, c.name)
	}
	w := &gang.Workload{ID: "x", Queue: "a", PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}
	for _, r := range []preempt.Running{
		{W: w, Queue: 1, Flavor: 0, Nodes: []placement.NodeGPUs{{Node: 1, GPUs: 1}}}, // the queue past the last
		{W: w, Queue: 5, Flavor: 0, Nodes: []placement.NodeGPUs{{Node: 1, GPUs: 1}}},
		{W: w, Queue: 0, Flavor: 3, Nodes: []placement.NodeGPUs{{Node: 1, GPUs: 1}}},
		{W: w, Queue: 0, Flavor: 0, Nodes: []placement.NodeGPUs{{Node: 2, GPUs: 1}}}, // the node past the last
		{W: w, Queue: 0, Flavor: 0, Nodes: []placement.NodeGPUs{{Node: 9, GPUs: 1}}},
		{W: w, Queue: 0, Flavor: 0, Nodes: []placement.NodeGPUs{{Node: -1, GPUs: 1}}},
	} {
		var ie *preempt.IndexError
		require.ErrorAs(t, v.Index.Add(r), &ie)
		assert.ErrorIs(t, ie, preempt.ErrInvalid)
	}
	_ = topology.NodeID(0)
}
