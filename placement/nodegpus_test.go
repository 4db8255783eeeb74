package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// NodeGPUs lists whole GPUs only: pods holding a share of a GPU leave no
// entry, and whole-GPU pods on one node merge into one entry.
func TestNodeGPUsCountsWholeGPUsOnly(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	w := &gang.Workload{ID: "s", Queue: "q", PodSets: []gang.PodSet{
		{Name: "whole", Count: 2, GPUsPerPod: 2},
		{Name: "half", Count: 1, GPUShare: 500},
	}}
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	require.Len(t, a.Pods, 3)
	assert.Equal(t, []string{"node-0-0-0=4"}, nodesOf(f, a))

	w = &gang.Workload{ID: "h", Queue: "q", PodSets: []gang.PodSet{{Name: "half", Count: 1, GPUShare: 500}}}
	a, err = placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	assert.Empty(t, a.NodeGPUs())
}

// fitRecorder is a Ranker that records each option's Fit by node name
// and ranks them all alike.
type fitRecorder map[string]int64

func (r fitRecorder) Rank(f *topology.Fleet, _ *gang.Workload, o placement.Option) float64 {
	r[f.NodeName(o.Node)] = o.Fit
	return 0
}

// A Ranker sees, for a pod of whole GPUs, the GPUs each node would have
// left in the high half of Fit: the best-fit key it may weigh.
func TestOptionFitIsWhatTheNodeKeeps(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	alloc(t, f, map[string]int{"node-0-0-0": 3})
	seen := fitRecorder{}
	a, err := placement.Place(f, work("r", 1, 2, "", ""), placement.Options{Ranker: seen})
	require.NoError(t, err)
	assert.Equal(t, fitRecorder{"node-0-0-0": 3 << 32, "node-0-0-1": 6 << 32}, seen)
	assert.Equal(t, []string{"node-0-0-0=2"}, nodesOf(f, a), "a tie between ranks goes to the tightest fit")
}

// A gang of two pod sets of GPU shares counts, while placing the second,
// the first set's pods (already on the fleet for the trial) once and the
// second set's own earlier pods too: on two free GPUs, 600 and 600
// thousandths for the first set leave 400 on each GPU for the second.
func TestSharedPodSetsPackAroundEachOther(t *testing.T) {
	f := fleet(t, 1, 1, 1)
	alloc(t, f, map[string]int{"node-0-0-0": 6})
	w := &gang.Workload{ID: "s", Queue: "q", PodSets: []gang.PodSet{
		{Name: "big", Count: 2, GPUShare: 600},
		{Name: "small", Count: 2, GPUShare: 400},
	}}
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	perGPU := map[int]int{}
	for _, p := range a.Pods {
		perGPU[p.GPU] += w.PodSets[p.PodSet].GPUShare
	}
	assert.Equal(t, map[int]int{6: 1000, 7: 1000}, perGPU)
	w.PodSets[1].Count = 3
	_, err = placement.Place(f, w, placement.Options{})
	assert.Error(t, err, "a third 400 has no room")
}

// A caller's MaxScored above the node-trial bound of multi-pod-set gangs
// still lets the Scorer see that many equally tight nodes for a gang of
// one pod set: the 71st of 80 empty nodes.
func TestScorerSeesMoreThanTheNodeTrialBound(t *testing.T) {
	f := fleet(t, 1, 1, 80)
	a, err := placement.Place(f, work("r", 1, 8, "", ""), placement.Options{Scorer: preferNode("node-0-0-70"), MaxScored: 100})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-70=8"}, nodesOf(f, a))
}

// On a fleet with no free GPU, NoFit still explains itself: the largest
// block per level is empty, in the first domain.
func TestNoFitOnAFullFleet(t *testing.T) {
	f := fleet(t, 1, 2, 2)
	for n := range topology.NodeID(f.NumNodes()) {
		require.NoError(t, f.Allocate(n, 8))
	}
	_, err := placement.Place(f, work("g", 2, 8, "spine", "leaf"), placement.Options{Explain: true})
	var nf *placement.NoFit
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, placement.CauseCapacity, nf.Cause)
	assert.Zero(t, nf.FreeGPUs)
	assert.Equal(t, []placement.LevelTry{{Level: "leaf", Largest: 0, Domain: "leaf-0-0"}, {Level: "spine", Largest: 0, Domain: "spine-0"}}, nf.Tried)
}

// A Scorer breaks the tie between two equally free nodes of a sub-node
// gang spread over a leaf: the preferred node takes two of three pods.
func TestScorerBreaksATieOfTwoNodes(t *testing.T) {
	f := fleet(t, 1, 1, 2)
	a, err := placement.Place(f, work("g", 3, 4, "", "leaf"), placement.Options{Scorer: preferNode("node-0-0-1")})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=4", "node-0-0-1=8"}, nodesOf(f, a))
	a, err = placement.Place(f, work("g", 3, 4, "", "leaf"), placement.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0-0-0=8", "node-0-0-1=4"}, nodesOf(f, a), "no scorer: the lowest ID")
}

// The pods of a MIG gang take slices on the node's fullest GPU that
// still holds them (best fit), not on an empty one.
func TestMIGGangTakesTheFullestGPU(t *testing.T) {
	spec := topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{1, 1}, GPUsPerNode: 4, Flavor: "H100"})
	spec.Nodes[0].MIG = true
	f, err := topology.New(spec)
	require.NoError(t, err)
	require.NoError(t, f.AllocateClaim(topology.Claim{Node: 0, GPU: 2, MIG: "3g.40gb", Slice: 0}))
	w := &gang.Workload{ID: "m", Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 2, MIG: "1g.10gb"}}}
	a, err := placement.Place(f, w, placement.Options{})
	require.NoError(t, err)
	require.Len(t, a.Pods, 2)
	for _, p := range a.Pods {
		assert.Equal(t, 2, p.GPU, "pod %d", p.Index)
	}
}
