package placement_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// blocksAfter is the largest free block of group g at each level 0..l-1
// once the GPUs of pods are taken (pods[n] GPUs on node n).
func blocksAfter(t require.TestingT, f *topology.Fleet, g topology.GroupID, l topology.Level, gpus map[topology.NodeID]int) []int {
	c := f.Clone()
	for n, k := range gpus {
		require.NoError(t, c.Allocate(n, k))
	}
	out := make([]int, l)
	for j := range out {
		out[j], _ = c.LargestFreeBlock(topology.Level(j), g)
	}
	return out
}

// gpusOf is the GPUs an assignment takes, by node.
func gpusOf(a placement.Assignment) map[topology.NodeID]int {
	m := map[topology.NodeID]int{}
	for _, p := range a.Pods {
		m[p.Node] += p.GPUs
	}
	return m
}

// requireKeepsBlocks checks a choice of domain a.Domain other than the
// best fit d: placed in d (PlaceWithin), the gang would leave no larger
// free block at any level above a.Level, and a smaller one at some level.
func requireKeepsBlocks(t require.TestingT, f *topology.Fleet, w *gang.Workload, a placement.Assignment, d topology.DomainID) {
	if a.Domain == d {
		return
	}
	ref, err := placement.NewPlacer(placement.Options{}).PlaceWithin(f, w, d)
	require.NoError(t, err, "the best fit %s", f.DomainName(d))
	require.Equal(t, d, ref.Domain)
	got := blocksAfter(t, f, a.Group, a.Level, gpusOf(a))
	want := blocksAfter(t, f, ref.Group, a.Level, gpusOf(ref))
	better := false
	for j := range got {
		require.GreaterOrEqual(t, got[j], want[j], "level %d: %s, not the best fit %s", j, f.DomainName(a.Domain), f.DomainName(d))
		better = better || got[j] > want[j]
	}
	require.True(t, better, "%s leaves no larger block than the best fit %s", f.DomainName(a.Domain), f.DomainName(d))
}

// kueueTAS is a reference for the floor of the largest-block rule: the
// tightest-fit choice of Kueue's topology-aware scheduling for one pod
// set of whole-GPU pods. At the first level (from the preferred one up)
// where one domain holds the gang, it takes the domain with the least
// capacity, counted in pods, that holds it; going down, while no child
// holds what remains the child with the most capacity takes all it can,
// then the tightest child that holds the rest takes it; on a leaf's
// nodes the tightest hosts fill first (hostsMost: the nodes with the
// most capacity first, then the tightest that holds the rest, Kueue's
// order at every level). Domains equally tight, which Kueue orders by
// name, go as fleet's best fit orders them (fewer free GPUs for gangs
// that are not whole-node, then the lower ID; the generated names sort
// as the IDs), so that the comparison is between the rules, not between
// tie-breaks.
type kueueTAS struct {
	f         *topology.Fleet
	g         topology.GroupID
	k, count  int
	hostsMost bool
}

func (r kueueTAS) nodeCap(n topology.NodeID) int {
	if r.f.Health(n) != topology.Healthy || r.f.NodeGroup(n) != r.g {
		return 0
	}
	return r.f.Free(n) / r.k
}

func (r kueueTAS) capOf(d topology.DomainID) int {
	lo, hi := r.f.Nodes(d)
	c := 0
	for n := lo; n < hi; n++ {
		c += r.nodeCap(n)
	}
	return c
}

// place returns the level the gang goes to and its GPUs by node, or
// false when no domain of the levels from pref up to req holds it.
func (r kueueTAS) place(req, pref topology.Level) (topology.Level, map[topology.NodeID]int, bool) {
	f := r.f
	whole := r.k == f.MaxGPUsPerNode()
	for l := pref; l >= req; l-- {
		lo, hi := f.DomainsAt(l)
		best, bestCap, bestFree := topology.DomainID(-1), 0, 0
		for d := lo; d < hi; d++ {
			c, free := r.capOf(d), f.FreeGPUs(d, r.g)
			if whole {
				free = 0
			}
			if c >= r.count && (best < 0 || c < bestCap || c == bestCap && free < bestFree) {
				best, bestCap, bestFree = d, c, free
			}
		}
		if best >= 0 {
			out := map[topology.NodeID]int{}
			r.fill(best, r.count, out)
			return l, out, true
		}
	}
	return 0, nil, false
}

