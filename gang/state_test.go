package gang_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetsched/fleet/gang"
)

var allStates = []gang.State{
	gang.Pending, gang.Admitted, gang.Draining, gang.Finished,
	gang.Failed, gang.Drained, gang.Killed, gang.Cancelled,
}

func TestStateStrings(t *testing.T) {
	want := []string{"pending", "admitted", "draining", "finished", "failed", "drained", "killed", "cancelled"}
	for i, s := range allStates {
		assert.Equal(t, want[i], s.String())
	}
	assert.Equal(t, "State(0)", gang.State(0).String())
	assert.Equal(t, "State(42)", gang.State(42).String())
}

func TestTransitions(t *testing.T) {
	// The table of CanTransition's doc comment, written out in full.
	legal := map[gang.State][]gang.State{
		gang.Pending:  {gang.Admitted, gang.Cancelled},
		gang.Admitted: {gang.Draining, gang.Finished, gang.Failed, gang.Killed, gang.Cancelled, gang.Pending},
		gang.Draining: {gang.Drained, gang.Killed, gang.Finished, gang.Failed, gang.Cancelled, gang.Pending},
		gang.Drained:  {gang.Pending, gang.Cancelled},
		gang.Killed:   {gang.Pending, gang.Cancelled},
	}
	states := append([]gang.State{0, 99}, allStates...)
	for _, from := range states {
		for _, to := range states {
			want := false
			for _, s := range legal[from] {
				want = want || s == to
			}
			assert.Equal(t, want, gang.CanTransition(from, to), "%v -> %v", from, to)
		}
	}
	for _, s := range allStates {
		terminal := s == gang.Finished || s == gang.Failed || s == gang.Cancelled
		assert.Equal(t, terminal, s.Terminal(), s.String())
		assert.Equal(t, terminal, len(legal[s]) == 0, "terminal states have no way out: %v", s)
		assert.Equal(t, s == gang.Admitted || s == gang.Draining, s.HoldsGPUs(), s.String())
	}
}

func TestExitReasons(t *testing.T) {
	tests := []struct {
		r     gang.ExitReason
		name  string
		state gang.State
	}{
		{gang.ExitFinished, "finished", gang.Finished},
		{gang.ExitFailed, "failed", gang.Failed},
		{gang.ExitDrained, "drained", gang.Drained},
		{gang.ExitKilled, "killed", gang.Killed},
		{gang.ExitCancelled, "cancelled", gang.Cancelled},
		{gang.ExitNodeLost, "node-lost", gang.Failed},
		{0, "ExitReason(0)", 0},
		{7, "ExitReason(7)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.name, tt.r.String())
			assert.Equal(t, tt.state, tt.r.State())
			if tt.state != 0 {
				// Every exit is reachable from a running or draining workload.
				assert.True(t, gang.CanTransition(gang.Draining, tt.state) ||
					gang.CanTransition(gang.Admitted, tt.state), tt.name)
			}
		})
	}
}
