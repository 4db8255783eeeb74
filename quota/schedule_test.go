package quota_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/quota"
)

func offPeakBase() quota.Spec {
	return quota.Spec{
		Flavors: []string{"H100"},
		Nodes: []quota.NodeSpec{
			{Name: "all", Kind: quota.Cohort},
			{Name: "inference", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 1200}}},
			{Name: "batch", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 400}}},
		},
	}
}

// Batch has no guarantee by day; inference gives up 400 GPUs at night.
func offPeak() quota.ScheduleSpec {
	return quota.ScheduleSpec{Rules: []quota.ScheduleRule{
		{Node: "batch", Window: quota.Window{Start: quota.ClockOf(8, 0), End: quota.ClockOf(20, 0)},
			Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 0}},
		{Node: "inference", Window: quota.Window{Start: quota.ClockOf(20, 0), End: quota.ClockOf(8, 0)},
			Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 800}},
	}}
}

func TestScheduleAtAndNextChange(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database")
	}
	s, err := quota.NewSchedule(offPeakBase(), offPeak(), paris)
	require.NoError(t, err)

	noon := time.Date(2026, 3, 27, 12, 0, 0, 0, paris)
	assert.Equal(t, []quota.NodeQuota{
		{Node: "batch", Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 0}},
		{Node: "inference", Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 1200}},
	}, s.At(noon))
	assert.Equal(t, int64(1200), s.Guaranteed("H100", noon))

	next, ok := s.NextChange(noon)
	require.True(t, ok)
	assert.Equal(t, time.Date(2026, 3, 27, 20, 0, 0, 0, paris), next)
	assert.Equal(t, int64(1200), s.Guaranteed("H100", next)) // 800 + 400

	// Daylight saving starts on 29 March 2026 in Paris: 08:00 stays 08:00.
	var edges []string
	for t0, i := noon, 0; i < 6; i++ {
		t0, _ = s.NextChange(t0)
		edges = append(edges, t0.Format("Jan 2 15:04 MST"))
	}
	assert.Equal(t, []string{"Mar 27 20:00 CET", "Mar 28 08:00 CET", "Mar 28 20:00 CET",
		"Mar 29 08:00 CEST", "Mar 29 20:00 CEST", "Mar 30 08:00 CEST"}, edges)

	n, ok := s.Nominal("batch", "H100", time.Date(2026, 3, 29, 23, 0, 0, 0, paris))
	assert.True(t, ok)
	assert.Equal(t, int64(400), n)
	spec := s.SpecAt(noon)
	assert.Equal(t, int64(0), spec.Nodes[2].Quotas[0].Nominal)
}

func TestScheduleDatedExceptionWinsAndEnds(t *testing.T) {
	spec := offPeak()
	from := time.Date(2026, 6, 1, 6, 0, 0, 0, time.UTC)
	until := from.Add(36 * time.Hour)
	spec.Rules = append(spec.Rules, quota.ScheduleRule{Node: "batch",
		Window: quota.Window{From: from, Until: until}, Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 600}})
	s, err := quota.NewSchedule(offPeakBase(), spec, nil)
	require.NoError(t, err)
	n, _ := s.Nominal("batch", "H100", from.Add(6*time.Hour)) // noon: the day rule is overridden
	assert.Equal(t, int64(600), n)
	n, _ = s.Nominal("batch", "H100", until.Add(time.Hour)) // 19:00 next day: the day rule again
	assert.Equal(t, int64(0), n)
	next, ok := s.NextChange(from.Add(-time.Hour))
	require.True(t, ok)
	assert.Equal(t, from, next)
}

func TestScheduleValidateCapacity(t *testing.T) {
	spec := offPeak()
	spec.Rules[1].Quota.Nominal = 1200 // inference keeps everything at night
	s, err := quota.NewSchedule(offPeakBase(), spec, nil)
	require.NoError(t, err)
	from := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	err = s.ValidateCapacity(map[string]int64{"H100": 1400}, from)
	var ce *quota.ScheduleCapacityError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, quota.ErrOverPromised)
	assert.Equal(t, quota.ScheduleCapacityError{Node: "batch", Flavor: "H100",
		At: time.Date(2026, 6, 1, 20, 0, 0, 0, time.UTC), Guaranteed: 1600, Capacity: 1400}, *ce)
	assert.NoError(t, s.ValidateCapacity(map[string]int64{"H100": 1600}, from))
}

