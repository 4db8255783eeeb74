package placement_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// twoModels is a fleet of four 2-GPU nodes of model A then four of B,
// 16 cores each.
func twoModels(t *testing.T) *topology.Fleet {
	var spec topology.Spec
	spec.Levels = []string{"node"}
	for i := range 8 {
		m := "A"
		if i >= 4 {
			m = "B"
		}
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("%s%d", m, i%4), GPUs: 2, Flavor: m,
			Resources: map[string]int64{"cpu": 16000}})
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	return f
}

func onePod(id string, ps gang.PodSet, models ...string) *gang.Workload {
	ps.Name, ps.Count = "p", 1
	return &gang.Workload{ID: id, Queue: "q", Shape: gang.Batch, Flavors: models, PodSets: []gang.PodSet{ps}}
}

// Where the Fragmentation ranker sends a pod, given the mix it has seen:
// away from the model that bound work needs, onto the node it leaves
// usable for the mix's shapes.
func TestFragmentationSteers(t *testing.T) {
	cpu := func(c int64) []gang.Resource { return []gang.Resource{{Name: "cpu", Amount: c * 1000}} }
	cases := []struct {
		name string
		mix  []*gang.Workload
		busy []topology.Claim // on the fleet before the pod
		pod  *gang.Workload
		want string // the node chosen
	}{
		{
			name: "no mix seen: the tightest fit, lowest ID",
			pod:  onePod("w", gang.PodSet{GPUsPerPod: 1}),
			want: "A0",
		},
		{
			name: "work bound to A seen: a pod that may go anywhere takes B",
			mix:  []*gang.Workload{onePod("m1", gang.PodSet{GPUsPerPod: 1}, "A"), onePod("m2", gang.PodSet{GPUsPerPod: 1}, "A"), onePod("m3", gang.PodSet{GPUsPerPod: 1})},
			pod:  onePod("w", gang.PodSet{GPUsPerPod: 1}),
			want: "B0",
		},
		{
			name: "2-GPU pods seen: a share goes to the GPU already shared, not a whole one",
			mix:  []*gang.Workload{onePod("m1", gang.PodSet{GPUsPerPod: 2}), onePod("m2", gang.PodSet{GPUShare: 500})},
			busy: []topology.Claim{{Node: 2, GPU: 1, Share: 300}},
			pod:  onePod("w", gang.PodSet{GPUShare: 500}),
			want: "A2",
		},
		{
			name: "CPU-heavy GPU pods seen: a CPU-only pod leaves the GPU nodes' cores to them",
			mix:  []*gang.Workload{onePod("m1", gang.PodSet{GPUsPerPod: 1, Resources: cpu(8)}), onePod("m2", gang.PodSet{Resources: cpu(8)})},
			busy: []topology.Claim{{Node: 5, GPU: 0, Whole: 3}},
			pod:  onePod("w", gang.PodSet{Resources: cpu(8)}),
			want: "B1",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := twoModels(t)
			for _, cl := range c.busy {
				require.NoError(t, f.AllocateClaim(cl))
			}
			fr := placement.NewFragmentation()
			for _, w := range c.mix {
				fr.Observe(w)
			}
			a, err := placement.Place(f, c.pod, placement.Options{Ranker: fr})
			require.NoError(t, err)
			require.Equal(t, c.want, f.NodeName(a.Pods[0].Node))
		})
	}
}

