package placement_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/draw"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the recorded decisions in testdata")

// oddScorer prefers nodes by a fixed scramble of their IDs, so that the
// Scorer's choice among equal fits differs from the lowest ID.
type oddScorer struct{}

func (oddScorer) Score(_ *topology.Fleet, _ *gang.Workload, n topology.NodeID) int {
	return int(n) * 7 % 5
}

// oddRanker ranks options by a fixed scramble of their node and GPU, so
// that which options the walks show decides the choice.
type oddRanker struct{}

func (oddRanker) Rank(_ *topology.Fleet, _ *gang.Workload, o placement.Option) float64 {
	return float64((int(o.Node)*7 + o.GPU*3 + 11) % 5)
}

// leafLoad is an Uplinks where leaves are crossed by their ID modulo 3.
type leafLoad struct{}

func (leafLoad) Crossing(leaf topology.DomainID) int { return int(leaf) % 3 }

// decisionCases is how many seeded fleets the recorded decisions cover.
const decisionCases = 1000

// Placement decides today as recorded in testdata/decisions.txt: a few
// thousand requests on seeded random fleets (every GPU form, cpu and
// memory, models, pools, levels, spread, rank groups, segments, avoided
// and bounding domains, warm nodes, a Scorer, uplink loads, a Ranker
// that scrambles options, the Fragmentation ranker with its scores), each fleet changed by the
// placements applied and released between requests. It pins which
// valid placement is chosen, which the properties leave free; a change
// that means to choose otherwise rewrites the file with -rewrite and
// shows the changed decisions in its diff.
func TestPlacementDecisionsStayAsRecorded(t *testing.T) {
	var b strings.Builder
	for c := range decisionCases {
		recordDecisions(t, &b, c)
	}
	draw.Recorded(t, filepath.Join("testdata", "decisions.txt"), b.String(), *rewrite)
}

// recordDecisions writes case c: its options, then each request and
// what Place answered.
func recordDecisions(t *testing.T, b *strings.Builder, c int) {
	d := draw.Seeded(uint64(c), 20261203)
	f := drawFleet(t, d, 1)
	var opt placement.Options
	var fr *placement.Fragmentation
	var desc []string
	switch d.IntRange(0, 3, "") {
	case 0:
		opt.Ranker = oddRanker{}
		desc = append(desc, "odd ranker")
	case 1:
		fr = placement.NewFragmentation()
		for range d.IntRange(0, 6, "") {
			fr.Observe(&gang.Workload{ID: "m", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{drawPodSet(d, "m", 2)}})
		}
		opt.Ranker = fr
		desc = append(desc, "ranked")
	}
	if opt.Ranker != nil && d.IntRange(0, 1, "") == 0 {
		opt.MaxRanked = d.IntRange(1, 3, "")
		desc = append(desc, fmt.Sprintf("maxRanked=%d", opt.MaxRanked))
	}
	if d.IntRange(0, 3, "") == 0 {
		opt.Scorer, opt.MaxScored = oddScorer{}, d.IntRange(0, 3, "")
		desc = append(desc, fmt.Sprintf("scorer maxScored=%d", opt.MaxScored))
	}
	if d.IntRange(0, 3, "") == 0 {
		opt.Uplinks = leafLoad{}
		desc = append(desc, "uplinks")
	}
	if d.IntRange(0, 2, "") == 0 {
		var warm []topology.NodeID
		for n := range topology.NodeID(f.NumNodes()) {
			if d.IntRange(0, 2, "") == 0 {
				warm = append(warm, n)
			}
		}
		opt.Warm, opt.MaxWarm = warmList{"m": warm}, d.IntRange(0, 4, "")
		desc = append(desc, fmt.Sprintf("warm=%v maxWarm=%d", warm, opt.MaxWarm))
	}
	opt.Explain = d.IntRange(0, 1, "") == 0
	p := placement.NewPlacer(opt)
	limit := d.IntRange(0, 2, "")
	placement.SetVisitLimit(p, limit)
	fmt.Fprintf(b, "case %d: %d nodes, visit limit %d %s\n", c, f.NumNodes(), limit, strings.Join(desc, " "))
	var placed []placement.Assignment
	for step := range 8 {
		podSets := 1
		if d.IntRange(0, 3, "") == 0 {
			podSets = 2
		}
		w, avoid, within := drawRequest(d, f, podSets)
		w.ID = fmt.Sprintf("w%d", step)
		for i := range w.PodSets {
			w.PodSets[i].Count = min(w.PodSets[i].Count, d.IntRange(1, 4, ""))
		}
		dressRequest(d, w, opt.Warm != nil)
		if w.Validate() != nil {
			continue
		}
		if fr != nil {
			fr.Observe(w)
		}
		fmt.Fprintf(b, "  %s avoid=%v within=%d\n", describeWorkload(w), avoid, within)
		a, err := placeIn(p, f, w, avoid, within)
		if err != nil {
			fmt.Fprintf(b, "    no: %v\n", err)
			continue
		}
		fmt.Fprintf(b, "    %s\n", describeAssignment(f, a))
		if fr != nil && len(a.Pods) == 1 {
			o := placement.Option{Node: a.Pods[0].Node, Group: a.Group, GPU: -1}
			if a.Pods[0].Share > 0 {
				o.GPU = a.Pods[0].GPU
			}
			fmt.Fprintf(b, "    rank %.6g\n", fr.Rank(f, w, o))
		}
		if d.IntRange(0, 3, "") > 0 {
			require.NoError(t, placement.Apply(f, a))
			placed = append(placed, a.Clone())
		}
		if len(placed) > 0 && d.IntRange(0, 3, "") == 0 {
			k := d.IntRange(0, len(placed)-1, "")
			require.NoError(t, placement.Unapply(f, placed[k]))
			placed = append(placed[:k], placed[k+1:]...)
		}
	}
}