func (r kueueTAS) fill(d topology.DomainID, need int, out map[topology.NodeID]int) {
	f := r.f
	if f.DomainLevel(d) == topology.Level(f.Depth()) {
		out[topology.NodeID(d-f.NodeDomain(0))] += need * r.k
		return
	}
	type child struct {
		d   topology.DomainID
		cap int
	}
	var cs []child
	lo, hi := f.Children(d)
	for c := lo; c < hi; c++ {
		if x := r.capOf(c); x > 0 {
			cs = append(cs, child{c, x})
		}
	}
	hosts := f.DomainLevel(lo) == topology.Level(f.Depth())
	if hosts && !r.hostsMost {
		slices.SortStableFunc(cs, func(a, b child) int { return cmp.Compare(a.cap, b.cap) })
		for _, c := range cs {
			t := min(c.cap, need)
			r.fill(c.d, t, out)
			if need -= t; need == 0 {
				return
			}
		}
		panic("kueueTAS: capacity")
	}
	slices.SortStableFunc(cs, func(a, b child) int { return cmp.Compare(b.cap, a.cap) })
	for i, c := range cs {
		if c.cap >= need {
			fit := c
			for _, e := range cs[i:] {
				if e.cap >= need && e.cap < fit.cap {
					fit = e
				}
			}
			r.fill(fit.d, need, out)
			return
		}
		r.fill(c.d, c.cap, out)
		need -= c.cap
	}
	panic("kueueTAS: capacity")
}

// genBlockFleet is a fleet of one group, 2 or 3 levels of up to 4
// domains each and nodes of 4 or 8 GPUs, some partly used and some not
// healthy.
func genBlockFleet(t *rapid.T) *topology.Fleet {
	depth := rapid.IntRange(2, 3).Draw(t, "depth")
	levels := []string{"spine", "leaf", "node"}[3-depth:]
	fan := make([]int, depth)
	for i := range fan {
		fan[i] = rapid.IntRange(1, 4).Draw(t, "fanout")
	}
	gpus := rapid.SampledFrom([]int{4, 8}).Draw(t, "gpusPerNode")
	f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: levels, Fanout: fan, GPUsPerNode: gpus, Flavor: "H100"}))
	require.NoError(t, err)
	for n := range topology.NodeID(f.NumNodes()) {
		if used := rapid.IntRange(-gpus, gpus).Draw(t, "used"); used > 0 {
			require.NoError(t, f.Allocate(n, used))
		}
		if rapid.IntRange(0, 15).Draw(t, "sick") == 0 {
			require.NoError(t, f.SetHealth(n, topology.Cordoned))
		}
	}
	return f
}

// TestPropertyKeepsBlocksAtLeastAsLargeAsKueue: on random small fleets,
// after Place the largest free block at each level above the one the
// gang goes to is at least the one Kueue's tightest-fit rule leaves
// (kueueTAS, with either order of a leaf's hosts), and Place goes to the
// same level.
func TestPropertyKeepsBlocksAtLeastAsLargeAsKueue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genBlockFleet(t)
		k := rapid.SampledFrom([]int{1, 2, 3, 4, 8}).Draw(t, "k")
		if k > f.MaxGPUsPerNode() {
			k = f.MaxGPUsPerNode()
		}
		w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: rapid.IntRange(1, 16).Draw(t, "count"), GPUsPerPod: k}}}
		lv := f.Levels()
		req, pref := topology.Level(0), topology.Level(f.Depth())
		if r := rapid.IntRange(-1, len(lv)-1).Draw(t, "req"); r >= 0 {
			req = topology.Level(r + 1)
			w.Topology.Required = lv[r]
		}
		if p := rapid.IntRange(int(req)-1, len(lv)-1).Draw(t, "pref"); p >= 0 {
			pref = topology.Level(p + 1)
			w.Topology.Preferred = lv[p]
		}
		a, err := placement.Place(f, w, placement.Options{})
		for _, most := range []bool{false, true} {
			ref := kueueTAS{f: f, g: 0, k: k, count: w.PodSets[0].Count, hostsMost: most}
			l, gpus, ok := ref.place(req, pref)
			require.Equal(t, ok, err == nil, "feasibility: Kueue %v, fleet %v", ok, err)
			if !ok {
				return
			}
			require.Equal(t, l, a.Level, "level")
			got := blocksAfter(t, f, a.Group, l, gpusOf(a))
			want := blocksAfter(t, f, 0, l, gpus)
			for j := range got {
				require.GreaterOrEqual(t, got[j], want[j], "largest free block at level %d (hosts most first: %v)", j, most)
			}
		}
	})
}

