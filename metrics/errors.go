package metrics

import (
	"errors"
	"fmt"
)

// Sentinels. Every error the package returns wraps one of them.
var (
	// ErrInvalidConfig is wrapped by every *ConfigError.
	ErrInvalidConfig = errors.New("metrics: invalid config")
	// ErrInvalidInput is wrapped by every *InputError: an event, sample or
	// snapshot that is malformed on its own.
	ErrInvalidInput = errors.New("metrics: invalid input")
	// ErrOutOfOrder: an input is older than one already recorded. Inputs
	// of every kind share one clock that never goes back.
	ErrOutOfOrder = errors.New("metrics: input out of time order")
	// ErrUnknownWorkload: a usage sample for a workload that is not
	// running (no admission recorded, or it has exited).
	ErrUnknownWorkload = errors.New("metrics: unknown workload")
)

// ConfigError names the Config field that broke a rule.
type ConfigError struct {
	Field  string // e.g. "IdleThreshold" or `Flavors["h100"].DollarsPerGPUHour`
	Detail string // what is wrong, in words
}

// Error says what was refused, where, and why.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s: %s: %s", ErrInvalidConfig, e.Field, e.Detail)
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// InputError says which input was refused and why. Err is ErrInvalidInput,
// ErrOutOfOrder or ErrUnknownWorkload.
type InputError struct {
	What     string // "event", "sample" or "snapshot"
	Index    int    // position in a RecordAll batch, else 0
	Workload string // the workload concerned, if any
	Detail   string // what is wrong, in words
	Err      error  // the sentinel
}

// Error says what was refused, where, and why.
func (e *InputError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Err, e.What)
	if e.Index > 0 {
		s += fmt.Sprintf(" #%d", e.Index)
	}
	if e.Workload != "" {
		s += fmt.Sprintf(" of %q", e.Workload)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *InputError) Unwrap() error { return e.Err }
