package metrics

import (
	"fmt"
	"math"
	"time"
)

// Flavor prices one GPU flavor and says what it can compute.
type Flavor struct {
	// DollarsPerGPUHour is what one GPU-hour of this flavor costs.
	DollarsPerGPUHour float64
	// PeakFLOPS is one GPU's peak dense FLOP/s, the denominator of MFU:
	// useful FLOPs are MFU x PeakFLOPS x GPUs x seconds.
	PeakFLOPS float64
	// ExternalDollarsPerGPUHour prices overflow: a GPU-hour of this model
	// bought from an external provider when a guaranteed inference queue
	// is short (0: overflow is counted, not priced).
	ExternalDollarsPerGPUHour float64
}

// H100 is the default flavor: $2.50 per GPU-hour, 989 TFLOP/s dense BF16.
func H100() Flavor { return Flavor{DollarsPerGPUHour: 2.50, PeakFLOPS: 989e12} }

// Config sets the cost model and the idle rules of a Recorder. The zero
// Config is valid: every zero field takes the default its comment names.
type Config struct {
	// Bucket is the width of the time buckets figures are kept in, and so
	// the resolution of a Report's window (default 1 h).
	Bucket time.Duration
	// Flavors prices flavors by name (the Event's Flavor); flavors not
	// listed, and events without one, use Default.
	Flavors map[string]Flavor
	// Default prices unlisted flavors (default H100()).
	Default Flavor
	// IdleThreshold is the SM activity (0-1) under which an allocated GPU
	// counts as idle (default 0.05).
	IdleThreshold float64
	// IdleWindow is how long activity must stay under the threshold before
	// the whole stretch counts as allocated-but-idle (default 15 min).
	IdleWindow time.Duration
	// IdleLimits is, per priority class, how long a workload may stay idle
	// before IdleCandidates lists it (e.g. "notebook": 2 h).
	IdleLimits map[string]time.Duration
	// DefaultIdleLimit applies to classes not in IdleLimits; 0 means such
	// workloads are never listed.
	DefaultIdleLimit time.Duration
	// RestartTime is the work a preempted workload loses again when it
	// restarts (loading, warm-up), charged per preemption as GPUs x
	// RestartTime on top of the work since its last checkpoint (default 0).
	RestartTime time.Duration
	// ReplicaRestartTime is what a stateless inference replica loses when
	// it is preempted or its node fails: no work, only the time to start
	// again and warm up (default RestartTime).
	ReplicaRestartTime time.Duration
	// MFUFloor flags busy-but-inefficient work: a workload whose SM
	// activity is at or above IdleThreshold but whose MFU stays under the
	// floor of its priority class (MFUFloors, else MFUFloor) for longer
	// than MFUWindow counts the whole stretch as low-MFU GPU-hours, and
	// Inefficient lists it. 0 turns the check off (the default).
	MFUFloor  float64
	MFUFloors map[string]float64
	// MFUWindow is how long MFU must stay under the floor (default 1 h).
	MFUWindow time.Duration
	// RightSizeTarget is the SM activity (0-1) an inference replica is
	// sized for (default 0.6): the right-sizing advice counts, hour by
	// hour, the GPUs of each team's inference beyond what its observed
	// use needs at this target.
	RightSizeTarget float64
}

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	bad := func(field, format string, args ...any) (Config, error) {
		return Config{}, &ConfigError{Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.Bucket < 0:
		return bad("Bucket", "negative: %v", c.Bucket)
	case c.Bucket > 0 && c.Bucket < time.Second:
		return bad("Bucket", "under one second: %v", c.Bucket)
	case c.IdleWindow < 0:
		return bad("IdleWindow", "negative: %v", c.IdleWindow)
	case c.DefaultIdleLimit < 0:
		return bad("DefaultIdleLimit", "negative: %v", c.DefaultIdleLimit)
	case c.RestartTime < 0:
		return bad("RestartTime", "negative: %v", c.RestartTime)
	case !(c.IdleThreshold >= 0 && c.IdleThreshold <= 1):
		return bad("IdleThreshold", "want 0-1, got %v", c.IdleThreshold)
	case c.ReplicaRestartTime < 0:
		return bad("ReplicaRestartTime", "negative: %v", c.ReplicaRestartTime)
	case !(c.MFUFloor >= 0 && c.MFUFloor <= 1):
		return bad("MFUFloor", "want 0-1, got %v", c.MFUFloor)
	case c.MFUWindow < 0:
		return bad("MFUWindow", "negative: %v", c.MFUWindow)
	case !(c.RightSizeTarget >= 0 && c.RightSizeTarget <= 1):
		return bad("RightSizeTarget", "want 0-1, got %v", c.RightSizeTarget)
	}
	for class, f := range c.MFUFloors {
		if !(f >= 0 && f <= 1) {
			return bad(fmt.Sprintf("MFUFloors[%q]", class), "want 0-1, got %v", f)
		}
	}
	if err := checkFlavor("Default", c.Default); err != nil {
		return Config{}, err
	}
	for name, f := range c.Flavors {
		if err := checkFlavor(fmt.Sprintf("Flavors[%q]", name), f); err != nil {
			return Config{}, err
		}
	}
	for class, d := range c.IdleLimits {
		if d <= 0 {
			return bad(fmt.Sprintf("IdleLimits[%q]", class), "not positive: %v", d)
		}
	}
	if c.Bucket == 0 {
		c.Bucket = time.Hour
	}
	if c.Default == (Flavor{}) {
		c.Default = H100()
	}
	if c.IdleThreshold == 0 {
		c.IdleThreshold = 0.05
	}
	if c.IdleWindow == 0 {
		c.IdleWindow = 15 * time.Minute
	}
	if c.ReplicaRestartTime == 0 {
		c.ReplicaRestartTime = c.RestartTime
	}
	if c.MFUWindow == 0 {
		c.MFUWindow = time.Hour
	}
	if c.RightSizeTarget == 0 {
		c.RightSizeTarget = 0.6
	}
	return c, nil
}

func checkFlavor(field string, f Flavor) error {
	ok := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	if !ok(f.DollarsPerGPUHour) {
		return &ConfigError{Field: field + ".DollarsPerGPUHour", Detail: fmt.Sprintf("want >= 0, got %v", f.DollarsPerGPUHour)}
	}
	if !ok(f.PeakFLOPS) {
		return &ConfigError{Field: field + ".PeakFLOPS", Detail: fmt.Sprintf("want >= 0, got %v", f.PeakFLOPS)}
	}
	return nil
}
