package quota_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// A Schedule survives encoding/json: its base, location and rules come
// back, and the copy answers every question as the original does.
func TestScheduleRoundTripsThroughJSON(t *testing.T) {
	spec := offPeak()
	spec.Rules[0].Window.Days = []time.Weekday{time.Monday, time.Friday}
	spec.Rules[1].Window.Until = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"UTC", "Europe/Paris", "America/New_York"} {
		t.Run(name, func(t *testing.T) {
			loc, err := time.LoadLocation(name)
			require.NoError(t, err)
			s, err := quota.NewSchedule(offPeakBase(), spec, loc)
			require.NoError(t, err)
			b, err := json.Marshal(s)
			require.NoError(t, err)
			var back *quota.Schedule
			require.NoError(t, json.Unmarshal(b, &back))
			require.NoError(t, back.Validate())
			assert.Equal(t, s.Base(), back.Base())
			assert.Equal(t, s.Spec(), back.Spec())
			assert.Equal(t, name, back.Location().String())
			at := time.Date(2026, 3, 27, 12, 0, 0, 0, loc)
			for range 20 {
				assert.Equal(t, s.At(at), back.At(at), at)
				next, ok := s.NextChange(at)
				again, _ := back.NextChange(at)
				require.True(t, ok)
				assert.True(t, next.Equal(again), at)
				at = next
			}
			b2, err := json.Marshal(back)
			require.NoError(t, err)
			assert.JSONEq(t, string(b), string(b2))
		})
	}
}

// What cannot come back faithfully is refused, typed, on either side: the
// zero Schedule, a location not read back by name, a document
// NewSchedule would refuse.
func TestScheduleJSONRefusesWhatCannotRoundTrip(t *testing.T) {
	_, err := json.Marshal(&quota.Schedule{})
	assert.ErrorIs(t, err, quota.ErrInvalidSchedule)
	assert.ErrorIs(t, (&quota.Schedule{}).Validate(), quota.ErrInvalidSchedule)
	fixed, err := quota.NewSchedule(offPeakBase(), offPeak(), time.FixedZone("UTC", 3600))
	require.NoError(t, err)
	_, err = json.Marshal(fixed)
	assert.ErrorIs(t, err, quota.ErrInvalidSchedule, "a fixed zone named UTC is not UTC")

	for name, doc := range map[string]string{
		"empty":            `{}`,
		"unknown location": `{"base":{"flavors":["H100"],"nodes":[{"name":"q","kind":"queue"}]},"location":"Mars/Olympus"}`,
		"rule of an unknown node": `{"base":{"flavors":["H100"],"nodes":[{"name":"q","kind":"queue"}]},"location":"UTC",` +
			`"rules":[{"node":"ghost","window":{},"quota":{"flavor":"H100"}}]}`,
		"not an object": `[1]`,
	} {
		var s quota.Schedule
		err := json.Unmarshal([]byte(doc), &s)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, quota.ErrInvalidSchedule, name)
		assert.ErrorIs(t, s.Validate(), quota.ErrInvalidSchedule, "%s: the receiver is unchanged", name)
	}
}
