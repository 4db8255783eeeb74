package quota

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// scheduleJSON is a Schedule as JSON: its base, the name of its location
// and its rules.
type scheduleJSON struct {
	Base     Spec           `json:"base"`
	Location string         `json:"location"`
	Rules    []ScheduleRule `json:"rules,omitempty"`
}

// Validate reports a Schedule that NewSchedule did not make (the zero
// Schedule), which no question may be asked of, wrapping
// ErrInvalidSchedule.
func (s *Schedule) Validate() error {
	if s == nil || s.base == nil || s.loc == nil {
		return fmt.Errorf("%w: not made by NewSchedule", ErrInvalidSchedule)
	}
	return nil
}

// MarshalJSON writes the schedule's base, the name of its location (as
// time.LoadLocation reads it) and its rules, so that a persisted
// snapshot keeps its schedule. It refuses a schedule Validate refuses
// and one whose location is not read back by its name (a time.FixedZone
// is not): the windows would be read in another zone.
func (s *Schedule) MarshalJSON() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	name := s.loc.String()
	if back, err := time.LoadLocation(name); err != nil || back.String() != name || (back == time.UTC) != (s.loc == time.UTC) {
		return nil, fmt.Errorf("%w: location %q cannot be read back by name", ErrInvalidSchedule, name)
	}
	return json.Marshal(scheduleJSON{Base: s.Base(), Location: name, Rules: s.Spec().Rules})
}

// UnmarshalJSON reads what MarshalJSON writes and checks it as
// NewSchedule does, reading the location with time.LoadLocation ("" is
// UTC). A document without a base, or a schedule NewSchedule refuses,
// is refused (wrapping ErrInvalidSchedule); the receiver is then
// unchanged.
func (s *Schedule) UnmarshalJSON(b []byte) error {
	var x scheduleJSON
	if err := json.Unmarshal(b, &x); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSchedule, err)
	}
	if len(x.Base.Nodes) == 0 {
		return fmt.Errorf("%w: base: no nodes", ErrInvalidSchedule)
	}
	loc, err := time.LoadLocation(x.Location)
	if err != nil {
		return fmt.Errorf("%w: location %q: %w", ErrInvalidSchedule, x.Location, err)
	}
	ns, err := NewSchedule(x.Base, ScheduleSpec{Rules: x.Rules}, loc)
	if err != nil && !errors.Is(err, ErrInvalidSchedule) {
		err = fmt.Errorf("%w: base: %w", ErrInvalidSchedule, err)
	}
	if err != nil {
		return err
	}
	*s = *ns
	return nil
}