// TestPropertyKeepsEveryBlockWhenItCan: when some domain of the level
// the gang goes to holds it, takes no more free nodes than Place's choice
// and shrinks no block above that level (the fleet aside), Place shrinks
// none either. Checked where the search reads every candidate with its
// free nodes known: whole-node gangs, and one-node gangs on fleets of up
// to 64 nodes.
func TestPropertyKeepsEveryBlockWhenItCan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genBlockFleet(t)
		gpus := f.MaxGPUsPerNode()
		k := rapid.SampledFrom([]int{1, 2, 3, gpus}).Draw(t, "k")
		w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: rapid.IntRange(1, 8).Draw(t, "count"), GPUsPerPod: k}}}
		if lv := f.Levels(); rapid.Bool().Draw(t, "leaf") {
			w.Topology.Preferred = lv[len(lv)-2]
		}
		a, err := placement.Place(f, w, placement.Options{})
		if err != nil || a.Level < 2 || k != gpus && a.Level != topology.Level(f.Depth()) {
			return
		}
		now := blocksAfter(t, f, a.Group, a.Level, nil)
		got := blocksAfter(t, f, a.Group, a.Level, gpusOf(a))
		lo, hi := f.DomainsAt(a.Level)
		for d := lo; d < hi; d++ {
			b, err := placement.NewPlacer(placement.Options{}).PlaceWithin(f, w, d)
			if err != nil || b.Level != a.Level {
				continue
			}
			if after := blocksAfter(t, f, b.Group, a.Level, gpusOf(b)); after[0] >= got[0] && slices.Equal(after[1:], now[1:]) {
				require.Equal(t, now[1:], got[1:], "%s shrinks a block that %s keeps", f.DomainName(a.Domain), f.DomainName(d))
			}
		}
	})
}

// blockFleet is 2 spines x 2 leaves x 4 nodes of 8 GPUs, with used GPUs
// per node name.
func blockFleet(t *testing.T, used map[string]int) *topology.Fleet {
	f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: []string{"spine", "leaf", "node"},
		Fanout: []int{2, 2, 4}, GPUsPerNode: 8, Flavor: "H100"}))
	require.NoError(t, err)
	alloc(t, f, used)
	return f
}

// A gang goes where it leaves the larger free block above its level
// when best fit alone would take the free nodes of the largest one.
func TestPlaceKeepsTheLargestBlockFree(t *testing.T) {
	// Spine 0 has 5 free nodes (1 in leaf 0-0, 4 in leaf 0-1), spine 1
	// has 8.
	used := map[string]int{"node-0-0-1": 8, "node-0-0-2": 8, "node-0-0-3": 8}
	// Spine 0 has every node free, spine 1 has 4 free nodes (leaf 1-1).
	spine1Busy := map[string]int{"node-1-0-0": 8, "node-1-0-1": 8, "node-1-0-2": 8, "node-1-0-3": 8}
	for _, tc := range []struct {
		name   string
		used   map[string]int
		w      *gang.Workload
		domain string
	}{
		{
			// Leaves 0-1, 1-0 and 1-1 tie with 4 free nodes; the lowest
			// is not in the largest spine: best fit stands.
			name: "whole nodes, best fit outside the largest block", used: used,
			w: work("w", 4, 8, "leaf", "leaf"), domain: "leaf-0-1",
		},
		{
			// Leaf 0-0 (3 free nodes) is the tightest, in spine 0, the
			// largest block (7 free nodes against 4): it would fall to
			// 4; leaf 1-0 (4 free) leaves it at 7.
			name: "whole nodes, moved out of the largest spine",
			used: map[string]int{"node-0-0-3": 8, "node-1-1-0": 8, "node-1-1-1": 8, "node-1-1-2": 8, "node-1-1-3": 8},
			w:    work("w", 3, 8, "leaf", "leaf"), domain: "leaf-1-0",
		},
		{
			// node-0-0-0 is the first free node and spine 0 is not the
			// largest block.
			name: "one whole node outside the largest block", used: used,
			w: work("w", 1, 8, "", ""), domain: "node-0-0-0",
		},
		{
			// node-0-0-0 comes first but would shrink spine 0, the
			// largest block (8 free nodes against 4).
			name: "one whole node, moved out of the largest spine", used: spine1Busy,
			w: work("w", 1, 8, "", ""), domain: "node-1-1-0",
		},
		{
			// Three 4-GPU pods take two free nodes of any leaf that
			// holds them; leaves 0-0 and 0-1 tie with leaf 1-1 (8 pods
			// each), and the lowest, in spine 0, would shrink it from 8
			// to 6: leaf 1-1 leaves it whole.
			name: "sub-node pods, moved out of the largest spine", used: spine1Busy,
			w: work("w", 3, 4, "leaf", "leaf"), domain: "leaf-1-1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := blockFleet(t, tc.used)
			a, err := placement.Place(f, tc.w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.domain, f.DomainName(a.Domain))
			checkValid(t, f, tc.w, a)
		})
	}
}

