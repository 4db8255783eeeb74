package quota

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Clock is a wall-clock time of day, in minutes after midnight (0 to
// 1439). In JSON it is "HH:MM".
type Clock int32

// ClockOf returns the Clock of h:m.
func ClockOf(h, m int) Clock { return Clock(h*60 + m) }

// Valid reports whether c is a time of day.
func (c Clock) Valid() bool { return c >= 0 && c < 24*60 }

// String prints the time of day as hh:mm.
func (c Clock) String() string { return fmt.Sprintf("%02d:%02d", c/60, c%60) }

// MarshalText writes "HH:MM".
func (c Clock) MarshalText() ([]byte, error) {
	if !c.Valid() {
		return nil, fmt.Errorf("%w: clock %d minutes", ErrInvalidSchedule, int32(c))
	}
	return []byte(c.String()), nil
}

// UnmarshalText reads "HH:MM" (00:00 to 23:59).
func (c *Clock) UnmarshalText(b []byte) error {
	var h, m int
	if n, err := fmt.Sscanf(string(b), "%d:%d", &h, &m); err != nil || n != 2 || len(b) != 5 || h < 0 || h > 23 || m < 0 || m > 59 {
		return fmt.Errorf("%w: clock %q, want HH:MM", ErrInvalidSchedule, b)
	}
	*c = ClockOf(h, m)
	return nil
}

// Window says when a rule is in force: on the listed days of the week,
// between two wall-clock times, inside an optional date range. Times of day
// are read in the Schedule's location, so 08:00 stays 08:00 across daylight
// saving changes.
//
//   - Days empty means every day. A window that starts on a listed day and
//     runs past midnight (End before Start) ends on the next day, listed or
//     not: "Friday 20:00-08:00" ends on Saturday morning.
//   - Start == End means the whole day (from midnight to midnight).
//   - From (the instant) and Until bound the whole window; zero means
//     unbounded on that side. The range is half-open: [From, Until).
type Window struct {
	Days  []time.Weekday `json:"days,omitempty"` // the weekdays it starts on, empty for every day
	Start Clock          `json:"start,omitzero"` // the time of day it starts
	End   Clock          `json:"end,omitzero"`   // the time of day it ends
	From  time.Time      `json:"from,omitzero"`  // the first instant it may be in force
	Until time.Time      `json:"until,omitzero"` // the instant it stops, exclusive
}

// weekdayNames are the JSON forms of the days, Sunday first as time.Weekday.
func weekdayNames() []string {
	return []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
}

// MarshalJSON writes days by their short English names ("mon").
func (w Window) MarshalJSON() ([]byte, error) {
	type plain Window
	days := make([]string, 0, len(w.Days))
	for _, d := range w.Days {
		if d < time.Sunday || d > time.Saturday {
			return nil, fmt.Errorf("%w: weekday %d", ErrInvalidSchedule, d)
		}
		days = append(days, weekdayNames()[d])
	}
	return json.Marshal(struct {
		Days []string `json:"days,omitempty"`
		plain
	}{days, plain(w)})
}

// UnmarshalJSON reads days by their short English names, any case.
func (w *Window) UnmarshalJSON(b []byte) error {
	type plain Window
	var v struct {
		Days []string `json:"days,omitempty"`
		plain
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*w = Window(v.plain)
	w.Days = nil
	for _, s := range v.Days {
		i := slices.Index(weekdayNames(), strings.ToLower(s))
		if i < 0 {
			return fmt.Errorf("%w: weekday %q", ErrInvalidSchedule, s)
		}
		w.Days = append(w.Days, time.Weekday(i))
	}
	return nil
}

// check refuses a malformed window; field is its place in the schedule.
func (w Window) check() (field, detail string, ok bool) {
	seen := [7]bool{}
	for _, d := range w.Days {
		if d < time.Sunday || d > time.Saturday {
			return "days", fmt.Sprintf("weekday %d", d), false
		}
		if seen[d] {
			return "days", fmt.Sprintf("%s listed twice", d), false
		}
		seen[d] = true
	}
	if !w.Start.Valid() {
		return "start", fmt.Sprintf("%d minutes", int32(w.Start)), false
	}
	if !w.End.Valid() {
		return "end", fmt.Sprintf("%d minutes", int32(w.End)), false
	}
	if !w.From.IsZero() && !w.Until.IsZero() && !w.From.Before(w.Until) {
		return "until", fmt.Sprintf("%s is not after from %s", w.Until.Format(time.RFC3339), w.From.Format(time.RFC3339)), false
	}
	return "", "", true
}

// always reports whether the window is in force at every instant of its
// date range: every day, the whole day. It then has no daily edges.
func (w Window) always() bool {
	return w.Start == w.End && (len(w.Days) == 0 || len(w.Days) == 7)
}

func (w Window) onDay(d time.Weekday) bool { return len(w.Days) == 0 || slices.Contains(w.Days, d) }

// occurrence is the window's span that starts on the calendar day y-m-d
// (in loc), and whether the window opens on that day at all. Both edges
// come from time.Date, so membership and edges agree even when a daylight
// saving change skips or repeats the wall-clock time.
func (w Window) occurrence(y int, m time.Month, d int, loc *time.Location) (open, close time.Time, ok bool) {
	day := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if !w.onDay(day.Weekday()) {
		return time.Time{}, time.Time{}, false
	}
	endDay := d
	if w.End <= w.Start {
		endDay++ // runs past midnight, or the whole day
	}
	open = time.Date(y, m, d, int(w.Start/60), int(w.Start%60), 0, 0, loc)
	close = time.Date(y, m, endDay, int(w.End/60), int(w.End%60), 0, 0, loc)
	return open, close, true
}

// contains reports whether the window is in force at t.
func (w Window) contains(t time.Time, loc *time.Location) bool {
	if !w.From.IsZero() && t.Before(w.From) || !w.Until.IsZero() && !t.Before(w.Until) {
		return false
	}
	if w.always() {
		return true
	}
	y, m, d := t.In(loc).Date()
	for off := -1; off <= 0; off++ {
		if open, close, ok := w.occurrence(y, m, d+off, loc); ok && !t.Before(open) && t.Before(close) {
			return true
		}
	}
	return false
}

// next returns the first instant after t where the window opens or closes,
// and false when it has none. Daily edges are searched eight days ahead (a
// week of them and a spare day); edges outside the date range change
// nothing, so the range's own bounds stand in for them.
func (w Window) next(t time.Time, loc *time.Location) (time.Time, bool) {
	switch {
	case !w.Until.IsZero() && !t.Before(w.Until):
		return time.Time{}, false
	case !w.From.IsZero() && t.Before(w.From):
		return w.From, true
	}
	best := w.Until // zero when unbounded
	if !w.always() {
		y, m, d := t.In(loc).Date()
		for off := -1; off <= 8; off++ {
			open, close, ok := w.occurrence(y, m, d+off, loc)
			if !ok {
				continue
			}
			for _, c := range [2]time.Time{open, close} {
				if c.After(t) && (best.IsZero() || c.Before(best)) {
					best = c
				}
			}
		}
	}
	return best, !best.IsZero()
}
