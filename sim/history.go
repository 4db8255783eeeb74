package sim

import (
	"math"
	"slices"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// History records a scheduler's events and fits the workload model to
// them: the demand model of a forecast "taken from the recorded history".
// It is an Observer (a simulation feeds it), or a host passes it every
// Decisions.Events in order.
//
// What it fits, and how:
//   - inference: the mean GPUs running in each hour of the day; the
//     quietest hour is the trough, the busiest the peak, and the hours
//     nearer the trough than the peak are the trough's length;
//   - training: the offered load, as the GPUs of every distinct training
//     workload submitted times the mean run time, over the fleet's
//     GPU-hours; the median run time of the runs that finished without
//     being preempted;
//   - batch: the median run time the same way.
//
// Spikes, backlogs and the rest keep the model's defaults.
type History struct {
	began, last time.Time
	inference   int // GPUs of inference replicas running now
	hourGPUs    [24]float64
	hourSecs    [24]float64

	seen        map[string]bool // submitted before: a requeue
	requeued    map[string]bool
	trainingGPU float64 // GPUs of distinct training workloads submitted
	training    []float64
	batch       []float64
}

// Events records the events of one cycle, in order.
func (h *History) Events(events []fleet.Event) error {
	if h.seen == nil {
		h.seen, h.requeued = map[string]bool{}, map[string]bool{}
	}
	for i := range events {
		e := &events[i]
		h.advance(e.Time)
		switch e.Kind {
		case fleet.EventSubmitted:
			if h.seen[e.Workload] {
				h.requeued[e.Workload] = true
				continue
			}
			h.seen[e.Workload] = true
			if e.Shape == gang.Training {
				h.trainingGPU += float64(e.GPUs)
			}
		case fleet.EventAdmitted:
			if e.Shape == gang.Inference {
				h.inference += e.GPUs
			}
		case fleet.EventExited:
			switch e.Shape {
			case gang.Inference:
				h.inference -= e.GPUs
			case gang.Training, gang.Batch:
				if e.Exit != gang.ExitFinished || h.requeued[e.Workload] {
					break
				}
				if e.Shape == gang.Training {
					h.training = append(h.training, e.Runtime.Seconds())
				} else {
					h.batch = append(h.batch, e.Runtime.Seconds())
				}
			}
			delete(h.seen, e.Workload)
			delete(h.requeued, e.Workload)
		case fleet.EventCancelled:
			delete(h.seen, e.Workload)
		}
	}
	return nil
}

// Usage ignores usage samples.
func (h *History) Usage(time.Time, []Usage) error { return nil }

// Snapshot ignores snapshots.
func (h *History) Snapshot(fleet.Snapshot) error { return nil }

// advance integrates the inference GPUs up to t, into the hour of the day
// the stretch began in (cycles are minutes apart, not hours).
func (h *History) advance(t time.Time) {
	if h.began.IsZero() {
		h.began, h.last = t, t
		return
	}
	if !t.After(h.last) {
		return
	}
	secs := t.Sub(h.last).Seconds()
	hr := h.last.UTC().Hour()
	h.hourGPUs[hr] += float64(h.inference) * secs
	h.hourSecs[hr] += secs
	h.last = t
}

// Hours is the span of time recorded.
func (h *History) Hours() float64 { return h.last.Sub(h.began).Hours() }

// Workload is the workload model fitted to the history on a fleet of
// gpus GPUs; fields it has no data for are left zero (the defaults).
func (h *History) Workload(gpus int) Workload {
	var w Workload
	g := float64(gpus)
	if g <= 0 || h.Hours() <= 0 {
		return w
	}
	lo, hi := math.Inf(1), 0.0
	var mean [24]float64
	for hr := range 24 {
		if h.hourSecs[hr] == 0 {
			return w
		}
		mean[hr] = h.hourGPUs[hr] / h.hourSecs[hr]
		lo, hi = min(lo, mean[hr]), max(hi, mean[hr])
	}
	w.InferenceTrough, w.InferencePeak = lo/g, hi/g
	for _, m := range mean {
		if m-lo < hi-m {
			w.TroughHours++
		}
	}
	if len(h.training) > 0 {
		w.TrainingMedian = median(h.training)
		mean := 0.0
		for _, s := range h.training {
			mean += s
		}
		mean /= float64(len(h.training)) * 3600
		w.TrainingLoad = h.trainingGPU * mean / (g * h.Hours())
	}
	if len(h.batch) > 0 {
		w.BatchMedian = median(h.batch)
	}
	return w
}

// median of run times in seconds, as a duration rounded to the minute.
func median(secs []float64) time.Duration {
	s := slices.Clone(secs)
	slices.Sort(s)
	return time.Duration(quantile(s, 0.5) * float64(time.Second)).Round(time.Minute)
}