func TestScheduleRefusals(t *testing.T) {
	day := quota.Window{Start: quota.ClockOf(8, 0), End: quota.ClockOf(20, 0)}
	h100 := func(n int64) quota.FlavorQuota { return quota.FlavorQuota{Flavor: "H100", Nominal: n} }
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		rule  quota.ScheduleRule
		field string
		want  error
	}{
		{"unknown node", quota.ScheduleRule{Node: "nobody", Window: day, Quota: h100(1)}, "rules[0].node", quota.ErrUnknownNode},
		{"unknown flavor", quota.ScheduleRule{Node: "batch", Window: day, Quota: quota.FlavorQuota{Flavor: "A100"}}, "rules[0].quota.flavor", quota.ErrUnknownFlavor},
		{"flavor not listed", quota.ScheduleRule{Node: "all", Window: day, Quota: h100(1)}, "rules[0].quota.flavor", quota.ErrFlavorNotServed},
		{"bad clock", quota.ScheduleRule{Node: "batch", Window: quota.Window{Start: 24 * 60}, Quota: h100(1)}, "rules[0].window.start", quota.ErrInvalidSchedule},
		{"bad day", quota.ScheduleRule{Node: "batch", Window: quota.Window{Days: []time.Weekday{9}}, Quota: h100(1)}, "rules[0].window.days", quota.ErrInvalidSchedule},
		{"day twice", quota.ScheduleRule{Node: "batch", Window: quota.Window{Days: []time.Weekday{1, 1}}, Quota: h100(1)}, "rules[0].window.days", quota.ErrInvalidSchedule},
		{"empty range", quota.ScheduleRule{Node: "batch", Window: quota.Window{From: t0, Until: t0}, Quota: h100(1)}, "rules[0].window.until", quota.ErrInvalidSchedule},
		{"negative nominal", quota.ScheduleRule{Node: "batch", Window: day, Quota: h100(-1)}, "rules[0].quota", quota.ErrNegativeAmount},
		{"lending above nominal", quota.ScheduleRule{Node: "batch", Window: day,
			Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 1, LendingLimit: quota.LimitOf(2)}}, "rules[0].quota", quota.ErrLendingAboveQuota},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := quota.NewSchedule(offPeakBase(), quota.ScheduleSpec{Rules: []quota.ScheduleRule{tc.rule}}, nil)
			var se *quota.SpecError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.field, se.Field)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, quota.ErrInvalidSchedule)
		})
	}
}

