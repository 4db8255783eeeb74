package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// Cells are compared by what their sets lose: a surplus taken alone by
// the pods it gives up once it keeps back those the request does not
// need, not by its whole surplus.
//
// Two leaves of two 4-GPU nodes; the queue (nominal 13) uses 12 and asks
// for one 4-GPU pod within a leaf, priority 3: 3 GPUs must go for quota.
// Leaf 0: node 0 holds "small", 1 GPU at priority 2, and "leaving", 1
// GPU draining; node 1 three GPUs of work that may not be preempted.
// Leaf 1: node 2 is full of such work; node 3 holds "elastic", 3 one-GPU
// pods at priority 2, minimum 1. Quota takes leaving and elastic's
// surplus (2 pods) first. Leaf 0 then needs small too, and elastic gives
// up one pod only: 2 GPUs lost. Leaf 1 needs elastic whole: 3 GPUs.
// Priced by its whole surplus, leaf 0's set would tie with leaf 1's.
func TestCellsComparedByWhatShrinksGiveUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		smallAge time.Duration // elastic is 1 min old
		want     []victimSummary
		cost     float64
	}{
		{name: "small and one pod lose less than elastic whole", smallAge: time.Minute,
			want: []victimSummary{{ID: "leaving"}, {ID: "elastic", Pods: []int{2}}, {ID: "small"}}, cost: 2 * 4 * 60},
		{name: "small and one pod lose as much: fewer victims", smallAge: 5 * time.Minute,
			want: []victimSummary{{ID: "elastic"}}, cost: 3 * 4 * 60},
		{name: "small and one pod lose more", smallAge: 6 * time.Minute,
			want: []victimSummary{{ID: "elastic"}}, cost: 3 * 4 * 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 2, 2, 4, queue("a", "", 13, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}))
			e.run("small", "a", 2, tc.smallAge, []int{0}, []int{1})
			e.run("full", "a", 0, time.Minute, []int{2}, []int{4}).Preemptible = false
			leaving := e.run("leaving", "a", 0, time.Minute, []int{0}, []int{1})
			leaving.Preemptible, leaving.Draining = false, true
			elastic(e.run("elastic", "a", 2, time.Minute, []int{3}, []int{3}), 1)
			e.run("pinned", "a", 0, time.Minute, []int{1}, []int{3}).Preemptible = false
			req := e.req("new", "a", 3, 1, 4, "leaf")
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, summarize(p))
			assert.InDelta(t, tc.cost, p.LostGPUSeconds, 1e-6)
		})
	}
}

// An elastic workload taken in parts goes whole in place of its shrink
// only when the set that spares other work for it loses less than the
// shrink's set does once the shrink keeps back the pods the request does
// not need, not than the shrink's set priced by the whole surplus.
//
// Four 4-GPU nodes; the queue (nominal 5) uses 16 and asks for two
// 1-GPU pods on one node, priority 3: 13 GPUs must go for quota, and
// "big" (8 one-GPU pods on nodes 2 and 3, priority 2, minimum 4) goes
// whole whatever else goes. Node 0: "leaving", 2 GPUs draining, and
// "old", 2 GPUs at priority 0; node 1: "mid", 4 one-GPU pods at priority
// 1, minimum 2. With old, mid gives up 1 pod of its surplus of 2; mid
// whole (6000 GPU-s) spares old.
func TestSurplusGoesWholeOnlyWhenThatLosesLessThanItsShrink(t *testing.T) {
	const bigCost = 8 * (20 + 3) * 60
	for _, tc := range []struct {
		name   string
		oldAge time.Duration
		want   []victimSummary
		cost   float64
	}{
		{name: "old and one pod of mid lose less than mid whole", oldAge: 31 * time.Minute,
			want: []victimSummary{{ID: "leaving"}, {ID: "old"}, {ID: "mid", Pods: []int{3}}, {ID: "big"}},
			cost: 2*34*60 + 25*60 + bigCost},
		{name: "old and one pod of mid lose more than mid whole", oldAge: 60 * time.Minute,
			want: []victimSummary{{ID: "leaving"}, {ID: "mid"}, {ID: "big"}},
			cost: 4*25*60 + bigCost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 2, 2, 4, queue("a", "", 5, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}))
			elastic(e.run("big", "a", 2, 20*time.Minute, []int{2, 3}, []int{4, 4}), 4)
			leaving := e.run("leaving", "a", 2, 6*time.Minute, []int{0}, []int{2})
			leaving.Preemptible, leaving.Draining = false, true
			e.run("old", "a", 0, tc.oldAge, []int{0}, []int{2}).MinRuntime = 10 * time.Minute
			mid := e.run("mid", "a", 1, 22*time.Minute, []int{1}, []int{4})
			mid.MinRuntime = 10 * time.Minute
			elastic(mid, 2)
			req := e.req("new", "a", 3, 2, 1, "node")
			p, err := preempt.NewSearcher(preempt.Options{}).Victims(e.view(), req, nil)
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, summarize(p))
			assert.InDelta(t, tc.cost, p.LostGPUSeconds, 1e-6)
		})
	}
}
