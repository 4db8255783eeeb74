package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
)

// A move reserves the new place at once, without a second quota charge;
// drained, the mover is pending with a ready nomination there and starts
// on it; any other end gives the reservation back.
func TestMoveReservesThenRequeuesOnItsNewPlace(t *testing.T) {
	l, qa, _ := books(t)
	_, err := l.Track(work("m", 1, 4), qa, 0, ledger.Policy{Preemptible: true})
	require.NoError(t, err)
	require.NoError(t, l.Admit("m", on("m", 4, 0), t0))
	now := t0.Add(time.Hour)
	_, err = l.DrainFor("m", now, now.Add(2*time.Minute), gang.DrainDefrag)
	require.NoError(t, err)
	require.NoError(t, l.ReserveMove("m", on("m", 4, 3)))
	require.NoError(t, l.CheckInvariants())
	assert.Equal(t, 4, l.Fleet().Allocated(3), "the new place is taken at once")
	assert.EqualValues(t, 4, l.Tree().Usage(qa, 0), "quota is charged once")
	assert.Equal(t, []string{"m"}, l.MovesOn(3))

	require.NoError(t, l.Requeue("m", now.Add(time.Minute)))
	require.NoError(t, l.CheckInvariants())
	r, _ := l.Get("m")
	assert.Equal(t, gang.Pending, r.State)
	assert.Equal(t, 0, l.Fleet().Allocated(0), "the old place is free")
	assert.Equal(t, []string{"m"}, l.Ready())
	_, err = l.Start("m", now.Add(time.Minute))
	require.NoError(t, err)
	r, _ = l.Get("m")
	assert.Equal(t, on("m", 4, 3).NodeGPUs(), r.Nodes)
	require.NoError(t, l.CheckInvariants())

	// Finished while draining: the reservation is given back.
	_, err = l.DrainFor("m", now, now.Add(2*time.Minute), gang.DrainDefrag)
	require.NoError(t, err)
	require.NoError(t, l.ReserveMove("m", on("m", 4, 1)))
	_, _, err = l.Exit("m", gang.ExitFinished)
	require.NoError(t, err)
	assert.Equal(t, 0, l.Fleet().Allocated(1))
	require.NoError(t, l.CheckInvariants())
}

func TestMoveRefusalsChangeNothing(t *testing.T) {
	l, qa, _ := books(t)
	_, err := l.Track(work("m", 1, 4), qa, 0, ledger.Policy{Preemptible: true})
	require.NoError(t, err)
	_, err = l.Track(work("full", 1, 8), qa, 0, ledger.Policy{Preemptible: true})
	require.NoError(t, err)
	require.NoError(t, l.Admit("full", on("full", 8, 2), t0))
	assert.Error(t, l.ReserveMove("m", on("m", 4, 3)), "not running")
	require.NoError(t, l.Admit("m", on("m", 4, 0), t0))
	for _, c := range []struct {
		name string
		bad  func() error
	}{
		{"wrong size", func() error { return l.ReserveMove("m", on("m", 2, 3)) }},
		{"node full", func() error { return l.ReserveMove("m", on("m", 4, 2)) }},
		{"unknown", func() error { return l.ReserveMove("x", on("x", 4, 3)) }},
		{"no move", func() error { return l.Requeue("m", t0) }},
	} {
		alloc := []int{l.Fleet().Allocated(0), l.Fleet().Allocated(1), l.Fleet().Allocated(2), l.Fleet().Allocated(3)}
		require.Error(t, c.bad(), c.name)
		assert.Equal(t, alloc, []int{l.Fleet().Allocated(0), l.Fleet().Allocated(1), l.Fleet().Allocated(2), l.Fleet().Allocated(3)}, c.name)
		require.NoError(t, l.CheckInvariants())
	}
	require.NoError(t, l.ReserveMove("m", on("m", 4, 3)))
	require.Error(t, l.ReserveMove("m", on("m", 4, 1)), "it already moves")
	assert.Equal(t, 0, l.Fleet().Allocated(1))
	assert.True(t, l.DropMove("m"))
	assert.False(t, l.DropMove("m"))
	assert.Equal(t, 0, l.Fleet().Allocated(3))
}
