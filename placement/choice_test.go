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

// Choices between options that tie on the first criteria: the model the
// workload prefers, the group it lists first, the GPU a share goes to.

// mixedFleet is one leaf of 4-GPU nodes of the given flavors (and pools
// "p<i>" when pools is set), with 8 cores each.
func mixedFleet(t *testing.T, pools bool, flavors ...string) *topology.Fleet {
	spec := topology.Spec{Levels: []string{"leaf", "node"}}
	for i, fl := range flavors {
		ns := topology.NodeSpec{Name: fmt.Sprintf("n%d", i), Path: []string{"l0"}, GPUs: 4, Flavor: fl,
			Resources: map[string]int64{"cpu": 8000}}
		if pools {
			ns.Pool = fmt.Sprintf("p%d", i)
		}
		spec.Nodes = append(spec.Nodes, ns)
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	return f
}

// TestSharedPodTakesTheFirstAcceptedModelAtEqualFit: a share fits as
// tightly on node 0 (H100) as on node 1 (L4); the model the workload
// lists first wins, then the lower node.
func TestSharedPodTakesTheFirstAcceptedModelAtEqualFit(t *testing.T) {
	for _, tc := range []struct {
		models []string
		want   topology.NodeID
	}{
		{[]string{"L4", "H100"}, 1},
		{[]string{"H100", "L4"}, 0},
		{nil, 0},
	} {
		t.Run(fmt.Sprint(tc.models), func(t *testing.T) {
			f := mixedFleet(t, false, "H100", "L4")
			w := onePod("w", gang.PodSet{GPUShare: 100}, tc.models...)
			a, err := placement.Place(f, w, placement.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, a.Pods[0].Node)
		})
	}
}

// gpuRanker prefers the lowest GPU index, then the lowest node.
type gpuRanker struct{}

func (gpuRanker) Rank(_ *topology.Fleet, _ *gang.Workload, o placement.Option) float64 {
	return -float64(o.GPU*100 + int(o.Node))
}

// TestSharePodGoesToTheGPUItsOptionNames: on node 0, GPU 1 has 600
// thousandths left and GPU 2 has 500: a 300 share fits tightest on
// GPU 2, and without a Ranker goes there; a Ranker that prefers GPU 0
// (whole-free) gets GPU 0, not the tightest GPU of the node it chose.
func TestSharePodGoesToTheGPUItsOptionNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ranker placement.Ranker
		gpu    int
	}{
		{"tightest GPU", nil, 2},
		{"the Ranker's GPU 0", gpuRanker{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mixedFleet(t, false, "H100")
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 1, Share: 400}))
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 2, Share: 500}))
			w := onePod("w", gang.PodSet{GPUShare: 300})
			a, err := placement.Place(f, w, placement.Options{Ranker: tc.ranker})
			require.NoError(t, err)
			assert.Equal(t, tc.gpu, a.Pods[0].GPU)
			require.NoError(t, placement.Apply(f, a))
		})
	}
}

// TestSharePodFindsTheTightestGPUPastNodesThatCannotTakeIt: GPU 0 of
// nodes 0 and 1 has 500 thousandths left, the tightest class for a 300
// share with a core; node 2's GPU 0 has 500 left too, or 600 (the next
// class). Nodes 0 and 1 have no core free (or node 0 is avoided): the
// walk goes on through the class, and on to the next class, to a shared
// GPU that takes the pod rather than settle for a whole-free GPU.
func TestSharePodFindsTheTightestGPUPastNodesThatCannotTakeIt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		used2 int   // thousandths used on node 2's GPU 0
		busy  []int // nodes whose cores are all taken
		avoid bool  // node 0 avoided
		want  topology.NodeID
	}{
		{"cores taken on nodes 0 and 1", 500, []int{0, 1}, false, 2},
		{"node 0 avoided", 500, nil, true, 1},
		{"the tightest class unusable: the next one", 400, []int{0, 1}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mixedFleet(t, false, "H100", "H100", "H100")
			cpu, _ := f.Resource("cpu")
			for n, used := range []int{500, 500, tc.used2} {
				require.NoError(t, f.AllocateClaim(topology.Claim{Node: topology.NodeID(n), GPU: 0, Share: used}))
			}
			for _, n := range tc.busy {
				require.NoError(t, f.AllocateClaim(topology.Claim{Node: topology.NodeID(n),
					Resources: []topology.ResourceAmount{{Resource: cpu, Amount: 8000}}}))
			}
			w := onePod("w", gang.PodSet{GPUShare: 300, Resources: []gang.Resource{{Name: "cpu", Amount: 1000}}})
			var avoid []topology.DomainID
			if tc.avoid {
				avoid = append(avoid, f.NodeDomain(0))
			}
			a, err := placement.NewPlacer(placement.Options{}).PlaceAvoiding(f, w, avoid...)
			require.NoError(t, err)
			assert.Equal(t, tc.want, a.Pods[0].Node)
			assert.Equal(t, 0, a.Pods[0].GPU)
		})
	}
}

