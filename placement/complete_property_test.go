package placement_test

import (
	"fmt"
	"math/bits"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/draw"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// brute is the reference for completeness: it decides whether any
// placement of a one-pod-set workload exists by counting, node by node,
// how many of its identical pods each node can still take (GPU by GPU,
// MIG slice by MIG slice, resource by resource), with nothing of
// Placer's indexes, aggregates or search order.
type brute struct {
	f      *topology.Fleet
	w      *gang.Workload
	out    []bool // nodes out of bounds (avoided, or outside within)
	reqLvl topology.Level
}

// gpuFree reports whether GPU i of node n is wholly free.
func gpuFree(f *topology.Fleet, n topology.NodeID, i int) bool {
	used, sl := f.GPUUsed(n, i)
	return used == 0 && sl == 0 && !f.GPUWhole(n, i)
}

// migCount is the most slices of profile prof that fit beside the
// occupied memory slices used, by trying every start.
func migCount(used uint8, prof topology.MIGProfile) int {
	best := 0
	for s := range topology.MIGSlices {
		if prof.Starts&(1<<s) == 0 || s+prof.Slices > topology.MIGSlices {
			continue
		}
		m := uint8((1<<prof.Slices - 1) << s)
		if prof.Slices >= topology.MIGSlices {
			m = 0xFF
		}
		if used&m != 0 {
			continue
		}
		best = max(best, 1+migCount(used|m, prof))
	}
	return best
}

// nodeCap is how many pods of ps node n can take in group g.
func (b brute) nodeCap(n topology.NodeID, g topology.GroupID, ps gang.PodSet) int {
	f := b.f
	if f.Health(n) != topology.Healthy || f.NodeGroup(n) != g || b.out[n] {
		return 0
	}
	c := 1 << 30
	switch {
	case ps.GPUsPerPod > 0:
		free := 0
		for i := range f.Capacity(n) {
			if gpuFree(f, n, i) {
				free++
			}
		}
		c = free / ps.GPUsPerPod
	case ps.GPUShare > 0:
		if f.MIG(n) {
			return 0
		}
		c = 0
		for i := range f.Capacity(n) {
			if used, _ := f.GPUUsed(n, i); !f.GPUWhole(n, i) {
				c += (topology.MilliGPU - used) / ps.GPUShare
			}
		}
	case ps.MIG != "":
		prof, ok := f.NodeMIGProfile(n, ps.MIG)
		if !ok {
			return 0
		}
		c = 0
		for i := range f.Capacity(n) {
			if _, sl := f.GPUUsed(n, i); !f.GPUWhole(n, i) {
				c += migCount(sl, prof)
			}
		}
	}
	for _, r := range ps.Resources {
		id, ok := f.Resource(r.Name)
		if !ok {
			return 0
		}
		c = min(c, int(f.ResourceFree(n, id)/r.Amount))
	}
	if m := b.w.Spread.MaxPerNode; m > 0 {
		c = min(c, m)
	}
	return c
}

// domainCap is how many pods of ps domain d holds in group g, within the
// spread limits.
func (b brute) domainCap(d topology.DomainID, g topology.GroupID, ps gang.PodSet) int {
	f := b.f
	lo, hi := f.Nodes(d)
	sp := b.w.Spread
	if sp.MaxPerDomain == 0 {
		c := 0
		for n := lo; n < hi; n++ {
			c += b.nodeCap(n, g, ps)
		}
		return c
	}
	sl, _ := f.Level(sp.Level)
	per := map[topology.DomainID]int{}
	for n := lo; n < hi; n++ {
		per[f.DomainOf(n, sl)] += b.nodeCap(n, g, ps)
	}
	c := 0
	for _, v := range per {
		c += min(v, sp.MaxPerDomain)
	}
	return c
}

// fits reports whether some accepted group and some domain of the
// required level hold every pod of the workload's one pod set.
func (b brute) fits() bool {
	f, w := b.f, b.w
	ps := w.PodSets[0]
	for g := range topology.GroupID(f.NumGroups()) {
		if _, ok := w.Accepts(f.GroupFlavor(g)); !ok {
			continue
		}
		if len(w.Pools) > 0 && !slices.Contains(w.Pools, f.GroupPool(g)) {
			continue
		}
		lo, hi := f.DomainsAt(b.reqLvl)
		for d := lo; d < hi; d++ {
			if b.domainCap(d, g, ps) >= ps.Count {
				return true
			}
		}
	}
	return false
}

// checkAnswer checks an assignment against the request and the fleet on
// its own terms: every pod placed once on a healthy node in bounds of an
// accepted group, in its pod set's form, the GPUs and resources it takes
// free, all inside one domain of the required level, spread respected;
// then Apply takes it and Unapply restores the fleet.
func checkAnswer(t require.TestingT, f *topology.Fleet, w *gang.Workload, out []bool, reqLvl topology.Level, a placement.Assignment) {
	require.Equal(t, w.Pods(), len(a.Pods), "every pod placed")
	g := a.Group
	_, ok := w.Accepts(f.GroupFlavor(g))
	require.True(t, ok, "group %d of flavor %q accepted", g, f.GroupFlavor(g))
	if len(w.Pools) > 0 {
		require.Contains(t, w.Pools, f.GroupPool(g))
	}
	seen := map[[2]int]bool{}
	milli := map[[2]int]int{}   // (node, gpu) -> thousandths taken
	slots := map[[2]int]uint8{} // (node, gpu) -> MIG slices taken
	whole := map[[2]int]bool{}
	res := map[string]int64{} // "node/resource" -> amount
	perNode := map[topology.NodeID]int{}
	perDom := map[topology.DomainID]int{}
	sl, _ := f.Level(w.Spread.Level)
	var dom topology.DomainID = -1
	for _, pod := range a.Pods {
		require.True(t, pod.PodSet >= 0 && pod.PodSet < len(w.PodSets))
		ps := w.PodSets[pod.PodSet]
		k := [2]int{pod.PodSet, pod.Index}
		require.False(t, seen[k], "pod %v placed twice", k)
		require.True(t, pod.Index >= 0 && pod.Index < ps.Count)
		seen[k] = true
		n := pod.Node
		require.True(t, n >= 0 && int(n) < f.NumNodes())
		require.Equal(t, topology.Healthy, f.Health(n))
		require.Equal(t, g, f.NodeGroup(n), "pod on node %s outside its group", f.NodeName(n))
		require.False(t, out[n], "pod on node %s out of bounds", f.NodeName(n))
		if d := f.DomainOf(n, reqLvl); dom < 0 {
			dom = d
		} else {
			require.Equal(t, dom, d, "pods in two domains of the required level")
		}
		perNode[n]++
		if w.Spread.MaxPerDomain > 0 {
			perDom[f.DomainOf(n, sl)]++
		}
		switch {
		case ps.GPUsPerPod > 0:
			require.Equal(t, ps.GPUsPerPod, pod.GPUs)
			require.Equal(t, ps.GPUsPerPod, bits.OnesCount64(pod.GPUMask))
			for m := pod.GPUMask; m != 0; m &= m - 1 {
				i := bits.TrailingZeros64(m)
				key := [2]int{int(n), i}
				require.True(t, gpuFree(f, n, i), "GPU %d of %s not free", i, f.NodeName(n))
				require.False(t, whole[key] || milli[key] > 0)
				whole[key] = true
			}
		case ps.GPUShare > 0:
			require.False(t, f.MIG(n))
			require.Equal(t, ps.GPUShare, pod.Share)
			key := [2]int{int(n), pod.GPU}
			require.True(t, pod.GPU >= 0 && pod.GPU < f.Capacity(n))
			require.False(t, f.GPUWhole(n, pod.GPU) || whole[key])
			used, _ := f.GPUUsed(n, pod.GPU)
			milli[key] += pod.Share
			require.LessOrEqual(t, used+milli[key], topology.MilliGPU)
		case ps.MIG != "":
			prof, ok := f.NodeMIGProfile(n, ps.MIG)
			require.True(t, ok)
			require.Equal(t, ps.MIG, pod.MIG)
			key := [2]int{int(n), pod.GPU}
			require.True(t, pod.GPU >= 0 && pod.GPU < f.Capacity(n))
			require.False(t, f.GPUWhole(n, pod.GPU) || whole[key])
			require.NotZero(t, prof.Starts&(1<<pod.Slice), "slice start")
			m := uint8((1<<prof.Slices - 1) << pod.Slice)
			if prof.Slices >= topology.MIGSlices {
				m = 0xFF
			}
			_, used := f.GPUUsed(n, pod.GPU)
			require.Zero(t, (used|slots[key])&m, "MIG slices overlap")
			slots[key] |= m
		default:
			require.Zero(t, pod.GPUs)
			require.Zero(t, pod.Share)
		}
		for _, r := range ps.Resources {
			id, ok := f.Resource(r.Name)
			require.True(t, ok)
			key := fmt.Sprintf("%d/%s", n, r.Name)
			res[key] += r.Amount
			require.LessOrEqual(t, res[key], f.ResourceFree(n, id), "resource %s on %s", r.Name, f.NodeName(n))
		}
	}
	for n, c := range perNode {
		if w.Spread.MaxPerNode > 0 {
			require.LessOrEqual(t, c, w.Spread.MaxPerNode, "spread on %s", f.NodeName(n))
		}
	}
	for _, c := range perDom {
		require.LessOrEqual(t, c, w.Spread.MaxPerDomain)
	}
	before := f.String()
	require.NoError(t, placement.Apply(f, a))
	require.NoError(t, placement.Unapply(f, a))
	require.Equal(t, before, f.String())
}

// randomFleet draws a small fleet of spines, leaves and nodes with mixed
// GPU models, pools, cpu and memory, some nodes unhealthy, partly
// allocated with whole GPUs, shares and MIG slices that also hold cpu
// and memory.
func randomFleet(t *rapid.T) *topology.Fleet { return drawFleet(t, draw.Rapid(t), 3) }

// drawFleet is randomFleet drawn from d, with up to claims claims per
// node.
func drawFleet(t require.TestingT, d draw.Drawer, claims int) *topology.Fleet {
	var spec topology.Spec
	spec.Levels = []string{"spine", "leaf", "node"}
	spines := d.IntRange(1, 2, "spines")
	for s := range spines {
		leaves := d.IntRange(1, 3, "leaves")
		for l := range leaves {
			for x := range d.IntRange(1, 3, "nodes") {
				ns := topology.NodeSpec{
					Name: fmt.Sprintf("n%d-%d-%d", s, l, x),
					Path: []string{fmt.Sprintf("s%d", s), fmt.Sprintf("l%d-%d", s, l)},
					GPUs: draw.Pick(d, []int{0, 1, 2, 4, 8}, "gpus"),
				}
				switch d.IntRange(0, 2, "model") {
				case 0:
					ns.Flavor = "H100"
					ns.MIG = ns.GPUs > 0 && d.IntRange(0, 2, "mig") == 0
				case 1:
					ns.Flavor = "L4"
				default:
					ns.Flavor = "A10"
				}
				if d.IntRange(0, 3, "pooled") == 0 {
					ns.Pool = "spot"
				}
				ns.Resources = map[string]int64{
					"cpu":    int64(d.IntRange(0, 16, "cores")) * 1000,
					"memory": int64(d.IntRange(0, 8, "gib")) << 30,
				}
				if ns.GPUs == 0 && ns.Resources["cpu"] == 0 {
					ns.Resources["cpu"] = 1000
				}
				spec.Nodes = append(spec.Nodes, ns)
			}
		}
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	cpu, _ := f.Resource("cpu")
	mem, _ := f.Resource("memory")
	for range d.IntRange(0, claims*f.NumNodes(), "claims") {
		n := topology.NodeID(d.IntRange(0, f.NumNodes()-1, "n"))
		c := topology.Claim{Node: n}
		if gpus := f.Capacity(n); gpus > 0 {
			c.GPU = d.IntRange(0, gpus-1, "g")
			switch d.IntRange(0, 2, "kind") {
			case 0:
				c.Share = draw.Pick(d, []int{100, 250, 500, 700}, "s")
			case 1:
				c.MIG = draw.Pick(d, []string{"1g.10gb", "3g.40gb"}, "prof")
				c.Slice = draw.Pick(d, []int{0, 1, 4}, "slice")
			default:
				c.Whole, c.GPU = 1<<c.GPU, 0
			}
		}
		c.Resources = []topology.ResourceAmount{
			{Resource: cpu, Amount: int64(d.IntRange(0, 6, "ccpu")) * 1000},
			{Resource: mem, Amount: int64(d.IntRange(0, 3, "cmem")) << 30},
		}
		_ = f.AllocateClaim(c) // a refused claim changes nothing
	}
	for n := range topology.NodeID(f.NumNodes()) {
		if d.IntRange(0, 9, "down") == 0 {
			require.NoError(t, f.SetHealth(n, topology.Cordoned))
		}
	}
	return f
}

// randomPodSet draws a pod set of one GPU form (or none) with cpu and
// memory.
func randomPodSet(t *rapid.T, name string, maxCount int) gang.PodSet {
	return drawPodSet(draw.Rapid(t), name, maxCount)
}

// drawPodSet is randomPodSet drawn from d.
func drawPodSet(d draw.Drawer, name string, maxCount int) gang.PodSet {
	ps := gang.PodSet{Name: name, Count: d.IntRange(1, maxCount, name+"count")}
	switch d.IntRange(0, 3, name+"form") {
	case 0:
		ps.GPUsPerPod = draw.Pick(d, []int{1, 2, 4, 8}, name+"k")
	case 1:
		ps.GPUShare = draw.Pick(d, []int{100, 250, 300, 500, 800, 1000}, name+"share")
	case 2:
		ps.MIG = draw.Pick(d, []string{"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"}, name+"prof")
	}
	if c := d.IntRange(0, 8, name+"cpu"); c > 0 || ps.NoGPU() {
		ps.Resources = append(ps.Resources, gang.Resource{Name: "cpu", Amount: int64(max(c, 1)) * 1000})
	}
	if m := d.IntRange(0, 4, name+"mem"); m > 0 {
		ps.Resources = append(ps.Resources, gang.Resource{Name: "memory", Amount: int64(m) << 29})
	}
	return ps
}

// randomRequest draws a workload for f: accepted models, pools, required
// and preferred levels, spread; and the domains to avoid or stay within.
func randomRequest(t *rapid.T, f *topology.Fleet, podSets int) (w *gang.Workload, avoid []topology.DomainID, within topology.DomainID) {
	return drawRequest(draw.Rapid(t), f, podSets)
}

// drawRequest is randomRequest drawn from d.
func drawRequest(d draw.Drawer, f *topology.Fleet, podSets int) (w *gang.Workload, avoid []topology.DomainID, within topology.DomainID) {
	w = &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch}
	for i := range podSets {
		w.PodSets = append(w.PodSets, drawPodSet(d, fmt.Sprintf("p%d", i), 6))
	}
	models := []string{"H100", "L4", "A10"}
	if draw.Bool(d, "someModels") {
		n := d.IntRange(1, 3, "models")
		w.Flavors = draw.Permute(d, models, "order")[:n]
		w.FlavorsInOrder = draw.Bool(d, "inOrder")
	}
	switch d.IntRange(0, 3, "pools") {
	case 0:
		w.Pools = []string{"spot"}
	case 1:
		w.Pools = []string{"", "spot"}
	}
	levels := []string{"", "spine", "leaf", "node"}
	req := d.IntRange(0, 3, "required")
	pref := d.IntRange(req, 3, "preferred")
	w.Topology.Required, w.Topology.Preferred = levels[req], levels[pref]
	if d.IntRange(0, 3, "spreadNode") == 0 {
		w.Spread.MaxPerNode = d.IntRange(1, 3, "maxPerNode")
	}
	if d.IntRange(0, 3, "spreadDomain") == 0 {
		w.Spread.MaxPerDomain = d.IntRange(1, 4, "maxPerDomain")
		w.Spread.Level = draw.Pick(d, []string{"spine", "leaf"}, "spreadLevel")
	}
	within = -1
	switch d.IntRange(0, 3, "bounds") {
	case 0:
		avoid = append(avoid, topology.DomainID(d.IntRange(1, f.NumDomains()-1, "avoid")))
	case 1:
		within = topology.DomainID(d.IntRange(0, f.NumDomains()-1, "within"))
	}
	return w, avoid, within
}

// outOfBounds marks the nodes a call with avoid and within keeps out.
func outOfBounds(f *topology.Fleet, avoid []topology.DomainID, within topology.DomainID) []bool {
	out := make([]bool, f.NumNodes())
	for _, d := range avoid {
		lo, hi := f.Nodes(d)
		for n := lo; n < hi; n++ {
			out[n] = true
		}
	}
	if within >= 0 {
		lo, hi := f.Nodes(within)
		for n := range topology.NodeID(f.NumNodes()) {
			if n < lo || n >= hi {
				out[n] = true
			}
		}
	}
	return out
}

// place calls the entry point the bounds ask for.
func placeIn(p *placement.Placer, f *topology.Fleet, w *gang.Workload, avoid []topology.DomainID, within topology.DomainID) (placement.Assignment, error) {
	switch {
	case within >= 0:
		return p.PlaceWithin(f, w, within, avoid...)
	case len(avoid) > 0:
		return p.PlaceAvoiding(f, w, avoid...)
	}
	return p.Place(f, w)
}

// Placement is complete: whenever a brute-force count finds room for a
// one-pod-set workload (any GPU form, cpu and memory, models, pools,
// required and preferred levels, spread, avoided or bounding domains),
// Place finds a placement, with or without the Fragmentation ranker; and
// every placement it returns, for one pod set or two, is valid by an
// independent check.
func TestPropertyPlaceFindsEveryFit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := randomFleet(t)
		podSets := 1
		if rapid.IntRange(0, 3).Draw(t, "twoPodSets") == 0 {
			podSets = 2
		}
		w, avoid, within := randomRequest(t, f, podSets)
		if w.Validate() != nil {
			t.Skip("the draw is not a valid workload")
		}
		var opt placement.Options
		if rapid.Bool().Draw(t, "ranked") {
			fr := placement.NewFragmentation()
			for range rapid.IntRange(0, 4).Draw(t, "mix") {
				fr.Observe(&gang.Workload{ID: "m", Queue: "q", Shape: gang.Batch,
					PodSets: []gang.PodSet{randomPodSet(t, "m", 1)}})
			}
			fr.Observe(w)
			opt.Ranker = fr
		}
		out := outOfBounds(f, avoid, within)
		reqLvl, _ := f.Level(w.Topology.Required)
		before := f.String()
		p := placement.NewPlacer(opt)
		// A walk bound of one entry per class makes every cut-off a
		// small fleet can show.
		placement.SetVisitLimit(p, rapid.IntRange(0, 2).Draw(t, "visitLimit"))
		a, err := placeIn(p, f, w, avoid, within)
		require.Equal(t, before, f.String(), "Place changed the fleet")
		if err == nil {
			checkAnswer(t, f, w, out, reqLvl, a)
		}
		if podSets > 1 {
			return
		}
		b := brute{f: f, w: w, out: out, reqLvl: reqLvl}
		require.Equal(t, b.fits(), err == nil, "brute force and Place disagree: %v\n%s", err, f)
	})
}
