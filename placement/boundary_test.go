package placement_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Sub-node pods go to the tightest node that holds them (best fit), never
// the emptiest, and equal nodes break by ID: each case pins one side of a
// comparison.
func TestSubNodePodsTakeTheTightestNode(t *testing.T) {
	tests := []struct {
		name  string
		used  map[string]int
		gpus  int
		nodes []string
	}{
		{"tighter node over an empty one", map[string]int{"node-0-0-1": 5}, 3, []string{"node-0-0-1=3"}},
		{"tightest of two partly used", map[string]int{"node-0-0-0": 2, "node-0-0-1": 4}, 4, []string{"node-0-0-1=4"}},
		{"exact fit over a looser one", map[string]int{"node-0-0-0": 4, "node-0-0-1": 6}, 2, []string{"node-0-0-1=2"}},
		{"equal nodes: lowest ID", map[string]int{"node-0-0-0": 6, "node-0-0-1": 6}, 2, []string{"node-0-0-0=2"}},
		{"a node too full is skipped", map[string]int{"node-0-0-0": 7, "node-0-0-1": 5}, 2, []string{"node-0-0-1=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fleet(t, 1, 1, 2)
			alloc(t, f, tt.used)
			a, err := placement.Place(f, work("w", 1, tt.gpus, "", ""), placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.nodes, nodesOf(f, a))
		})
	}
}