// TestNoFitNamesTheFirstOfEquallyFreeGroups: two pools with as many free
// GPUs; a gang neither holds is explained by the pool it lists first.
func TestNoFitNamesTheFirstOfEquallyFreeGroups(t *testing.T) {
	for _, pools := range [][]string{{"p0", "p1"}, {"p1", "p0"}} {
		t.Run(fmt.Sprint(pools), func(t *testing.T) {
			f := mixedFleet(t, true, "H100", "H100")
			require.NoError(t, f.Allocate(1, 1))
			require.NoError(t, f.Allocate(0, 1))
			w := &gang.Workload{ID: "w", Queue: "q", Pools: pools,
				PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 2}}}
			_, err := placement.Place(f, w, placement.Options{Explain: true})
			var nf *placement.NoFit
			require.ErrorAs(t, err, &nf)
			require.NotEmpty(t, nf.Tried)
			want := map[string]string{"p0": "n0", "p1": "n1"}[pools[0]]
			assert.Equal(t, want, nf.Tried[0].Domain)
		})
	}
}

// TestWarmReplicasGoToTheFirstModelInOrder: warm nodes of both models
// hold the replicas; the workload lists its models in order, so the
// first model's warm node takes them.
func TestWarmReplicasGoToTheFirstModelInOrder(t *testing.T) {
	for _, tc := range []struct {
		models []string
		want   topology.NodeID
	}{
		{[]string{"H100", "A100"}, 0},
		{[]string{"A100", "H100"}, 1},
	} {
		t.Run(fmt.Sprint(tc.models), func(t *testing.T) {
			f := mixedFleet(t, false, "H100", "A100", "H100")
			w := &gang.Workload{ID: "r", Queue: "q", Shape: gang.Inference, Model: "llm",
				Flavors: tc.models, FlavorsInOrder: true,
				PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUsPerPod: 2}}}
			a, err := placement.Place(f, w, placement.Options{Warm: warmList{"llm": {0, 1}}})
			require.NoError(t, err)
			for _, p := range a.Pods {
				assert.Equal(t, tc.want, p.Node)
			}
		})
	}
}

// TestMIGSliceGoesWhereItLeavesFewestSlices: a 1g.10gb slice takes one
// memory slice of an H100 and two of an A100 (40 GB). GPU 0 of each node
// has four slices free: on the A100 the slice leaves two, on the H100
// three, so the A100 is the tighter fit, whichever model is listed first.
func TestMIGSliceGoesWhereItLeavesFewestSlices(t *testing.T) {
	spec := topology.Spec{Levels: []string{"node"}, Nodes: []topology.NodeSpec{
		{Name: "h", GPUs: 4, Flavor: "H100", MIG: true},
		{Name: "a", GPUs: 4, Flavor: "A100", MIG: true},
	}}
	f, err := topology.New(spec)
	require.NoError(t, err)
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 0, MIG: "3g.40gb"}))
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: 1, GPU: 0, MIG: "3g.20gb"}))
	for _, models := range [][]string{{"H100", "A100"}, {"A100", "H100"}} {
		w := onePod("w", gang.PodSet{MIG: "1g.10gb"}, models...)
		a, err := placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		assert.Equal(t, "a", f.NodeName(a.Pods[0].Node), "models %v", models)
		assert.Equal(t, 0, a.Pods[0].GPU)
	}
}

