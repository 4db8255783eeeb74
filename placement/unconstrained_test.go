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

// unconstrained reports whether w names no required or preferred level
// and no segment: any nodes will do.
func unconstrained(w *gang.Workload) bool {
	return w.Topology.Required == "" && w.Topology.Preferred == "" && w.Topology.Segment.Size == 0
}

// kueueLoose models Kueue's rule for an unconstrained pod set of count
// pods of k GPUs in group g (its least-free-capacity profile): the one
// host that holds every pod with the fewest free GPUs if there is one,
// else hosts by free GPUs ascending, then by ID, each taking all the pods
// it holds. It returns the GPUs taken by node, or false when the hosts
// hold too few pods.
func kueueLoose(f *topology.Fleet, g topology.GroupID, k, count int) (map[topology.NodeID]int, bool) {
	var hosts []topology.NodeID
	for n := range topology.NodeID(f.NumNodes()) {
		if f.Health(n) == topology.Healthy && f.NodeGroup(n) == g && f.Free(n) >= k {
			hosts = append(hosts, n)
		}
	}
	slices.SortStableFunc(hosts, func(a, b topology.NodeID) int { return cmp.Compare(f.Free(a), f.Free(b)) })
	out := map[topology.NodeID]int{}
	for _, n := range hosts {
		if f.Free(n)/k >= count {
			out[n] = count * k
			return out, true
		}
	}
	for _, n := range hosts {
		c := min(f.Free(n)/k, count)
		out[n] = c * k
		if count -= c; count == 0 {
			return out, true
		}
	}
	return nil, false
}

// holesFleet is 2 blocks x 2 racks x 4 hosts of 8 GPUs. Block b0 is
// holes only: rack r00's hosts have 1, 1, 3 and 3 GPUs free, rack r01's
// 1, 1, 6 and none; block b1's rack r10 is fully free, r11 full.
func holesFleet(t *testing.T) *topology.Fleet {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"block", "rack", "host"},
		Fanout: []int{2, 2, 4}, GPUsPerNode: 8, Flavor: "H100"})
	f, err := topology.New(spec)
	require.NoError(t, err)
	used := []int{7, 7, 5, 5, 7, 7, 2, 8, 0, 0, 0, 0, 8, 8, 8, 8}
	for n, u := range used {
		if u > 0 {
			require.NoError(t, f.Allocate(topology.NodeID(n), u))
		}
	}
	return f
}

// podsByFree counts the pods taken from hosts by their free GPUs before
// the placement: "x1=4" is four pods on hosts that had 1 GPU free.
func podsByFree(f *topology.Fleet, gpus map[topology.NodeID]int, k int) []string {
	by := map[int]int{}
	for n, g := range gpus {
		by[f.Free(n)] += g / k
	}
	var out []string
	for _, free := range slices.Sorted(func(yield func(int) bool) {
		for x := range by {
			if !yield(x) {
				return
			}
		}
	}) {
		out = append(out, fmt.Sprintf("x%d=%d", free, by[free]))
	}
	return out
}

// TestUnconstrainedFillsHolesTightestFirst: an unconstrained gang that no
// host holds fills the holes of partly used hosts, those with the fewest
// free GPUs first, rather than opening a fully free rack; it opens fully
// free hosts only for the pods the holes do not hold, and then leaves the
// largest free block of every level at least as large as Kueue's rule.
func TestUnconstrainedFillsHolesTightestFirst(t *testing.T) {
	for _, c := range []struct {
		name       string
		count, k   int
		byFree     []string
		hosts      int
		blockBlock int // the largest free block of the block level after, in GPUs
	}{
		// 12 holes of one GPU pods: the four 1-free hosts, the two 3-free,
		// then 2 of the 6-free host's; rack r10 stays whole.
		{name: "12 pods of 1 GPU fill 7 hosts' holes", count: 12, k: 1,
			byFree: []string{"x1=4", "x3=6", "x6=2"}, hosts: 7, blockBlock: 32},
		// 18 pods: the holes hold 16, so two pods open one fully free host.
		{name: "18 pods of 1 GPU fill the holes, then one free host", count: 18, k: 1,
			byFree: []string{"x1=4", "x3=6", "x6=6", "x8=2"}, hosts: 8, blockBlock: 24},
		// Pods of 3 GPUs: the 1-free hosts hold none.
		{name: "4 pods of 3 GPUs skip holes too small", count: 4, k: 3,
			byFree: []string{"x3=2", "x6=2"}, hosts: 3, blockBlock: 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := holesFleet(t)
			w := work("w", c.count, c.k, "", "")
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			got := gpusOf(a)
			assert.Equal(t, c.byFree, podsByFree(f, got, c.k))
			assert.Len(t, got, c.hosts)
			checkValid(t, f, w, a)
			block, _ := f.Level("block")
			after := blocksAfter(t, f, 0, topology.Level(f.Depth()), got)
			assert.Equal(t, c.blockBlock, after[block]*f.MaxGPUsPerNode(), "largest free block of the block level")
			kueue, ok := kueueLoose(f, 0, c.k, c.count)
			require.True(t, ok)
			assert.Equal(t, kueue, got, "Kueue's rule takes the same hosts here")
		})
	}
}

// TestPropertyUnconstrainedKeepsKueuesBlocks: on random small fleets, an
// unconstrained gang is placed whenever Kueue's rule places it (and only
// then), and leaves the largest free block of every level, the fleet
// included, at least as large as Kueue's rule (kueueLoose) does.
func TestPropertyUnconstrainedKeepsKueuesBlocks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genBlockFleet(t)
		k := rapid.SampledFrom([]int{1, 2, 3, 4, 8}).Draw(t, "k")
		k = min(k, f.MaxGPUsPerNode())
		w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Training,
			PodSets: []gang.PodSet{{Name: "p", Count: rapid.IntRange(1, 24).Draw(t, "count"), GPUsPerPod: k}}}
		a, err := placement.Place(f, w, placement.Options{})
		want, ok := kueueLoose(f, 0, k, w.PodSets[0].Count)
		require.Equal(t, ok, err == nil, "feasibility: Kueue %v, fleet %v", ok, err)
		if !ok {
			return
		}
		checkValid(t, f, w, a)
		depth := topology.Level(f.Depth())
		got, ref := blocksAfter(t, f, a.Group, depth, gpusOf(a)), blocksAfter(t, f, 0, depth, want)
		for j := range got {
			require.GreaterOrEqual(t, got[j], ref[j], "largest free block at level %d", j)
		}
	})
}