// Whole-node gangs take the domain with the fewest free nodes that holds
// them, so big holes stay for big gangs; equal domains break by ID.
func TestWholeNodeGangsTakeTheTightestDomain(t *testing.T) {
	f := fleet(t, 1, 3, 4)
	alloc(t, f, map[string]int{"node-0-0-0": 8, "node-0-1-0": 8, "node-0-1-1": 8})
	a, err := placement.Place(f, work("g", 2, 8, "leaf", ""), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-1", f.DomainName(a.Domain), "2 free nodes beat 3 and 4")

	a, err = placement.Place(f, work("g", 3, 8, "leaf", ""), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-0", f.DomainName(a.Domain), "3 free nodes: the exact fit")

	alloc(t, f, map[string]int{"node-0-2-0": 8})
	a, err = placement.Place(f, work("g", 3, 8, "leaf", ""), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "leaf-0-0", f.DomainName(a.Domain), "two domains with 3 free nodes: lowest ID")
}

// freeLeaves sets the free GPUs of every node of fleet(1, len(free), 3):
// free[leaf][node].
func freeLeaves(t *testing.T, free [][3]int) *topology.Fleet {
	f := fleet(t, 1, len(free), 3)
	for l, nodes := range free {
		for i, g := range nodes {
			if g < 8 {
				require.NoError(t, f.Allocate(node(t, f, fmt.Sprintf("node-0-%d-%d", l, i)), 8-g))
			}
		}
	}
	return f
}

// Gangs of sub-node pods take the domain whose free GPUs hold the fewest
// pods of their size, then the one with the fewest free GPUs, then the
// lowest ID: leftovers smaller than a pod are waste, so a domain with
// more free GPUs may be the tighter fit.
func TestSubNodeGangsTakeTheDomainHoldingFewestPods(t *testing.T) {
	tests := []struct {
		name string
		free [][3]int
		w    *gang.Workload
		leaf string
	}{
		{"more free GPUs but fewer pods wins", [][3]int{{6, 3, 0}, {5, 5, 0}, {0, 0, 0}},
			work("w", 2, 3, "", "leaf"), "leaf-0-1"},
		{"equal pods: fewer free GPUs", [][3]int{{5, 5, 0}, {4, 4, 0}, {0, 0, 0}},
			work("w", 2, 3, "", "leaf"), "leaf-0-1"},
		{"equal pods and free GPUs: lowest ID", [][3]int{{5, 5, 0}, {5, 5, 0}, {0, 0, 0}},
			work("w", 2, 3, "", "leaf"), "leaf-0-0"},
		{"a later domain with as many pods keeps the best", [][3]int{{6, 3, 0}, {5, 5, 0}, {5, 5, 1}},
			work("w", 2, 3, "", "leaf"), "leaf-0-1"},
		{"a domain too small by pods is skipped", [][3]int{{5, 2, 0}, {6, 3, 0}, {0, 0, 0}},
			work("w", 2, 3, "", "leaf"), "leaf-0-1"},
		{"1-GPU pods: pods are GPUs", [][3]int{{6, 3, 0}, {5, 5, 0}, {0, 0, 0}},
			work("w", 9, 1, "", "leaf"), "leaf-0-0"},
		{"several pod sets count the largest pods", [][3]int{{6, 3, 1}, {5, 5, 1}, {0, 0, 0}},
			mixed(work("w", 2, 3, "", "leaf"), gang.PodSet{Name: "x", Count: 1, GPUsPerPod: 1}), "leaf-0-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := freeLeaves(t, tt.free)
			a, err := placement.Place(f, tt.w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.leaf, f.DomainName(a.Domain))
			checkValid(t, f, tt.w, a)
		})
	}
}

// The same rule one level up: a spine whose free GPUs hold fewer pods wins
// over one with fewer free GPUs, although the waste bound of a spine is
// larger than its lead in GPUs.
func TestSubNodeGangsTakeTheSpineHoldingFewestPods(t *testing.T) {
	f := fleet(t, 2, 2, 2)
	// spine-0: free 7, 7, 0, 0 (14 GPUs, 2 pods of 4); spine-1: free 4,
	// 4, 4, 0 (12 GPUs, 3 pods of 4).
	alloc(t, f, map[string]int{"node-0-0-0": 1, "node-0-0-1": 1, "node-0-1-0": 8, "node-0-1-1": 8,
		"node-1-0-0": 4, "node-1-0-1": 4, "node-1-1-0": 4, "node-1-1-1": 8})
	a, err := placement.Place(f, work("w", 2, 4, "spine", "spine"), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, "spine-0", f.DomainName(a.Domain))
}

// mixed adds pod set ps to w.
func mixed(w *gang.Workload, ps gang.PodSet) *gang.Workload {
	w.PodSets = append(w.PodSets, ps)
	return w
}

// A gang of sub-node pods inside a leaf fills its nodes best fit first:
// the fewest free GPUs that hold a pod, lowest ID on ties, as many pods
// per node as fit; never the emptiest node first.
func TestSubNodeGangFillsTheTightestNodesFirst(t *testing.T) {
	tests := []struct {
		name  string
		free  [3]int
		count int
		gpus  int
		nodes []string
	}{
		{"partly used nodes before the empty one", [3]int{8, 2, 4}, 3, 2, []string{"node-0-0-1=2", "node-0-0-2=4"}},
		{"equal nodes: lowest ID", [3]int{4, 4, 8}, 2, 2, []string{"node-0-0-0=4"}},
		{"a node below the pod size is skipped", [3]int{1, 8, 3}, 2, 2, []string{"node-0-0-1=2", "node-0-0-2=2"}},
		{"the tightest node takes all it holds", [3]int{6, 8, 7}, 3, 2, []string{"node-0-0-0=6"}},
		{"3-GPU pods: 5 free hold one, 6 hold two", [3]int{8, 5, 6}, 3, 3, []string{"node-0-0-1=3", "node-0-0-2=6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := freeLeaves(t, [][3]int{tt.free})
			a, err := placement.Place(f, work("w", tt.count, tt.gpus, "leaf", "leaf"), placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.nodes, nodesOf(f, a))
		})
	}
}

// The first and last domain IDs are in range for PlaceWithin and
// PlaceAvoiding: only IDs outside [0, NumDomains) are refused.
func TestPlaceDomainIDBoundaries(t *testing.T) {
	f := fleet(t, 1, 2, 2)
	p := placement.NewPlacer(placement.Options{})
	a, err := p.PlaceWithin(f, work("w", 1, 8, "", ""), topology.Root)
	require.NoError(t, err, "the fleet itself")
	assert.Equal(t, "node-0-0-0=8", nodesOf(f, a)[0])
	last := topology.DomainID(f.NumDomains() - 1)
	a, err = p.PlaceWithin(f, work("w", 1, 8, "", ""), last)
	require.NoError(t, err, "the last domain")
	assert.Equal(t, []string{"node-0-1-1=8"}, nodesOf(f, a))
	a, err = p.PlaceAvoiding(f, work("w", 1, 8, "", ""), last)
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=8"}, nodesOf(f, a))
	_, err = p.PlaceAvoiding(f, work("w", 1, 8, "", ""), topology.Root)
	assert.ErrorIs(t, err, placement.ErrNoFit, "avoiding the fleet leaves nothing")
}
