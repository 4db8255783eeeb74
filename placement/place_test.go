package placement_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

func fleet(t testing.TB, spines, leaves, nodes int) *topology.Fleet {
	f, err := topology.New(topology.Uniform(topology.UniformSpec{
		Levels: []string{"spine", "leaf", "node"}, Fanout: []int{spines, leaves, nodes}, GPUsPerNode: 8, Flavor: "H100"}))
	require.NoError(t, err)
	return f
}

func node(t testing.TB, f *topology.Fleet, name string) topology.NodeID {
	n, ok := f.Node(name)
	require.True(t, ok, name)
	return n
}

func alloc(t testing.TB, f *topology.Fleet, m map[string]int) {
	for name, g := range m {
		require.NoError(t, f.Allocate(node(t, f, name), g))
	}
}

func work(id string, count, gpus int, req, pref string) *gang.Workload {
	return &gang.Workload{ID: id, Queue: "q", Shape: gang.Training,
		PodSets:  []gang.PodSet{{Name: "w", Count: count, GPUsPerPod: gpus}},
		Topology: gang.TopologyRequest{Required: req, Preferred: pref}}
}

// nodesOf lists pod -> node names, e.g. "node-0-0-1=8".
func nodesOf(f *topology.Fleet, a placement.Assignment) []string {
	var out []string
	for _, ng := range a.NodeGPUs() {
		out = append(out, fmt.Sprintf("%s=%d", f.NodeName(ng.Node), ng.GPUs))
	}
	return out
}

func TestPlacePolicy(t *testing.T) {
	tests := []struct {
		name   string
		fleet  [3]int
		setup  map[string]int
		health map[string]topology.Health
		w      *gang.Workload
		domain string
		span   string
		nodes  []string
	}{
		{
			name:  "sub-node pod prefers a partly used node over a free one",
			fleet: [3]int{1, 2, 2}, setup: map[string]int{"node-0-1-1": 6, "node-0-0-0": 3},
			w: work("r", 1, 2, "", ""), domain: "node-0-1-1", span: "node", nodes: []string{"node-0-1-1=2"},
		},
		{
			name:  "best fit among partly used nodes",
			fleet: [3]int{1, 2, 2}, setup: map[string]int{"node-0-1-1": 4, "node-0-0-0": 5},
			w: work("r", 1, 3, "", ""), domain: "node-0-0-0", span: "node", nodes: []string{"node-0-0-0=3"},
		},
		{
			name:  "whole-node gang takes the best-fitting leaf",
			fleet: [3]int{1, 3, 4}, setup: map[string]int{"node-0-0-0": 1, "node-0-2-0": 8, "node-0-2-1": 8},
			w: work("g", 2, 8, "leaf", "leaf"), domain: "leaf-0-2", span: "leaf", nodes: []string{"node-0-2-2=8", "node-0-2-3=8"},
		},
		{
			name:  "lowest span first: preferred leaf, falls back to spine",
			fleet: [3]int{2, 2, 2}, setup: map[string]int{"node-0-0-0": 8, "node-0-1-0": 8, "node-1-0-0": 1},
			w: work("g", 2, 8, "spine", "leaf"), domain: "leaf-1-1", span: "leaf", nodes: []string{"node-1-1-0=8", "node-1-1-1=8"},
		},
		{
			name:  "a 6-node gang that fits only across two leaves of one spine",
			fleet: [3]int{2, 2, 4}, setup: map[string]int{"node-0-0-0": 8, "node-1-0-0": 1, "node-1-1-0": 1, "node-1-1-1": 1},
			w: work("g", 6, 8, "spine", "leaf"), domain: "spine-0", span: "spine",
			nodes: []string{"node-0-0-1=8", "node-0-0-2=8", "node-0-1-0=8", "node-0-1-1=8", "node-0-1-2=8", "node-0-1-3=8"},
		},
		{
			name:  "fewest child domains: 8 nodes take two whole leaves, not three partial ones",
			fleet: [3]int{1, 3, 4}, setup: map[string]int{"node-0-1-0": 8},
			w: work("g", 8, 8, "spine", ""), domain: "spine-0", span: "spine",
			nodes: []string{"node-0-0-0=8", "node-0-0-1=8", "node-0-0-2=8", "node-0-0-3=8", "node-0-2-0=8", "node-0-2-1=8", "node-0-2-2=8", "node-0-2-3=8"},
		},
		{
			name:  "cordoned and down nodes are never chosen",
			fleet: [3]int{1, 1, 3}, health: map[string]topology.Health{"node-0-0-0": topology.Cordoned, "node-0-0-1": topology.Down},
			w: work("g", 1, 8, "", ""), domain: "node-0-0-2", span: "node", nodes: []string{"node-0-0-2=8"},
		},
		{
			name:  "sub-node gang bin-packs within a leaf",
			fleet: [3]int{1, 2, 4}, setup: map[string]int{"node-0-1-0": 7, "node-0-1-1": 6, "node-0-1-2": 5},
			w: work("g", 6, 1, "leaf", "leaf"), domain: "leaf-0-1", span: "leaf",
			nodes: []string{"node-0-1-0=1", "node-0-1-1=2", "node-0-1-2=3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fleet(t, tt.fleet[0], tt.fleet[1], tt.fleet[2])
			alloc(t, f, tt.setup)
			for n, h := range tt.health {
				require.NoError(t, f.SetHealth(node(t, f, n), h))
			}
			before := f.String()
			a, err := placement.Place(f, tt.w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, before, f.String(), "Place must not change the fleet")
			assert.Equal(t, tt.domain, f.DomainName(a.Domain))
			assert.Equal(t, tt.span, f.LevelName(a.Span))
			assert.Equal(t, tt.nodes, nodesOf(f, a))
			require.NoError(t, placement.Apply(f, a))
			require.NoError(t, placement.Unapply(f, a))
			assert.Equal(t, before, f.String())
		})
	}
}

