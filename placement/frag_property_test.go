package placement_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// mixShape is one observed pod set and the models its workload accepts
// (nil: any).
type mixShape struct {
	ps     gang.PodSet
	models []string
}

func accepts(models []string, model string) bool {
	return models == nil || slices.Contains(models, model)
}

// naiveFrag is the fragmentation measure computed the slow way, GPU by
// GPU and shape by shape: the free thousandths of node n that pods of a
// shape cannot use (all of them when the shape does not accept the
// node's model), weighted by the shape's count and GPUs over the GPUs of
// the models it accepts, over the mix.
func naiveFrag(f *topology.Fleet, n topology.NodeID, left []int, res map[string]int64, mix []mixShape) float64 {
	var sum float64
	total := float64(len(mix))
	fleetGPUs := f.Stats(topology.Root, topology.AllGroups).GPUs
	for _, m := range mix {
		s := m.ps
		demand := s.GPUsPerPod*topology.MilliGPU + s.GPUShare
		supply := 0
		for g := range topology.GroupID(f.NumGroups()) {
			if accepts(m.models, f.GroupFlavor(g)) {
				supply += f.Stats(topology.Root, g).GPUs
			}
		}
		if demand == 0 || supply == 0 {
			continue
		}
		free, whole, partial, small, fitsShare := 0, 0, 0, 0, false
		for _, l := range left {
			if l <= 0 {
				continue
			}
			free += l
			if l == topology.MilliGPU {
				whole++
			} else {
				partial += l
			}
			if s.GPUShare > 0 {
				if l >= s.GPUShare {
					fitsShare = true
				} else {
					small += l
				}
			}
		}
		fits, waste := fitsShare, small
		if s.GPUsPerPod > 0 {
			fits, waste = whole >= s.GPUsPerPod, partial
		}
		if !accepts(m.models, f.GroupFlavor(f.NodeGroup(n))) {
			fits = false
		}
		for _, r := range s.Resources {
			if _, ok := f.Resource(r.Name); !ok || res[r.Name] < r.Amount {
				fits = false
			}
		}
		if !fits {
			waste = free
		}
		sum += float64(waste) * float64(fleetGPUs) / float64(supply)
	}
	return sum / total
}

// naiveReserve is what taking one thousandth of GPU on node n costs the
// shapes bound to models, n's among them: each one's share of the mix's
// demand times the fleet's free capacity over the free capacity of its
// models.
func naiveReserve(f *topology.Fleet, n topology.NodeID, mix []mixShape) float64 {
	freeOf := func(g topology.GroupID) float64 {
		return float64(int64(f.Stats(topology.Root, g).GPUs)*topology.MilliGPU - f.MilliAllocated(topology.Root, g))
	}
	fleetGPUs := f.Stats(topology.Root, topology.AllGroups).GPUs
	var cost float64
	for _, m := range mix {
		s := m.ps
		demand := s.GPUsPerPod*topology.MilliGPU + s.GPUShare
		if m.models == nil || demand == 0 || !accepts(m.models, f.GroupFlavor(f.NodeGroup(n))) {
			continue
		}
		supply, free := 0, 0.0
		for g := range topology.GroupID(f.NumGroups()) {
			if accepts(m.models, f.GroupFlavor(g)) {
				supply += f.Stats(topology.Root, g).GPUs
				free += freeOf(g)
			}
		}
		if supply == 0 || supply == fleetGPUs {
			continue
		}
		u := float64(demand) / float64(len(mix)) / topology.MilliGPU
		cost += u * freeOf(topology.AllGroups) / max(free, topology.MilliGPU)
	}
	return cost
}

