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