// TestMIGSlicePodGoesToTheGPUItsOptionNames: on an H100 whose GPU 1 holds
// a 3g slice, a 1g slice fits tightest on GPU 1, and without a Ranker
// goes there; a Ranker that prefers GPU 0 gets GPU 0.
func TestMIGSlicePodGoesToTheGPUItsOptionNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ranker placement.Ranker
		gpu    int
	}{
		{"tightest GPU", nil, 1},
		{"the Ranker's GPU 0", gpuRanker{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := topology.New(topology.Spec{Levels: []string{"node"}, Nodes: []topology.NodeSpec{
				{Name: "h", GPUs: 4, Flavor: "H100", MIG: true}}})
			require.NoError(t, err)
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 1, MIG: "3g.40gb"}))
			a, err := placement.Place(f, onePod("w", gang.PodSet{MIG: "1g.10gb"}), placement.Options{Ranker: tc.ranker})
			require.NoError(t, err)
			assert.Equal(t, tc.gpu, a.Pods[0].GPU)
			require.NoError(t, placement.Apply(f, a))
		})
	}
}

// TestPoolOrderComesBeforeModelOrder: the workload lists pool p0 first
// and model A100 first; only p0 has an H100 and only p1 an A100. The
// pool's order ranks above the model's: the pod goes to p0's H100.
func TestPoolOrderComesBeforeModelOrder(t *testing.T) {
	for _, ps := range []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 2}, {Name: "p", Count: 1, GPUShare: 500}} {
		f := mixedFleet(t, true, "H100", "A100")
		w := &gang.Workload{ID: "w", Queue: "q", Pools: []string{"p0", "p1"},
			Flavors: []string{"A100", "H100"}, FlavorsInOrder: true, PodSets: []gang.PodSet{ps}}
		a, err := placement.Place(f, w, placement.Options{})
		require.NoError(t, err)
		assert.Equal(t, topology.NodeID(0), a.Pods[0].Node, "%+v", ps)
	}
}

// highGPURanker prefers the highest GPU index.
type highGPURanker struct{}

func (highGPURanker) Rank(_ *topology.Fleet, _ *gang.Workload, o placement.Option) float64 {
	return float64(o.GPU)
}

// TestRankerSeesAtMostMaxRankedMIGSlicesPerClass: GPUs 1 and 2 of an
// H100 each hold a 3g slice, one class of four free slices for a 1g
// slice. A Ranker that prefers the highest GPU is shown GPU 1 alone from
// that class under a bound of 1, and takes it over the whole-free GPU 0;
// under a bound of 2 it is shown GPU 2 as well and takes it.
func TestRankerSeesAtMostMaxRankedMIGSlicesPerClass(t *testing.T) {
	for _, tc := range []struct {
		maxRanked int
		gpu       int
	}{
		{1, 1},
		{2, 2},
	} {
		t.Run(fmt.Sprintf("MaxRanked=%d", tc.maxRanked), func(t *testing.T) {
			f, err := topology.New(topology.Spec{Levels: []string{"node"}, Nodes: []topology.NodeSpec{
				{Name: "h", GPUs: 4, Flavor: "H100", MIG: true}}})
			require.NoError(t, err)
			for _, gpu := range []int{1, 2} {
				require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: gpu, MIG: "3g.40gb"}))
			}
			opt := placement.Options{Ranker: highGPURanker{}, MaxRanked: tc.maxRanked}
			a, err := placement.Place(f, onePod("w", gang.PodSet{MIG: "1g.10gb"}), opt)
			require.NoError(t, err)
			assert.Equal(t, tc.gpu, a.Pods[0].GPU)
		})
	}
}