func TestScheduleJSON(t *testing.T) {
	spec := offPeak()
	spec.Rules[0].Window.Days = []time.Weekday{time.Monday, time.Friday}
	spec.Rules[0].Window.From = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"days":["mon","fri"]`)
	assert.Contains(t, string(b), `"start":"08:00"`)
	var back quota.ScheduleSpec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, spec, back)
	assert.True(t, errors.Is(json.Unmarshal([]byte(`{"rules":[{"window":{"start":"8h"}}]}`), &back), quota.ErrInvalidSchedule))
}

// Between two consecutive boundaries nothing changes: the values at any
// instant equal those at the boundary before it. So checking at every
// boundary checks every instant.
func TestScheduleBoundariesCoverEveryChange(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.UTC
	}
	t0 := time.Date(2026, 3, 25, 0, 0, 0, 0, paris)
	rapid.Check(t, func(rt *rapid.T) {
		var spec quota.ScheduleSpec
		for i := range rapid.IntRange(1, 4).Draw(rt, "rules") {
			w := quota.Window{
				Start: quota.Clock(rapid.IntRange(0, 47).Draw(rt, "start") * 30),
				End:   quota.Clock(rapid.IntRange(0, 47).Draw(rt, "end") * 30),
			}
			for d := range 7 {
				if rapid.IntRange(0, 2).Draw(rt, "day") == 0 {
					w.Days = append(w.Days, time.Weekday(d))
				}
			}
			if rapid.Bool().Draw(rt, "dated") {
				w.From = t0.Add(time.Duration(rapid.IntRange(0, 200).Draw(rt, "from")) * time.Hour)
				w.Until = w.From.Add(time.Duration(rapid.IntRange(1, 200).Draw(rt, "len")) * time.Hour)
			}
			node := []string{"batch", "inference"}[i%2]
			spec.Rules = append(spec.Rules, quota.ScheduleRule{Node: node, Window: w,
				Quota: quota.FlavorQuota{Flavor: "H100", Nominal: int64(rapid.IntRange(0, 2000).Draw(rt, "nominal"))}})
		}
		s, err := quota.NewSchedule(offPeakBase(), spec, paris)
		require.NoError(rt, err)
		at := t0
		for range 40 {
			next, ok := s.NextChange(at)
			if !ok {
				next = at.Add(30 * 24 * time.Hour)
			}
			require.True(rt, next.After(at))
			want := s.At(at)
			for _, frac := range []int64{1, 3, 7} {
				mid := at.Add(time.Duration(int64(next.Sub(at)) * frac / 8))
				require.Equal(rt, want, s.At(mid), "between %s and %s", at, next)
			}
			require.Equal(rt, want, s.At(next.Add(-time.Nanosecond)))
			if !ok {
				return
			}
			at = next
		}
	})
}

// A clock reads "HH:MM" from 00:00 to 23:59, both included, and nothing
// past either end.
func TestClockTextBounds(t *testing.T) {
	for _, tc := range []struct {
		text string
		want quota.Clock
		ok   bool
	}{
		{"00:00", quota.ClockOf(0, 0), true},
		{"23:59", quota.ClockOf(23, 59), true},
		{"12:59", quota.ClockOf(12, 59), true},
		{"24:00", 0, false},
		{"12:60", 0, false},
		{"-1:00", 0, false},
		{"7:30", 0, false},
	} {
		t.Run(tc.text, func(t *testing.T) {
			var c quota.Clock
			err := c.UnmarshalText([]byte(tc.text))
			if !tc.ok {
				assert.ErrorIs(t, err, quota.ErrInvalidSchedule)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, c)
			b, err := c.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tc.text, string(b))
		})
	}
}

// A whole-day window (start equal to end) on listed days is in force on
// those days only, midnight to midnight; listing all seven days is the
// same as listing none.
func TestWholeDayWindowHoldsOnItsDaysOnly(t *testing.T) {
	weekend := []time.Weekday{time.Saturday, time.Sunday}
	every := []time.Weekday{0, 1, 2, 3, 4, 5, 6}
	at := func(day, hour, minute int) time.Time { return time.Date(2026, 6, day, hour, minute, 0, 0, time.UTC) } // 1 June 2026: a Monday
	for _, tc := range []struct {
		name string
		days []time.Weekday
		at   time.Time
		want int64
	}{
		{"Saturday just after midnight", weekend, at(6, 0, 0), 0},
		{"Sunday before midnight", weekend, at(7, 23, 59), 0},
		{"Friday before midnight", weekend, at(5, 23, 59), 400},
		{"Monday at midnight", weekend, at(8, 0, 0), 400},
		{"Wednesday noon", weekend, at(3, 12, 0), 400},
		{"Wednesday noon, every day listed", every, at(3, 12, 0), 0},
		{"Wednesday noon, no day listed", nil, at(3, 12, 0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := quota.NewSchedule(offPeakBase(), quota.ScheduleSpec{Rules: []quota.ScheduleRule{{Node: "batch",
				Window: quota.Window{Days: tc.days}, Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 0}}}}, nil)
			require.NoError(t, err)
			n, ok := s.Nominal("batch", "H100", tc.at)
			require.True(t, ok)
			assert.Equal(t, tc.want, n)
		})
	}
}