func TestPlaceSegmentsMixedPodSetsPoolsSpread(t *testing.T) {
	t.Run("segments of 4 nodes, each inside one leaf", func(t *testing.T) {
		f := fleet(t, 1, 4, 4)
		// Every leaf has 3 free nodes except leaf 3: only leaf 3 can host a segment
		// on its own, so 8 nodes cannot fit in two segments... give two leaves room.
		alloc(t, f, map[string]int{"node-0-0-0": 1, "node-0-1-0": 1})
		w := work("g", 8, 8, "spine", "")
		w.Topology.Segment = gang.Segment{Size: 4, Level: "leaf"}
		a, err := placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		for s := range 2 {
			leaf := f.DomainOf(a.Pods[s*4].Node, 2)
			for _, p := range a.Pods[s*4 : s*4+4] {
				assert.Equal(t, leaf, f.DomainOf(p.Node, 2), "segment %d crosses leaves", s)
			}
		}
		assert.Equal(t, []string{"leaf-0-2", "leaf-0-3"}, []string{f.DomainName(f.DomainOf(a.Pods[0].Node, 2)), f.DomainName(f.DomainOf(a.Pods[4].Node, 2))})
		// Without room for whole segments, it does not fit even though 14 nodes are free.
		alloc(t, f, map[string]int{"node-0-2-0": 1, "node-0-3-0": 1})
		_, err = placement.Place(f, w, placement.Options{})
		var nf *placement.NoFit
		require.ErrorAs(t, err, &nf)
		assert.Equal(t, placement.CauseFragmented, nf.Cause)
	})
	t.Run("mixed pod sets are placed together", func(t *testing.T) {
		f := fleet(t, 1, 2, 2)
		alloc(t, f, map[string]int{"node-0-0-0": 8})
		w := &gang.Workload{ID: "mix", Queue: "q", Shape: gang.Training, PodSets: []gang.PodSet{
			{Name: "launcher", Count: 1, GPUsPerPod: 1}, {Name: "workers", Count: 2, GPUsPerPod: 8}},
			Topology: gang.TopologyRequest{Required: "spine"}}
		a, err := placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		assert.Equal(t, 17, a.GPUs())
		assert.Equal(t, []string{"node-0-0-1=1", "node-0-1-0=8", "node-0-1-1=8"}, nodesOf(f, a))
		assert.Equal(t, 0, a.Pods[2].PodSet, "launcher placed after the larger workers")
	})
	t.Run("pools in order of preference, flavor filters", func(t *testing.T) {
		s := topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{2, 2}, GPUsPerNode: 8, Flavor: "H100"})
		s.Nodes[0].Pool, s.Nodes[1].Pool = "inference", "inference"
		s.Nodes[3].Flavor = "H200"
		f, err := topology.New(s)
		require.NoError(t, err)
		w := work("r", 1, 8, "", "")
		w.Pools = []string{"training", "inference"}
		a, err := placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		assert.Equal(t, []string{"node-0-0=8"}, nodesOf(f, a), "no training pool: falls back to inference")
		w.Pools = []string{"", "inference"}
		a, err = placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		assert.Equal(t, []string{"node-1-0=8"}, nodesOf(f, a))
		w.Flavor = "H200"
		a, err = placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		assert.Equal(t, []string{"node-1-1=8"}, nodesOf(f, a))
		w.Flavor = "B200"
		_, err = placement.Place(f, w, placement.Options{})
		var nf *placement.NoFit
		require.ErrorAs(t, err, &nf)
		assert.Equal(t, placement.CauseNoNodes, nf.Cause)
	})
	t.Run("spread caps pods per node and per leaf", func(t *testing.T) {
		f := fleet(t, 1, 2, 2)
		w := work("svc", 4, 1, "", "")
		w.Spread = gang.Spread{MaxPerNode: 1}
		a, err := placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		assert.Len(t, nodesOf(f, a), 4)
		w.Spread = gang.Spread{MaxPerDomain: 2, Level: "leaf"}
		a, err = placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		assert.Equal(t, placement.Assignment{}.Span, topology.Level(0))
		assert.Equal(t, "spine", f.LevelName(a.Span))
		w.Spread = gang.Spread{MaxPerNode: 1}
		w.PodSets[0].Count = 5
		_, err = placement.Place(f, w, placement.Options{})
		assert.ErrorIs(t, err, placement.ErrNoFit)
	})
}

