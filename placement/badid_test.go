package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// PlaceWithin and PlaceAvoiding refuse a domain ID out of range with an
// invalid NoFit, never a panic.
func TestPlaceOutOfRangeDomainIsInvalid(t *testing.T) {
	f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"},
		Fanout: []int{2, 2}, GPUsPerNode: 8, Flavor: "H100"}))
	require.NoError(t, err)
	w := &gang.Workload{ID: "w", Queue: "q", PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}
	p := placement.NewPlacer(placement.Options{})
	for _, d := range []topology.DomainID{-1, topology.DomainID(f.NumDomains()), 1 << 30} {
		_, err := p.PlaceWithin(f, w, d)
		var nf *placement.NoFit
		require.ErrorAs(t, err, &nf, "within %d", d)
		assert.Equal(t, placement.CauseInvalid, nf.Cause)
		_, err = p.PlaceAvoiding(f, w, 1, d)
		require.ErrorAs(t, err, &nf, "avoiding %d", d)
		assert.Equal(t, placement.CauseInvalid, nf.Cause)
	}
	_, err = p.PlaceWithin(f, w, 1)
	require.NoError(t, err, "the placer still works")
}

// Apply and Unapply refuse a pod on a node past the last, by one or by
// many, or before the first, with ErrUnknownNode and the fleet unchanged.
func TestApplyOutOfRangeNodeIsRefused(t *testing.T) {
	f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"},
		Fanout: []int{1, 2}, GPUsPerNode: 8, Flavor: "H100"}))
	require.NoError(t, err)
	before := f.String()
	for _, n := range []topology.NodeID{-1, topology.NodeID(f.NumNodes()), 1 << 30} {
		a := placement.Assignment{Workload: "w", Pods: []placement.Pod{{Node: 0, GPUs: 1}, {Node: n, GPUs: 1}}}
		require.ErrorIs(t, placement.Apply(f, a), topology.ErrUnknownNode, "node %d", n)
		require.ErrorIs(t, placement.Unapply(f, placement.Assignment{Workload: "w", Pods: a.Pods[1:]}), topology.ErrUnknownNode, "node %d", n)
		require.Equal(t, before, f.String())
	}
}