// dressRequest adds to w what drawRequest leaves out: a model with warm
// nodes, rank groups, a segment.
func dressRequest(d draw.Drawer, w *gang.Workload, warm bool) {
	ps := &w.PodSets[0]
	switch d.IntRange(0, 5, "") {
	case 0:
		if warm {
			w.Model, w.Topology, w.Spread = "m", gang.TopologyRequest{}, gang.Spread{}
			w.PodSets = w.PodSets[:1]
		}
	case 1:
		if ps.Count > 1 {
			size := draw.Pick(d, divisors(ps.Count), "")
			ps.RankGroups = []gang.RankGroup{{Size: size, Level: draw.Pick(d, []string{"leaf", "spine", "node"}, ""),
				Required: d.IntRange(0, 1, "") == 0}}
		}
	case 2:
		if ps.Count > 1 {
			levels := []string{"leaf", "node"}
			if w.Topology.Required == "node" {
				levels = levels[1:]
			}
			w.Topology.Segment = gang.Segment{Size: draw.Pick(d, divisors(ps.Count), ""), Level: draw.Pick(d, levels, ""), PodSet: ps.Name}
		}
	}
}

// divisors lists the divisors of n below n.
func divisors(n int) []int {
	var out []int
	for k := 1; k < n; k++ {
		if n%k == 0 {
			out = append(out, k)
		}
	}
	return out
}

// describeWorkload is one line of what w asks for.
func describeWorkload(w *gang.Workload) string {
	var b strings.Builder
	b.WriteString(w.ID)
	for _, ps := range w.PodSets {
		fmt.Fprintf(&b, " %s:%dx", ps.Name, ps.Count)
		switch {
		case ps.GPUsPerPod > 0:
			fmt.Fprintf(&b, "%dgpu", ps.GPUsPerPod)
		case ps.GPUShare > 0:
			fmt.Fprintf(&b, "%dm", ps.GPUShare)
		case ps.MIG != "":
			b.WriteString(ps.MIG)
		default:
			b.WriteString("cpu")
		}
		for _, r := range ps.Resources {
			fmt.Fprintf(&b, ",%s=%d", r.Name, r.Amount)
		}
		for _, g := range ps.RankGroups {
			fmt.Fprintf(&b, ",ranks%d/%s/%t", g.Size, g.Level, g.Required)
		}
	}
	if len(w.Flavors) > 0 {
		fmt.Fprintf(&b, " models=%v ordered=%t", w.Flavors, w.FlavorsInOrder)
	}
	if len(w.Pools) > 0 {
		fmt.Fprintf(&b, " pools=%q", w.Pools)
	}
	if t := w.Topology; t != (gang.TopologyRequest{}) {
		fmt.Fprintf(&b, " required=%q preferred=%q", t.Required, t.Preferred)
		if t.Segment.Enabled() {
			fmt.Fprintf(&b, " segment=%d/%s", t.Segment.Size, t.Segment.Level)
		}
	}
	if s := w.Spread; s != (gang.Spread{}) {
		fmt.Fprintf(&b, " spread=%d/node,%d/%s", s.MaxPerNode, s.MaxPerDomain, s.Level)
	}
	if w.Model != "" {
		fmt.Fprintf(&b, " model=%s", w.Model)
	}
	return b.String()
}

// describeAssignment is one line of where a puts each pod.
func describeAssignment(f *topology.Fleet, a placement.Assignment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "group %d domain %d level %d span %d:", a.Group, a.Domain, a.Level, a.Span)
	for _, p := range a.Pods {
		fmt.Fprintf(&b, " %d.%d@%s", p.PodSet, p.Index, f.NodeName(p.Node))
		switch {
		case p.GPUs > 0:
			fmt.Fprintf(&b, "/%x", p.GPUMask)
		case p.MIG != "":
			fmt.Fprintf(&b, "/g%d:%s@%d", p.GPU, p.MIG, p.Slice)
		case p.Share > 0:
			fmt.Fprintf(&b, "/g%d:%dm", p.GPU, p.Share)
		}
	}
	return b.String()
}
