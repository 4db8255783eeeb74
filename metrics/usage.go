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
	return nil
}

// IdleCandidate is a running workload idle past its class's limit.
type IdleCandidate struct {
	ID      string
	Queue   string
	Class   string
	GPUs    int
	IdleFor time.Duration
	Limit   time.Duration
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
