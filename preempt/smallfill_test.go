package preempt_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Kueue's quota fill: eight queues of 256 GPUs share a cohort, q0 uses
// 512 (borrows 256) as one-GPU workloads, 8 per node. q7 (idle) asking
// for 8 x 8 GPUs must free 8 of q0's nodes (64 workloads): a valid plan,
// within what q0 borrows, although evicting q0's work in eviction order
// scatters victims over its nodes and stops, q0 back within quota,
// before any node is free.
func TestReclaimWholeNodesFromSmallWork(t *testing.T) {
	v := shapes.Reclaim(2048, shapes.FillSmall, 1)
	for _, req := range []preempt.Request{v.Ask("nodes", 8, 8, ""), v.Ask("leaf", 8, 8, "leaf"), v.Ask("gpus", 64, 1, "")} {
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(v.View(), req, nil)
		require.NoError(t, err, req.W.ID)
		require.Len(t, p.Victims, 64, req.W.ID)
		nodes := map[topology.NodeID]bool{}
		for _, x := range p.Victims {
			assert.True(t, strings.HasPrefix(x.ID, "q0-"), "victims are q0's borrowed work: %s", x.ID)
			assert.Equal(t, preempt.Reclaim, x.Reason)
			nodes[x.Nodes[0].Node] = true
		}
		if req.W.PodSets[0].GPUsPerPod == 8 {
			assert.Len(t, nodes, 8, "eight whole nodes")
		}
	}
	// q1 is at its nominal quota and borrowWithinCohort is unset: as in
	// Kueue, it may not reclaim from q0 while it would end up borrowing,
	// so it frees 8 of its own nodes (a lower-priority withinQueue plan).
	q1 := v.Ask("q1", 8, 8, "")
	q1.Queue, _ = v.Tree.Node("q1")
	p, err := preempt.NewSearcher(preempt.Options{}).Victims(v.View(), q1, nil)
	require.NoError(t, err)
	require.Len(t, p.Victims, 64)
	for _, x := range p.Victims {
		assert.True(t, strings.HasPrefix(x.ID, "q1-"), x.ID)
		assert.Equal(t, preempt.InQueue, x.Reason)
	}
}

// smallInstance draws a fleet of 4 nodes x 4 GPUs whose nodes hold many
// one-GPU workloads of queues b (which borrows) and x (within its quota,
// so never a victim, like the queues at their nominal quota in Kueue's
// fill), and a whole-node request of queue a (idle, within its nominal
// quota): the shape where victims taken in eviction order scatter over
// nodes and use up what b may lose. One-GPU victims keep what a queue
// can lose independent of the order they go in.
func smallInstance(t *rapid.T) (*env, preempt.Request) {
	rules := quota.Rules{WithinQueue: quota.WithinQueueLowerPriority,
		ReclaimWithinCohort: quota.ReclaimWithinCohort(rapid.IntRange(1, 2).Draw(t, "reclaim"))}
	e := newEnv(t, 1, 2, 2, 4, cohort("c", "", 0),
		queue("a", "c", 8, rules),
		queue("b", "c", int64(rapid.IntRange(0, 6).Draw(t, "nomB")), lower),
		queue("x", "c", 16, lower))
	n := rapid.IntRange(4, 14).Draw(t, "running")
	for i := range n {
		node := rapid.IntRange(0, 3).Draw(t, "node")
		free := e.f.Free(topology.NodeID(node))
		if free == 0 {
			continue
		}
		g := 1
		q := rapid.SampledFrom([]string{"b", "b", "x"}).Draw(t, "queue")
		if e.tree.InUse(e.q(q), e.fl)+int64(g) > 16 {
			continue
		}
		r := e.run(fmt.Sprintf("w%02d", i), q, int32(rapid.IntRange(0, 4).Draw(t, "prio")), time.Hour, []int{node}, []int{g})
		r.Preemptible = rapid.IntRange(0, 5).Draw(t, "preemptible") > 0
	}
	req := e.req("new", "a", 3, rapid.IntRange(1, 2).Draw(t, "pods"), 4, rapid.SampledFrom([]string{"", "leaf"}).Draw(t, "required"))
	return e, req
}

// TestWholeNodesFromSmallVictimsAgainstBruteForce compares, on fleets
// whose nodes hold many small victims, with every subset of the
// candidates other rules allow: a plan exists iff some subset frees whole
// nodes for the gang while quota fits, and the victims of each queue can
// be taken in an order where the queue still borrows at each pick (the
// last pick the largest: it borrows before it exactly when its usage less
// the others exceeds its nominal quota).
func TestWholeNodesFromSmallVictimsAgainstBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req := smallInstance(t)
		rules := e.tree.Rules(req.Queue)
		var allowed []*preempt.Running
		for i := range e.running {
			r := &e.running[i]
			if r.Preemptible && (rules.ReclaimWithinCohort == quota.ReclaimAny || r.W.Priority < req.W.Priority) {
				allowed = append(allowed, r)
			}
		}
		exists := false
		for mask := 0; mask < 1<<len(allowed) && !exists; mask++ {
			gone := map[string]bool{}
			took := map[quota.NodeID]int64{}
			largest := map[quota.NodeID]int64{}
			for i, r := range allowed {
				if mask&(1<<i) != 0 {
					gone[r.W.ID] = true
					g := int64(gpusOfTest(r.Nodes))
					took[r.Queue] += g
					largest[r.Queue] = max(largest[r.Queue], g)
				}
			}
			ordered := true
			for q, g := range took {
				if e.tree.InUse(q, e.fl)-(g-largest[q]) <= e.tree.Nominal(q, e.fl) {
					ordered = false
				}
			}
			exists = ordered && fitsWithout(e, req, gone, false)
		}
		p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
		require.Equal(t, exists, err == nil, "brute force %v, ours %v", exists, err)
		if err == nil {
			require.False(t, p.Borrowing)
		}
	})
}
