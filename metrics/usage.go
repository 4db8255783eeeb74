package metrics

import (
	"fmt"
	"sort"
	"time"
)

// Sample is one usage reading of a running workload, taken by the host
// (from DCGM or the framework). It holds from its time until the next
// sample of the same workload or its exit: figures integrate samples as
// piecewise constant, so irregular sampling is weighted correctly. Time
// before a workload's first sample counts as allocated but not sampled.
type Sample struct {
	// SMActivity is the mean fraction (0-1) of time the GPUs' SMs were busy.
	SMActivity float64
	// MFU is model FLOPs utilisation (0-1) against the flavor's PeakFLOPS;
	// 0 when unknown.
	MFU float64
	// FLOPS is the achieved FLOP/s of the whole workload; when positive it
	// is used instead of MFU.
	FLOPS float64
}

// Observe records a usage sample for a running workload at now. It
// refuses (changing nothing) a sample out of range, older than the latest
// input, or for a workload that is not running.
func (r *Recorder) Observe(now time.Time, id string, s Sample) error {
	if err := r.checkTime("sample", now, r.clock, r.began); err != nil {
		err.Workload = id
		return err
	}
	bad := func(format string, args ...any) error {
		return &InputError{What: "sample", Workload: id, Detail: fmt.Sprintf(format, args...), Err: ErrInvalidInput}
	}
	switch {
	case !(s.SMActivity >= 0 && s.SMActivity <= 1):
		return bad("SM activity %v outside 0-1", s.SMActivity)
	case !(s.MFU >= 0 && s.MFU <= 1):
		return bad("MFU %v outside 0-1", s.MFU)
	case !(s.FLOPS >= 0) || !finite(s.FLOPS):
		return bad("FLOPS %v", s.FLOPS)
	}
	w := r.find(id)
	if w == nil {
		return &InputError{What: "sample", Workload: id, Err: ErrUnknownWorkload}
	}
	r.tick(now)
	t := now.UnixNano()
	r.integrate(&r.st, w, t)
	idle := s.SMActivity < r.cfg.IdleThreshold
	switch {
	case idle && w.idleSince == noIdle:
		w.idleSince = t
	case !idle:
		r.closeIdle(&r.st, w, t)
	}
	w.sampled = true
	w.sm = s.SMActivity
	w.flops = s.FLOPS
	if w.flops == 0 {
		w.flops = s.MFU * r.price[w.flavor].PeakFLOPS * w.gpus
	}
	floor := r.mfuFloor(w.class)
	low := floor > 0 && !idle && r.mfu(w) < floor
	switch {
	case low && w.lowSince == noIdle:
		w.lowSince = t
	case !low:
		r.closeLow(&r.st, w, t)
	}
	return nil
}

// mfuFloor is the MFU floor of a priority class, 0 for none.
func (r *Recorder) mfuFloor(class int32) float64 {
	if f, ok := r.cfg.MFUFloors[r.classes.names[class]]; ok {
		return f
	}
	return r.cfg.MFUFloor
}

// mfu is w's MFU from its latest sample.
func (r *Recorder) mfu(w *workload) float64 {
	return ratio(w.flops, r.price[w.flavor].PeakFLOPS*w.gpus)
}

// Inefficiency is a running workload busy under its class's MFU floor for
// longer than Config.MFUWindow: its GPUs work, but do little useful math.
type Inefficiency struct {
	ID, Queue, Class string        // the workload, its queue and its class
	GPUs             int           // its GPUs
	MFU, Floor       float64       // its MFU over the window, and its class's floor
	For              time.Duration // how long it has been under the floor
}

// Inefficient lists the running workloads busy under their MFU floor for
// longer than Config.MFUWindow as of now, longest first, then by ID. It
// changes nothing.
func (r *Recorder) Inefficient(now time.Time) []Inefficiency {
	t := now.UnixNano()
	var out []Inefficiency
	for i := range r.work {
		w := &r.work[i]
		if w.id == "" || w.lowSince == noIdle || t-w.lowSince <= int64(r.cfg.MFUWindow) {
			continue
		}
		out = append(out, Inefficiency{ID: w.id, Queue: r.teams.names[w.team], Class: r.classes.names[w.class],
			GPUs: int(w.gpus), MFU: r.mfu(w), Floor: r.mfuFloor(w.class), For: time.Duration(t - w.lowSince)})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].For != out[b].For {
			return out[a].For > out[b].For
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// IdleCandidate is a running workload idle past its class's limit.
type IdleCandidate struct {
	ID      string        // the workload
	Queue   string        // its queue
	Class   string        // its priority class
	GPUs    int           // its GPUs
	IdleFor time.Duration // how long it has been idle
	Limit   time.Duration // its class's idle limit
}

// IdleCandidates lists the running workloads whose SM activity has stayed
// under the idle threshold, as of now, for longer than their priority
// class's limit (Config.IdleLimits, else DefaultIdleLimit): the host may
// reclaim them. Longest idle first, then by ID. It changes nothing.
func (r *Recorder) IdleCandidates(now time.Time) []IdleCandidate {
	t := now.UnixNano()
	var out []IdleCandidate
	for i := range r.work {
		w := &r.work[i]
		if w.id == "" || w.idleSince == noIdle || t <= w.idleSince {
			continue
		}
		class := r.classes.names[w.class]
		limit, ok := r.cfg.IdleLimits[class]
		if !ok {
			limit = r.cfg.DefaultIdleLimit
		}
		idle := time.Duration(t - w.idleSince)
		if limit <= 0 || idle <= limit {
			continue
		}
		out = append(out, IdleCandidate{
			ID: w.id, Queue: r.teams.names[w.team], Class: class,
			GPUs: int(w.gpus), IdleFor: idle, Limit: limit,
		})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].IdleFor != out[b].IdleFor {
			return out[a].IdleFor > out[b].IdleFor
		}
		return out[a].ID < out[b].ID
	})
	return out
}
