package placement_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// With shares, slices and resources, the Placer finds room exactly when a
// brute-force scan of every node does, its pods fit what they claim, and
// Apply then Unapply restores the fleet.
func TestPropertySharingAgreesWithNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{2, 3}, GPUsPerNode: 4, Flavor: "H100"})
		for i := range spec.Nodes {
			spec.Nodes[i].Resources = map[string]int64{"cpu": int64(rapid.IntRange(0, 8).Draw(t, "cpu")) * 1000}
			spec.Nodes[i].MIG = rapid.IntRange(0, 3).Draw(t, "mig") == 0
			if rapid.IntRange(0, 3).Draw(t, "l4") == 0 {
				spec.Nodes[i].Flavor, spec.Nodes[i].MIG = "L4", false
			}
		}
		f, err := topology.New(spec)
		require.NoError(t, err)
		cpu, _ := f.Resource("cpu")
		for range rapid.IntRange(0, 20).Draw(t, "busy") {
			c := topology.Claim{Node: topology.NodeID(rapid.IntRange(0, f.NumNodes()-1).Draw(t, "n")), GPU: rapid.IntRange(0, 3).Draw(t, "g")}
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				c.Share = rapid.SampledFrom([]int{200, 500, 800}).Draw(t, "s")
			case 1:
				c.MIG, c.Slice = "3g.40gb", rapid.SampledFrom([]int{0, 4}).Draw(t, "slice")
			default:
				c.Whole, c.GPU = 1<<c.GPU, 0
			}
			_ = f.AllocateClaim(c) // refused claims change nothing
		}
		ps := gang.PodSet{Name: "p", Count: 1}
		switch rapid.IntRange(0, 3).Draw(t, "form") {
		case 0:
			ps.GPUShare = rapid.SampledFrom([]int{100, 300, 500, 1000}).Draw(t, "share")
		case 1:
			ps.MIG = rapid.SampledFrom([]string{"1g.10gb", "3g.40gb", "7g.80gb"}).Draw(t, "profile")
		case 2:
			ps.GPUsPerPod = rapid.IntRange(1, 4).Draw(t, "k")
		}
		if ps.NoGPU() || rapid.Bool().Draw(t, "withCPU") {
			ps.Resources = []gang.Resource{{Name: "cpu", Amount: int64(rapid.IntRange(1, 4).Draw(t, "cores")) * 1000}}
		}
		w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{ps}}
		if rapid.Bool().Draw(t, "models") {
			w.Flavors = []string{"L4", "H100"}
		}
		require.NoError(t, w.Validate())
		want := false
		for n := range topology.NodeID(f.NumNodes()) {
			if f.Health(n) != topology.Healthy || f.ResourceFree(n, cpu) < ps.Resource("cpu") {
				continue
			}
			switch {
			case ps.GPUShare > 0:
				want = want || f.SharesThatFit(n, ps.GPUShare) > 0
			case ps.MIG != "":
				if p, ok := f.NodeMIGProfile(n, ps.MIG); ok {
					want = want || f.SlicesThatFit(n, p) > 0
				}
			case ps.GPUsPerPod > 0:
				want = want || f.Free(n) >= ps.GPUsPerPod
			default:
				want = true
			}
		}
		before := f.Clone()
		a, err := placement.Place(f, w, placement.Options{})
		if ps.MIG != "" && err != nil && !want {
			return // no MIG node left in the fleet: an invalid request, also refused
		}
		require.Equal(t, want, err == nil, "feasibility: naive %v, placer %v", want, err)
		if err != nil {
			return
		}
		require.Len(t, a.Pods, 1)
		require.NoError(t, placement.Apply(f, a))
		require.NoError(t, placement.Unapply(f, a))
		require.Equal(t, before.String(), f.String())
		fr := placement.NewFragmentation()
		fr.Observe(w)
		_, err = placement.Place(f, w, placement.Options{Ranker: fr})
		require.NoError(t, err, "a ranker never loses a feasible placement")
	})
}