// A domain whose floor on the free nodes it takes already loses more
// than the best fit is passed over untried, so that the bounded trials
// are left for domains that may do better. Four 4-GPU pods need a leaf;
// leaf 0-0, the best fit, holds two of them on half-used nodes and takes
// one free node of spine 0, the largest block. The next leaves of spine
// 0 in best-fit order have two free nodes and one used node: they would
// take two free nodes. Leaf 1-0 is as leaf 0-0 and leaves spine 0 whole;
// with as many such leaves before it as the trial bound (8), it is
// still found. Every other node is used.
func TestBlockSearchSpendsNoTrialOnDomainsThatTakeMoreFreeNodes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		takeTwo int // leaves of spine 0 with two free nodes, after leaf 0-0
		want    string
	}{
		{"one leaf that takes two free nodes", 1, "leaf-1-0"},
		{"as many as the trial bound", 8, "leaf-1-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: []string{"spine", "leaf", "node"},
				Fanout: []int{2, 9, 3}, GPUsPerNode: 8, Flavor: "H100"}))
			require.NoError(t, err)
			used := map[string]int{}
			for s := range 2 {
				for l := range 9 {
					switch {
					case l == 0:
						// Two half-used nodes and a free one.
						used[fmt.Sprintf("node-%d-0-0", s)] = 4
						used[fmt.Sprintf("node-%d-0-1", s)] = 4
					case s == 0 && l <= tc.takeTwo:
						used[fmt.Sprintf("node-0-%d-2", l)] = 8
					default:
						for n := range 3 {
							used[fmt.Sprintf("node-%d-%d-%d", s, l, n)] = 8
						}
					}
				}
			}
			alloc(t, f, used)
			w := work("w", 4, 4, "leaf", "leaf")
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.DomainName(a.Domain))
			checkValid(t, f, w, a)
		})
	}
}

// A move must keep the largest block of every level above the gang's,
// not only of the levels where the best fit shrinks it. Two whole nodes
// need a leaf of 2 zones x 2 spines x 2 leaves x 4 nodes; leaf 0-0-0,
// the best fit (2 free nodes), lies in spine 0-0, the largest spine (6
// free nodes against 4). Leaf 1-0-0 (2 free) leaves that spine whole,
// but when zone 1 is the largest zone (7 free nodes against 6) it
// shrinks zone 1 instead, and the best fit stands; when zone 1 is the
// smaller (5), the gang moves there.
func TestMoveKeepsTheLargestBlockOfEveryLevelAbove(t *testing.T) {
	for _, tc := range []struct {
		name string
		last int // free nodes of leaf 1-1-1
		want string
	}{
		{"zone 1 the largest: best fit stands", 2, "leaf-0-0-0"},
		{"zone 0 the largest: moved to zone 1", 0, "leaf-1-0-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: []string{"zone", "spine", "leaf", "node"},
				Fanout: []int{2, 2, 2, 4}, GPUsPerNode: 8, Flavor: "H100"}))
			require.NoError(t, err)
			free := map[string]int{"leaf-0-0-0": 2, "leaf-0-0-1": 4, "leaf-1-0-0": 2, "leaf-1-0-1": 1, "leaf-1-1-0": 2, "leaf-1-1-1": tc.last}
			used := map[string]int{}
			for z := range 2 {
				for s := range 2 {
					for l := range 2 {
						for n := free[fmt.Sprintf("leaf-%d-%d-%d", z, s, l)]; n < 4; n++ {
							used[fmt.Sprintf("node-%d-%d-%d-%d", z, s, l, n)] = 8
						}
					}
				}
			}
			alloc(t, f, used)
			w := work("w", 2, 8, "leaf", "leaf")
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.DomainName(a.Domain))
			checkValid(t, f, w, a)
		})
	}
}

