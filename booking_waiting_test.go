package fleet_test

import (
	"cmp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
)

// lowestPriorityFirst visits filler before everything else.
type lowestPriorityFirst struct{}

func (lowestPriorityFirst) Compare(a, b *fleet.Pending) int {
	return cmp.Compare(a.Priority, b.Priority)
}

// While a workload of an active booking waits, nothing of its blocks is
// lent, from the start of the cycle: batch filler visited before the
// booking's gang is kept off the booked spine, whose idle nodes are its
// best fit, and the gang then starts there whole.
func TestWaitingBookingLendsNothingAllCycle(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	cfg.Policy.Order = lowestPriorityFirst{}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	start := t0.Add(24 * time.Hour)
	opts, err := s.Propose(t0, calendar.Request{ID: "bk", Queue: "research", Flavor: "H100", GPUs: 512, Level: "spine",
		Blocks: 1, Start: start, Duration: 6 * time.Hour})
	require.NoError(t, err)
	require.NotEmpty(t, opts)
	b, err := s.Approve(t0, "bk", opts[0].Index, "gpu-council")
	require.NoError(t, err)
	require.Equal(t, []string{"spine-0"}, b.Domains, "the empty fleet's first spine")

	g := training("run", 64, fleet.ClassReservedResearch, "research")
	g.Booking = "bk"
	require.NoError(t, s.Submit(start, g))
	filler := training("filler", 1, fleet.ClassPreemptibleBatch, "batch")
	filler.Topology.Preferred = ""
	require.NoError(t, s.Submit(start, filler))
	d := s.Schedule(start)
	require.Len(t, d.Admit, 2)
	for _, a := range d.Admit {
		inSpine0 := a.Pods[0].Node[5:6] == "0"
		assert.Equal(t, a.ID == "run", inSpine0, "%s on %s", a.ID, a.Pods[0].Node)
	}
}
