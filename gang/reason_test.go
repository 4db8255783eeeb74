package gang_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
)

func TestDrainReasonsRoundTripByName(t *testing.T) {
	for _, tt := range []struct {
		r    gang.DrainReason
		name string
	}{
		{gang.DrainInQueue, "in-queue"},
		{gang.DrainReclaim, "reclaim"},
		{gang.DrainReclaimWhileBorrowing, "reclaim-while-borrowing"},
		{gang.DrainFairSharing, "fair-sharing"},
		{gang.DrainHost, "host"},
		{gang.DrainBooking, "booking"},
		{gang.DrainIdle, "idle"},
		{gang.DrainDefrag, "defrag"},
		{gang.DrainHotSwap, "hot-swap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.True(t, tt.r.Valid())
			assert.Equal(t, tt.name, tt.r.String())
			b, err := tt.r.MarshalText()
			require.NoError(t, err)
			var back gang.DrainReason
			require.NoError(t, back.UnmarshalText(b))
			assert.Equal(t, tt.r, back)
		})
	}
}

func TestDrainReasonRefusesValuesOutsideItsRange(t *testing.T) {
	for _, r := range []gang.DrainReason{0, gang.DrainHotSwap + 1} {
		assert.False(t, r.Valid())
		_, err := r.MarshalText()
		assert.ErrorIs(t, err, gang.ErrInvalid)
	}
	var r gang.DrainReason
	assert.ErrorIs(t, r.UnmarshalText([]byte("bored")), gang.ErrInvalid)
}