// TestFragmentationRankAtSharedGPUs: the ranker's score of a share on a
// node whose GPUs are partly used (one shared to its last thousandth,
// others with shares of several sizes) equals the naive measure's, on
// every GPU the share fits: the ranker keeps the partly used GPUs in
// order as a share lands on one of them.
func TestFragmentationRankAtSharedGPUs(t *testing.T) {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"node"}, Fanout: []int{3}, GPUsPerNode: 8, Flavor: "A10"})
	for i := range spec.Nodes {
		spec.Nodes[i].Resources = map[string]int64{"cpu": 8000}
	}
	spec.Nodes[2].Flavor = "L4"
	f, err := topology.New(spec)
	require.NoError(t, err)
	for gpu, share := range []int{1000, 100, 700, 300, 500} {
		require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: gpu, Share: share}))
	}
	mix := []mixShape{{ps: gang.PodSet{Name: "p", Count: 1, GPUShare: 100}},
		{ps: gang.PodSet{Name: "p", Count: 1, GPUShare: 500}, models: []string{"A10"}},
		{ps: gang.PodSet{Name: "p", Count: 1, GPUsPerPod: 2}}}
	fr := placement.NewFragmentation()
	for _, m := range mix {
		fr.Observe(&gang.Workload{ID: "m", Queue: "q", Shape: gang.Batch, Flavors: m.models, PodSets: []gang.PodSet{m.ps}})
	}
	for _, share := range []int{100, 200, 300} {
		ps := gang.PodSet{Name: "p", Count: 1, GPUShare: share}
		w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{ps}}
		for gpu := range f.Capacity(0) {
			want, o, ok := naiveRank(f, 0, ps, gpu, mix)
			if ok {
				require.InDelta(t, want, fr.Rank(f, w, o), 1e-9, "share %d on GPU %d", share, gpu)
			}
		}
	}
}

// TestFragmentationRankAfterManyObservations: a shape observed seventy
// times counts seventy times, not as seventy kept shapes, so shapes seen
// once later are kept as their own; a shape bound to every model the
// fleet has may go anywhere and costs no reserve. The ranker's scores
// equal the naive measure's.
func TestFragmentationRankAfterManyObservations(t *testing.T) {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"node"}, Fanout: []int{3}, GPUsPerNode: 8, Flavor: "A10"})
	for i := range spec.Nodes {
		spec.Nodes[i].Resources = map[string]int64{"cpu": 8000}
	}
	spec.Nodes[2].Flavor = "L4"
	f, err := topology.New(spec)
	require.NoError(t, err)
	for gpu, share := range []int{300, 500, 800} {
		require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: gpu, Share: share}))
	}
	var mix []mixShape
	for range 70 {
		mix = append(mix, mixShape{ps: gang.PodSet{Name: "p", Count: 1, GPUShare: 100}})
	}
	mix = append(mix, mixShape{ps: gang.PodSet{Name: "p", Count: 1, GPUShare: 600}, models: []string{"A10"}},
		mixShape{ps: gang.PodSet{Name: "p", Count: 1, GPUsPerPod: 4}, models: []string{"A10", "L4"}},
		mixShape{ps: gang.PodSet{Name: "p", Count: 1, GPUsPerPod: 8}, models: []string{"L4"}})
	fr := placement.NewFragmentation()
	for _, m := range mix {
		fr.Observe(&gang.Workload{ID: "m", Queue: "q", Shape: gang.Batch, Flavors: m.models, PodSets: []gang.PodSet{m.ps}})
	}
	for _, ps := range []gang.PodSet{{Name: "p", Count: 1, GPUShare: 200}, {Name: "p", Count: 1, GPUsPerPod: 2}} {
		w := &gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{ps}}
		for n := range topology.NodeID(3) {
			for gpu := range f.Capacity(n) {
				want, o, ok := naiveRank(f, n, ps, gpu, mix)
				if ok {
					require.InDelta(t, want, fr.Rank(f, w, o), 1e-9, "%+v on node %d GPU %d", ps, n, gpu)
				}
			}
		}
	}
}

