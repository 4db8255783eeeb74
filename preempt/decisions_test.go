package preempt_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/draw"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the recorded plans in testdata")

// planCases is how many seeded instances the recorded plans cover.
const planCases = 1500

// The victim search plans today as recorded in testdata/plans.txt:
// seeded random instances (one queue or a cohort of three, every
// combination of queue rules, borrowWithinCohort thresholds, fair
// sharing, elastic victims that shrink, draining and excluded work,
// avoided domains, required levels, two cost models and restart
// overheads), each searched three times on one index: as drawn, after a
// workload is marked draining in place, and after one leaves. It pins
// which of the equally valid plans is chosen and how it is priced,
// which the properties leave free; a change that means to plan otherwise
// rewrites the file with -rewrite and shows the changed plans in its
// diff.
func TestPreemptionPlansStayAsRecorded(t *testing.T) {
	var b strings.Builder
	for c := range planCases {
		recordPlans(t, &b, c)
	}
	draw.Recorded(t, filepath.Join("testdata", "plans.txt"), b.String(), *rewrite)
}

// recordPlans writes case c: the running work, then each search and its
// plan.
func recordPlans(t *testing.T, b *strings.Builder, c int) {
	d := draw.Seeded(uint64(c), 20261203)
	single := d.IntRange(0, 3, "") == 0
	fanout := []int{d.IntRange(1, 2, ""), d.IntRange(1, 3, ""), d.IntRange(1, 3, "")}
	gpus := draw.Pick(d, []int{4, 8}, "")
	e, req, exclude := drawInstance(t, d, single, fanout, gpus)
	for i := range e.running {
		r := &e.running[i]
		if total := gpusOfTest(r.Nodes); total > 1 && d.IntRange(0, 2, "") == 0 {
			keep := d.IntRange(1, total-1, "")
			elastic(r, keep)
			r.W.PodSets = []gang.PodSet{{Name: "p", Count: total, MinCount: keep, GPUsPerPod: 1}}
		}
		r.Submitted = r.Started.Add(-time.Duration(d.IntRange(0, 30, "")) * time.Minute)
	}
	req.Submitted = t0.Add(-time.Duration(d.IntRange(0, 90, "")) * time.Minute)
	req.Starved = d.IntRange(0, 4, "") == 0
	if d.IntRange(0, 4, "") == 0 {
		req.Avoid = []topology.DomainID{topology.DomainID(d.IntRange(1, e.f.NumDomains()-1, ""))}
	}
	var opt preempt.Options
	if d.IntRange(0, 2, "") == 0 {
		rates := perGPURate{}
		for _, r := range e.running {
			rates[r.W.ID] = float64(d.IntRange(1, 5, ""))
		}
		opt.Cost = rates
	}
	opt.RestartOverhead = time.Duration(d.IntRange(0, 10, "")) * time.Minute
	switch d.IntRange(0, 3, "") {
	case 0:
		opt.FairSharingStrategies = []preempt.FairSharingStrategy{preempt.LessThanOrEqualToFinalShare}
	case 1:
		opt.FairSharingStrategies = []preempt.FairSharingStrategy{preempt.LessThanInitialShare}
	}
	fmt.Fprintf(b, "case %d: %v nodes of %d GPUs, single %t, cost %T, overhead %s, strategies %v\n",
		c, fanout, gpus, single, opt.Cost, opt.RestartOverhead, opt.FairSharingStrategies)
	for _, r := range e.running {
		fmt.Fprintf(b, "  run %s\n", describeRunning(e, r, exclude))
	}
	fmt.Fprintf(b, "  want %s\n", describeRequest(req))
	x := preempt.NewIndex(e.f, e.tree)
	for _, r := range e.running {
		require.NoError(t, x.Add(r))
	}
	s := preempt.NewSearcher(opt)
	search := func(what string) {
		view := preempt.View{Fleet: e.f, Tree: e.tree, Index: x, Scratch: e.f.Clone()}
		p, err := s.Victims(view, req, exclude)
		if err != nil {
			fmt.Fprintf(b, "  %s: no: %v\n", what, err)
			return
		}
		fmt.Fprintf(b, "  %s: %s\n", what, describePlan(e, p))
	}
	search("as drawn")
	if len(e.running) == 0 {
		return
	}
	k := d.IntRange(0, len(e.running)-1, "")
	e.running[k].Draining = !e.running[k].Draining
	require.NoError(t, x.Update(e.running[k]))
	search(fmt.Sprintf("%s draining %t", e.running[k].W.ID, e.running[k].Draining))
	k = d.IntRange(0, len(e.running)-1, "")
	r := e.running[k]
	for _, n := range r.Nodes {
		require.NoError(t, e.f.Release(n.Node, n.GPUs))
	}
	require.NoError(t, e.tree.RemoveUsage(r.Queue, r.Flavor, int64(gpusOfTest(r.Nodes))))
	require.NoError(t, x.Remove(r.W.ID))
	e.running = append(e.running[:k], e.running[k+1:]...)
	search(r.W.ID + " gone")
}

// describeRunning is one line of a running workload.
func describeRunning(e *env, r preempt.Running, exclude map[string]bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s q=%s prio=%d on=", r.W.ID, e.tree.Name(r.Queue), r.W.Priority)
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, "%s:%d,", e.f.NodeName(n.Node), n.GPUs)
	}
	fmt.Fprintf(&b, " started=-%s submitted=-%s", t0.Sub(r.Started), t0.Sub(r.Submitted))
	if !r.Preemptible {
		b.WriteString(" not-preemptible")
	}
	if r.MinRuntime > 0 {
		fmt.Fprintf(&b, " minRuntime=%s", r.MinRuntime)
	}
	if r.Draining {
		b.WriteString(" draining")
	}
	if r.Shrinkable != nil {
		fmt.Fprintf(&b, " elastic keep=%v", r.Keep)
	}
	if exclude[r.W.ID] {
		b.WriteString(" excluded")
	}
	return b.String()
}

// describeRequest is one line of the request.
func describeRequest(req preempt.Request) string {
	ps := req.W.PodSets[0]
	return fmt.Sprintf("%dx%d prio=%d required=%q fair=%t starved=%t avoid=%v submitted=-%s",
		ps.Count, ps.GPUsPerPod, req.W.Priority, req.W.Topology.Required, req.FairSharing, req.Starved,
		req.Avoid, t0.Sub(req.Submitted))
}

// describePlan is one line of a plan: its victims in eviction order, the
// target's pods, its price.
func describePlan(e *env, p preempt.Plan) string {
	var b strings.Builder
	for _, v := range p.Victims {
		fmt.Fprintf(&b, "%s(%s %d %.6g", v.ID, v.Reason, v.GPUs, v.Cost)
		for _, pod := range v.Pods {
			fmt.Fprintf(&b, " p%d", pod.Index)
		}
		b.WriteString(") ")
	}
	fmt.Fprintf(&b, "-> %s lost %.6g ready +%s borrowing %t", podNodes(e, p.Target), p.LostGPUSeconds,
		p.ReadyBy.Sub(t0), p.Borrowing)
	return b.String()
}

// podNodes names the node of each pod of a.
func podNodes(e *env, a placement.Assignment) string {
	var parts []string
	for _, p := range a.Pods {
		parts = append(parts, fmt.Sprintf("%s/%x", e.f.NodeName(p.Node), p.GPUMask))
	}
	return strings.Join(parts, ",")
}