func TestNoFitExplains(t *testing.T) {
	f := fleet(t, 2, 2, 4)
	// Every node has 1 GPU used: 56 GPUs free, no whole node anywhere.
	for n := range topology.NodeID(f.NumNodes()) {
		require.NoError(t, f.Allocate(n, 1))
	}
	_, err := placement.Place(f, work("g", 4, 8, "spine", "leaf"), placement.Options{Explain: true})
	var nf *placement.NoFit
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, placement.CauseFragmented, nf.Cause)
	assert.Equal(t, 112, nf.FreeGPUs)
	assert.Equal(t, []placement.LevelTry{{Level: "leaf", Largest: 0, Domain: "leaf-0-0"}, {Level: "spine", Largest: 0, Domain: "spine-0"}}, nf.Tried)
	assert.Contains(t, err.Error(), "112 free but not together within one spine")

	_, err = placement.Place(f, work("big", 16, 8, "", ""), placement.Options{})
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, placement.CauseCapacity, nf.Cause)
	assert.Contains(t, err.Error(), "short 16")

	_, err = placement.Place(f, work("x", 1, 8, "rack", ""), placement.Options{})
	assert.ErrorIs(t, err, placement.ErrInvalid)
	_, err = placement.Place(f, work("x", 1, 16, "", ""), placement.Options{})
	assert.ErrorIs(t, err, placement.ErrInvalid)
}

// TestTerseFailsWithoutExplaining: a Terse Placer that finds no room
// says only ErrNoFit, and places what fits as any Placer does; a request
// the fleet can never meet is still explained.
func TestTerseFailsWithoutExplaining(t *testing.T) {
	f := fleet(t, 2, 2, 4)
	for n := range topology.NodeID(f.NumNodes()) {
		require.NoError(t, f.Allocate(n, 1))
	}
	terse := placement.NewPlacer(placement.Options{Terse: true})
	for _, w := range []*gang.Workload{work("g", 4, 8, "spine", "leaf"), work("big", 16, 8, "", "")} {
		_, err := terse.Place(f, w)
		require.ErrorIs(t, err, placement.ErrNoFit)
		var nf *placement.NoFit
		assert.False(t, errors.As(err, &nf), "no NoFit for %s", w.ID)
	}
	w := work("small", 4, 4, "leaf", "")
	a, err := terse.Place(f, w)
	require.NoError(t, err)
	b, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, b.Clone(), a.Clone())

	_, err = terse.Place(f, work("x", 1, 8, "rack", ""))
	var nf *placement.NoFit
	require.ErrorAs(t, err, &nf)
	assert.ErrorIs(t, err, placement.ErrInvalid)
}

type preferNode string

func (p preferNode) Score(f *topology.Fleet, _ *gang.Workload, n topology.NodeID) int {
	if f.NodeName(n) == string(p) {
		return 1
	}
	return 0
}

func TestScorerBreaksTies(t *testing.T) {
	f := fleet(t, 1, 2, 4)
	a, err := placement.Place(f, work("r", 1, 8, "", ""), placement.Options{Scorer: preferNode("node-0-0-3")})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-3=8"}, nodesOf(f, a))
	// A scorer never overrides best fit: a partly used node still wins.
	alloc(t, f, map[string]int{"node-0-1-2": 4})
	a, err = placement.Place(f, work("r", 1, 2, "", ""), placement.Options{Scorer: preferNode("node-0-0-3")})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-1-2=2"}, nodesOf(f, a))
}