// TestFragmentationKeepsEveryShapeWhateverTheOrder: 300 distinct shapes
// (GPUs, share, cores, memory, models) observed in one order and in the
// reverse rank every option alike: no shape is merged into another, so
// the 65th shape to arrive counts with its own cpu and memory.
func TestFragmentationKeepsEveryShapeWhateverTheOrder(t *testing.T) {
	f := twoModels(t)
	var mix []*gang.Workload
	for i := range 300 {
		ps := gang.PodSet{Resources: []gang.Resource{{Name: "cpu", Amount: int64(1+i%16) * 1000}}}
		if i%3 == 0 {
			ps.GPUsPerPod = 1 + i%2
		} else {
			ps.GPUShare = 100 * (1 + i%9)
		}
		if i%5 == 0 {
			ps.Resources = append(ps.Resources, gang.Resource{Name: "memory", Amount: int64(i)})
		}
		var models []string
		if i%7 == 0 {
			models = []string{"A"}
		}
		mix = append(mix, onePod(fmt.Sprintf("m%d", i), ps, models...))
	}
	forward, backward := placement.NewFragmentation(), placement.NewFragmentation()
	for i := range mix {
		forward.Observe(mix[i])
		backward.Observe(mix[len(mix)-1-i])
	}
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 0, Share: 300}))
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: 5, Whole: 1}))
	for _, pod := range []*gang.Workload{
		onePod("s", gang.PodSet{GPUShare: 200, Resources: []gang.Resource{{Name: "cpu", Amount: 9000}}}),
		onePod("k", gang.PodSet{GPUsPerPod: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 15000}}}),
	} {
		for n := range topology.NodeID(f.NumNodes()) {
			for gpu := -1; gpu < 2; gpu++ {
				o := placement.Option{Node: n, Group: f.NodeGroup(n), GPU: gpu}
				require.InDelta(t, forward.Rank(f, pod, o), backward.Rank(f, pod, o), 1e-9, "node %d gpu %d", n, gpu)
			}
		}
	}
}

// A shape the mix already holds, observed again once the ranker has
// ranked (its weights derived for the fleet), counts as if it had come
// before: every option ranks as with a ranker fed the whole mix first.
// A shape bound to some models adds its share of the demand to their
// reserve, as when the weights are derived; an unbound one adds to no
// model set's reserve.
func TestFragmentationCountsAShapeSeenAgainAfterRanking(t *testing.T) {
	share := onePod("s", gang.PodSet{GPUShare: 500})
	onA, onB := onePod("a", gang.PodSet{GPUsPerPod: 1}, "A"), onePod("b", gang.PodSet{GPUsPerPod: 1}, "B")
	shareOnA := onePod("c", gang.PodSet{GPUShare: 300}, "A")
	for _, tc := range []struct {
		name  string
		mix   []*gang.Workload
		again *gang.Workload
	}{
		{"an unbound shape", []*gang.Workload{share}, share},
		{"an unbound shape beside two bound model sets", []*gang.Workload{share, onA, onB}, share},
		{"a whole-GPU shape bound to one model", []*gang.Workload{share, onA}, onA},
		{"a share bound to one model", []*gang.Workload{share, shareOnA}, shareOnA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := twoModels(t)
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 0, Share: 300}))
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 5, Whole: 1}))
			live, fed := placement.NewFragmentation(), placement.NewFragmentation()
			for _, w := range tc.mix {
				live.Observe(w)
				fed.Observe(w)
			}
			fed.Observe(tc.again)
			pods := []*gang.Workload{onePod("w", gang.PodSet{GPUShare: 200}), onePod("k", gang.PodSet{GPUsPerPod: 1})}
			live.Rank(f, pods[0], placement.Option{Node: 0, Group: f.NodeGroup(0), GPU: 0})
			live.Observe(tc.again)
			for _, pod := range pods {
				for n := range topology.NodeID(f.NumNodes()) {
					for gpu := range 2 {
						o := placement.Option{Node: n, Group: f.NodeGroup(n), GPU: gpu}
						require.InDelta(t, fed.Rank(f, pod, o), live.Rank(f, pod, o), 1e-9, "%s on node %d GPU %d", pod.ID, n, gpu)
					}
				}
			}
		})
	}
}