// The Fragmentation ranker's score of an option is the fall of the naive
// measure on its node when the pod lands there, less the naive reserve
// cost of the GPU capacity it takes, on a fleet of two models with shapes
// bound to one, the other, a model the fleet lacks, or none.
func TestPropertyFragmentationAgreesWithNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := topology.Uniform(topology.UniformSpec{Levels: []string{"node"}, Fanout: []int{3}, GPUsPerNode: 8, Flavor: "A10"})
		for i := range spec.Nodes {
			spec.Nodes[i].Resources = map[string]int64{"cpu": int64(rapid.IntRange(0, 16).Draw(t, "cpu")) * 1000}
		}
		spec.Nodes[2].Flavor = "L4"
		f, err := topology.New(spec)
		require.NoError(t, err)
		for range rapid.IntRange(0, 30).Draw(t, "busy") {
			c := topology.Claim{Node: topology.NodeID(rapid.IntRange(0, 2).Draw(t, "n")), GPU: rapid.IntRange(0, 7).Draw(t, "g")}
			if rapid.Bool().Draw(t, "whole") {
				c.Whole, c.GPU = 1<<c.GPU, 0
			} else {
				c.Share = rapid.SampledFrom([]int{100, 250, 300, 500, 700, 1000}).Draw(t, "s") // 1000: shared to the last thousandth
			}
			_ = f.AllocateClaim(c) // refused claims change nothing
		}
		podSet := func(label string) gang.PodSet {
			ps := gang.PodSet{Name: "p", Count: 1}
			switch rapid.IntRange(0, 2).Draw(t, label+"-form") {
			case 0:
				ps.GPUShare = rapid.SampledFrom([]int{100, 200, 300, 500, 800}).Draw(t, label+"-share")
			case 1:
				ps.GPUsPerPod = rapid.IntRange(1, 8).Draw(t, label+"-k")
			}
			if ps.NoGPU() || rapid.Bool().Draw(t, label+"-cpu") {
				ps.Resources = []gang.Resource{{Name: "cpu", Amount: int64(rapid.IntRange(1, 8).Draw(t, label+"-cores")) * 1000}}
			}
			return ps
		}
		fr := placement.NewFragmentation()
		var mix []mixShape
		for range rapid.IntRange(1, 12).Draw(t, "mix") {
			m := mixShape{ps: podSet("mix"), models: rapid.SampledFrom([][]string{nil, {"A10"}, {"L4"}, {"H100"}}).Draw(t, "models")}
			mix = append(mix, m)
			fr.Observe(&gang.Workload{ID: "m", Queue: "q", Shape: gang.Batch, Flavors: m.models, PodSets: []gang.PodSet{m.ps}})
		}
		ps := podSet("pod")
		n := topology.NodeID(rapid.IntRange(0, 2).Draw(t, "node"))
		gpu := -1
		if ps.GPUShare > 0 {
			gpu = rapid.IntRange(0, f.Capacity(n)-1).Draw(t, "gpu")
		}
		want, o, ok := naiveRank(f, n, ps, gpu, mix)
		if !ok {
			return
		}
		w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{ps}}
		require.InDelta(t, want, fr.Rank(f, w, o), 1e-9)
	})
}

// naiveRank is what the Fragmentation ranker should score pod set ps on
// node n (on GPU gpu for a share): the fall of the naive measure on n
// when the pod lands there, less the naive reserve cost of the GPU
// capacity it takes; ok is false when the pod does not fit there.
func naiveRank(f *topology.Fleet, n topology.NodeID, ps gang.PodSet, gpu int, mix []mixShape) (float64, placement.Option, bool) {
	cpu, _ := f.Resource("cpu")
	left := make([]int, f.Capacity(n))
	for i := range left {
		used, _ := f.GPUUsed(n, i)
		left[i] = topology.MilliGPU - used
		if f.GPUWhole(n, i) {
			left[i] = -1
		}
	}
	o := placement.Option{Node: n, GPU: -1}
	after := append([]int(nil), left...)
	switch {
	case ps.GPUsPerPod > 0:
		if f.Free(n) < ps.GPUsPerPod {
			return 0, o, false
		}
		for i, k := 0, ps.GPUsPerPod; i < len(after) && k > 0; i++ {
			if after[i] == topology.MilliGPU {
				after[i], k = -1, k-1
			}
		}
	case ps.GPUShare > 0:
		o.GPU = gpu
		if left[o.GPU] < ps.GPUShare {
			return 0, o, false
		}
		after[o.GPU] -= ps.GPUShare
	}
	res := map[string]int64{"cpu": f.ResourceFree(n, cpu)}
	resAfter := map[string]int64{"cpu": res["cpu"] - ps.Resource("cpu")}
	used := 0
	for i := range left {
		used += max(left[i], 0) - max(after[i], 0)
	}
	return naiveFrag(f, n, left, res, mix) - naiveFrag(f, n, after, resAfter, mix) - float64(used)*naiveReserve(f, n, mix), o, true
}