// A one-node gang reads at most maxBlockVisits (64) nodes in best-fit
// order, but skips runs of fully free nodes under the block no better
// than the one it read last: past spine 0's 70 free nodes, the largest
// block, it still finds spine 1's and leaves spine 0 whole.
func TestOneNodeGangSkipsARunOfFreeNodesLongerThanTheVisitBound(t *testing.T) {
	f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: []string{"spine", "leaf", "node"},
		Fanout: []int{2, 1, 70}, GPUsPerNode: 8, Flavor: "H100"}))
	require.NoError(t, err)
	used := map[string]int{}
	for n := 4; n < 70; n++ {
		used[fmt.Sprintf("node-1-0-%d", n)] = 8
	}
	alloc(t, f, used)
	w := work("w", 1, 8, "", "")
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "node-1-0-0", f.DomainName(a.Domain))
	checkValid(t, f, w, a)
}

// Only runs of fully free nodes of the largest size are skipped: among
// nodes as free, a smaller fully free node under the block does not hide
// a partly used one after it. Spine 0 is the largest block (3 free nodes
// against 1); a 4-GPU pod's best fit is node-0-0-0, a free 4-GPU node,
// then node-0-0-1, another, then node-0-0-2, an 8-GPU node with 4 used,
// which takes no free node: the pod goes there.
func TestOneNodeGangFindsAPartlyUsedNodeAfterSmallFreeOnes(t *testing.T) {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"spine", "leaf", "node"},
		Fanout: []int{2, 1, 4}, GPUsPerNode: 8, Flavor: "H100"})
	spec.Nodes[0].GPUs, spec.Nodes[1].GPUs = 4, 4
	f, err := topology.New(spec)
	require.NoError(t, err)
	alloc(t, f, map[string]int{"node-0-0-2": 4, "node-1-0-1": 8, "node-1-0-2": 8, "node-1-0-3": 8})
	w := work("w", 1, 4, "", "")
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "node-0-0-2", f.DomainName(a.Domain))
	checkValid(t, f, w, a)
}

// The block search goes on past a move that still shrinks a block above
// the fleet: 16-GPU gangs of 4-GPU pods on leaves of three 8-GPU nodes,
// spine 0 holding the largest free block (three free nodes, two more than
// spine 1). The best fit, leaf 0-0 (two free nodes), takes two of its
// nodes; leaf 0-1 (6, 6 and 8 free) only one; leaf 1-0 (7, 7 and 8 free)
// one of spine 1's, leaving spine 0's block whole. The gang goes to leaf
// 1-0, not to the first move that does better than the best fit.
func TestBlockSearchGoesOnPastAMoveThatStillShrinksABlock(t *testing.T) {
	f := fleet(t, 2, 3, 3)
	alloc(t, f, map[string]int{
		"node-0-0-0": 8,
		"node-0-1-0": 2, "node-0-1-1": 2,
		"node-0-2-0": 8, "node-0-2-1": 8, "node-0-2-2": 8,
		"node-1-0-0": 1, "node-1-0-1": 1,
		"node-1-1-0": 8, "node-1-1-1": 8, "node-1-1-2": 8,
		"node-1-2-0": 8, "node-1-2-1": 8, "node-1-2-2": 8,
	})
	w := work("w", 4, 4, "leaf", "")
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-1-0-0=4", "node-1-0-1=4", "node-1-0-2=8"}, nodesOf(f, a))
	checkValid(t, f, w, a)
}