// The ranker measures at most eight resources per node, the first eight
// of the fleet in name order: on a fleet of nine, a mix whose pods ask
// for all nine still ranks, a node short of the first one is left to
// the mix, and one short of the ninth is not (the shortage is not
// seen: the first node takes the pod).
func TestFragmentationMeasuresTheFirstEightResources(t *testing.T) {
	var ask []gang.Resource
	for i := range 9 {
		ask = append(ask, gang.Resource{Name: fmt.Sprintf("r%d", i), Amount: 1000})
	}
	for _, tc := range []struct {
		name  string
		short string // the resource n0 has only one pod's worth of
		want  string
	}{
		{"short of the first", "r0", "n1"},
		{"short of the ninth", "r8", "n0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := topology.Spec{Levels: []string{"node"}}
			for i := range 2 {
				res := map[string]int64{}
				for _, r := range ask {
					res[r.Name] = 8000
				}
				if i == 0 {
					res[tc.short] = 1000
				}
				spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 2, Flavor: "A", Resources: res})
			}
			f, err := topology.New(spec)
			require.NoError(t, err)
			fr := placement.NewFragmentation()
			fr.Observe(onePod("m", gang.PodSet{GPUsPerPod: 1, Resources: ask}))
			a, err := placement.Place(f, onePod("w", gang.PodSet{GPUsPerPod: 1, Resources: ask}), placement.Options{Ranker: fr})
			require.NoError(t, err)
			require.Equal(t, tc.want, f.NodeName(a.Pods[0].Node))
		})
	}
}

// Options whose rise is at most a fiftieth of a GPU (20 thousandths)
// above the best's count as equal, and the first node takes the pod: a
// 300-thousandth share on node A0's partly used GPU leaves 19, 20 or 21
// thousandths there, too little for the mix's 100-thousandth shares,
// while on A1's free GPU it leaves 700 usable.
func TestFragmentationCountsOptionsAFiftiethOfAGPUBelowTheBestAsEqual(t *testing.T) {
	for _, tc := range []struct {
		left int // thousandths the pod leaves on A0's GPU 0
		want string
	}{{19, "A0"}, {20, "A0"}, {21, "A1"}} {
		t.Run(fmt.Sprintf("%d left", tc.left), func(t *testing.T) {
			f := twoModels(t)
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 0, Share: topology.MilliGPU - 300 - tc.left}))
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, Whole: 0b10}))
			fr := placement.NewFragmentation()
			fr.Observe(onePod("m", gang.PodSet{GPUShare: 100}))
			pod := onePod("w", gang.PodSet{GPUShare: 300})
			best := fr.Rank(f, pod, placement.Option{Node: 1, Group: f.NodeGroup(1), GPU: 0})
			require.InDelta(t, best-float64(tc.left), fr.Rank(f, pod, placement.Option{Node: 0, Group: f.NodeGroup(0), GPU: 0}), 1e-9)
			a, err := placement.Place(f, pod, placement.Options{Ranker: fr})
			require.NoError(t, err)
			require.Equal(t, tc.want, f.NodeName(a.Pods[0].Node))
		})
	}
}

// Observe leaves out a pod set that Place refuses, as a resource amount
// that is not positive: the ranker still ranks as before any mix, the
// tightest fit (A1, with one GPU left) winning; a valid shape seen makes
// the options rank equal, and the first node (A0) takes the pod.
func TestFragmentationLeavesOutPodSetsPlaceRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cores int64 // thousandths of a core the observed pod asks for
		want  string
	}{
		{"a zero amount", 0, "A1"},
		{"a negative amount", -1000, "A1"},
		{"a valid amount", 1000, "A0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := twoModels(t)
			require.NoError(t, f.AllocateClaim(topology.Claim{Node: 1, Whole: 1}))
			fr := placement.NewFragmentation()
			fr.Observe(onePod("m", gang.PodSet{GPUsPerPod: 1, Resources: []gang.Resource{{Name: "cpu", Amount: tc.cores}}}))
			a, err := placement.Place(f, onePod("w", gang.PodSet{GPUsPerPod: 1}), placement.Options{Ranker: fr})
			require.NoError(t, err)
			require.Equal(t, tc.want, f.NodeName(a.Pods[0].Node))
		})
	}
}