func TestApplyIsAllOrNothing(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	a := placement.Assignment{Pods: []placement.Pod{{Node: 0, GPUs: 8}, {Node: 1, GPUs: 4}, {Node: 1, GPUs: 5}}}
	before := f.String()
	err := placement.Apply(f, a)
	assert.ErrorIs(t, err, topology.ErrOverAlloc)
	assert.Equal(t, before, f.String())
	assert.ErrorIs(t, placement.Apply(f, placement.Assignment{Pods: []placement.Pod{{Node: 7, GPUs: 1}}}), topology.ErrUnknownNode)
	assert.ErrorIs(t, placement.Unapply(f, placement.Assignment{Pods: []placement.Pod{{Node: 0, GPUs: 1}}}), topology.ErrOverRelease)
	assert.True(t, errors.Is(placement.Apply(f, placement.Assignment{Pods: []placement.Pod{{Node: 0, GPUs: 0}}}), topology.ErrBadAmount))
	assert.Equal(t, before, f.String())
}

// Inside a domain, a gang's pods take the nodes with the fewest free
// GPUs first and, among nodes as free, the lowest IDs, however many
// nodes the domain has: three 4-GPU pods in a leaf whose even nodes are
// half used take the first three of them.
func TestPodsTakeTheLowestOfEquallyFreeNodes(t *testing.T) {
	for _, nodes := range []int{8, 16, 40} {
		t.Run(fmt.Sprintf("%d nodes", nodes), func(t *testing.T) {
			f := fleet(t, 1, 1, nodes)
			used := map[string]int{}
			for n := 0; n < nodes; n += 2 {
				used[fmt.Sprintf("node-0-0-%d", n)] = 4
			}
			alloc(t, f, used)
			w := work("w", 3, 4, "leaf", "")
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, []string{"node-0-0-0=4", "node-0-0-2=4", "node-0-0-4=4"}, nodesOf(f, a))
			checkValid(t, f, w, a)
		})
	}
}

// Inside a domain, the Scorer sees for each pod of a gang the first
// MaxScored of the equally free nodes left, no more. Two whole-node pods
// in a leaf of ten free nodes: the first pod's scorer sees nodes 0 to
// MaxScored-1 and, none preferred, takes node 0; the second's sees nodes
// 1 to MaxScored, and takes the preferred node only if it is among them.
func TestGangScorerSeesMaxScoredEquallyFreeNodesPerPod(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxScored int
		prefer    string
		want      []string
	}{
		{"default bound: the ninth node is seen by the second pod", 0, "node-0-0-8", []string{"node-0-0-0=8", "node-0-0-8=8"}},
		{"default bound: the tenth node is not seen", 0, "node-0-0-9", []string{"node-0-0-0=8", "node-0-0-1=8"}},
		{"a bound of 3: the fourth node is seen by the second pod", 3, "node-0-0-3", []string{"node-0-0-0=8", "node-0-0-3=8"}},
		{"a bound of 3: the fifth node is not seen", 3, "node-0-0-4", []string{"node-0-0-0=8", "node-0-0-1=8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fleet(t, 1, 1, 10)
			w := work("w", 2, 8, "leaf", "")
			a, err := placement.Place(f, w, placement.Options{Scorer: preferNode(tc.prefer), MaxScored: tc.maxScored})
			require.NoError(t, err)
			assert.Equal(t, tc.want, nodesOf(f, a))
			checkValid(t, f, w, a)
		})
	}
}

// A NoFit lists every level tried, however many lie between the required
// and the preferred level: seven on a fleet of eight levels above its
// nodes (one NoFit holds six without allocating, and more grow it).
func TestNoFitListsMoreThanSixLevelsTried(t *testing.T) {
	levels := []string{"l1", "l2", "l3", "l4", "l5", "l6", "l7", "node"}
	f, err := topology.New(topology.Uniform(topology.UniformSpec{
		Levels: levels, Fanout: []int{2, 1, 1, 1, 1, 1, 1, 1}, GPUsPerNode: 8, Flavor: "H100"}))
	require.NoError(t, err)
	_, err = placement.Place(f, work("g", 2, 8, "l1", "l7"), placement.Options{})
	var nf *placement.NoFit
	require.ErrorAs(t, err, &nf)
	var tried []string
	for _, lt := range nf.Tried {
		tried = append(tried, lt.Level)
	}
	assert.Equal(t, []string{"l7", "l6", "l5", "l4", "l3", "l2", "l1"}, tried)
}
