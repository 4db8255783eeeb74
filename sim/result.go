package sim

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fleetsched/fleet"
)

// Result holds the figures of one run. GPU-hours integrate the host's own
// bookkeeping exactly over simulated time; quantiles are exact.
type Result struct {
	Policy string    // "static" or "borrow"
	GPUs   int       // the fleet's size
	Seed   uint64    // the random seed
	Start  time.Time // the simulated start
	Hours  float64   // simulated hours

	InferenceNominal, ResearchNominal int // the inference and research guarantees, in GPUs

	// Simulation effort: agenda events, cycles, scheduler events. Cycles
	// counts the cycles the host was due to run; Skipped those of them it
	// did not call Schedule for, since the scheduler's NextChange said
	// they would decide nothing.
	Events, Cycles, SchedulerEvents int
	Skipped                         int

	// GPU-hours by shape, of idle healthy GPUs, of down GPUs.
	InferenceGPUh, TrainingGPUh, BatchGPUh, IdleGPUh, DownGPUh float64
	// ReservedIdleGPUh is the inference guarantee its replicas did not
	// use: idle under a static split, lent under borrowing.
	ReservedIdleGPUh float64
	// BorrowedGPUh is the training and batch use beyond their own share
	// (the fleet minus the inference guarantee): capacity lent by inference.
	BorrowedGPUh float64
	// BusyGPUh weighs allocated GPU-hours by SM activity; UsefulGPUh by MFU.
	BusyGPUh, UsefulGPUh float64

	// Preemption: drains asked, kills at the deadline, drains made for an
	// inference replica, work lost since the last checkpoint and the
	// restart overhead paid, in GPU-hours.
	Drains, Kills, InferenceReclaims int
	// Shrinks counts pods elastic batch gave up (each also a drain);
	// Grows the cycles that started pods again.
	Shrinks, Grows                 int
	PreemptedLostGPUh, RestartGPUh float64
	// Defragmentation moves (drains of reason defrag, counted in Drains)
	// and the work they lost with their restarts, in GPU-hours (counted
	// in the two above too).
	Moves        int
	MoveLostGPUh float64
	// Hot-swaps: pods lost under gangs that survive a node loss, gangs
	// whose lost pods were all replaced and the time that took, gangs
	// requeued whole after the wait (counted in FailedRuns too), the work
	// lost back to the last checkpoint and the restarts paid, in GPU-hours.
	PodsLost, HotSwaps, HotSwapsFailed  int
	HotSwapWaits                        []time.Duration
	HotSwapLostGPUh, HotSwapRestartGPUh float64
	// Node failures: nodes, runs they ended, the work those runs lost
	// since their last checkpoint (none for an inference replica) and
	// their restart (and, for a replica, warm-up) in GPU-hours.
	NodeFailures, FailedRuns            int
	FailureLostGPUh, FailureRestartGPUh float64
	Requeues, Checkpoints, TurnedAway   int
	Spikes, ScaleUps, ScaleDowns        int
	Completed                           [4]int // by gang.Shape

	// InferenceWaits are the admission waits of inference replicas;
	// ReclaimWaits those of replicas for which victims were drained, and
	// RestoreTimes, for those, the time from the first drain to admission:
	// the drain contract bounds it by the grace period plus a cycle.
	InferenceWaits, ReclaimWaits, RestoreTimes []time.Duration
	// Reclaims are the same reclaims in time order, for charts.
	Reclaims []Reclaim
	// Waits are the admission waits per queue, sorted by queue name.
	Waits []QueueWaits

	// Series has one point per sample period.
	Series []Point

	// Queues is what each queue held, in GPU-hours, booked work apart,
	// by queue name. BookedGPUh is what the workloads of bookings held.
	Queues     []QueueUse
	BookedGPUh float64
	// OverflowGPUh integrates Decisions.Overflow: the GPUs guaranteed
	// inference queues were short of past the scheduler's target.
	// UnservedGPUh integrates all inference demand left pending, within
	// the guarantee or above it: the traffic an external provider takes.
	OverflowGPUh, UnservedGPUh float64

	// Scheduler is the scheduler as the run left it: a host carries on
	// from it with Config.From (after acting on it, say approving a
	// booking). Its last cycle's admissions count as started.
	Scheduler *fleet.Scheduler

	// Violations lists host-side breaches of the scheduler's contracts
	// (double-booked GPUs, decisions about unknown work, and with
	// Config.Check, snapshot sums that do not add up). Empty is correct.
	Violations []string

	waits map[string][]float64
}

// QueueUse is one queue's allocation over a run, in GPU-hours; OffPeak
// is the part held while inference demand was at its daily trough.
type QueueUse struct {
	Queue string // the queue
	// Inference is set when the queue ran inference replicas.
	Inference         bool
	GPUh, OffPeakGPUh float64
}

// Reclaim is one inference replica admitted on capacity taken back by
// drains: when, its wait since submission, and the time since the first
// drain made for it.
type Reclaim struct {
	At            time.Duration // since the start
	Wait, Restore time.Duration // since submission; since the first drain for it
}

// QueueWaits is the admission-wait distribution of one queue.
type QueueWaits struct {
	Queue         string        // the queue
	Admissions    int           // admissions counted
	P50, P90, P99 time.Duration // quantiles of the wait
}

// Point is the fleet at one sample time, in GPUs.
type Point struct {
	At                            time.Duration // since the start
	Demand                        int           // inference demand
	Inference, Training, Batch    int           // GPUs held by each shape
	Borrowed                      int           // training and batch above their own share
	Idle, Stranded, Down          int           // idle healthy GPUs, stranded ones, GPUs on down nodes
	PendingResearch, PendingBatch int           // workloads pending in research and in batch
}

func (r *Result) wait(queue string, d time.Duration) {
	r.waits[queue] = append(r.waits[queue], d.Seconds())
}

func (r *Result) inferenceWait(at, d time.Duration, reclaim bool, restore time.Duration) {
	r.InferenceWaits = append(r.InferenceWaits, d)
	if reclaim {
		r.Reclaims = append(r.Reclaims, Reclaim{At: at, Wait: d, Restore: restore})
		r.ReclaimWaits = append(r.ReclaimWaits, d)
		r.RestoreTimes = append(r.RestoreTimes, restore)
	}
}

func (r *Result) settle() {
	slices.Sort(r.InferenceWaits)
	slices.Sort(r.ReclaimWaits)
	slices.Sort(r.RestoreTimes)
	r.Waits = r.Waits[:0]
	for _, q := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.waits {
			if !yield(k) {
				return
			}
		}
	}) {
		w := r.waits[q]
		slices.Sort(w)
		sec := func(p float64) time.Duration {
			return time.Duration(quantile(w, p) * float64(time.Second)).Round(time.Second)
		}
		r.Waits = append(r.Waits, QueueWaits{Queue: q, Admissions: len(w), P50: sec(0.5), P90: sec(0.9), P99: sec(0.99)})
	}
	slices.SortFunc(r.Queues, func(a, b QueueUse) int { return cmp.Compare(a.Queue, b.Queue) })
}

// quantile is the nearest-rank quantile of sorted values; 0 when empty.
func quantile[T int64 | float64 | time.Duration](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Quantile is the nearest-rank quantile p of sorted durations.
func Quantile(sorted []time.Duration, p float64) time.Duration { return quantile(sorted, p) }

// Month scales a per-run figure to a 30-day month.
func (r *Result) Month(v float64) float64 {
	if r.Hours == 0 {
		return 0
	}
	return v * 720 / r.Hours
}

// Avg turns GPU-hours into average GPUs over the run.
func (r *Result) Avg(gpuh float64) float64 {
	if r.Hours == 0 {
		return 0
	}
	return gpuh / r.Hours
}

// StrandedShare is the mean share of healthy GPUs stranded (free on
// partly used nodes) over the samples, and its maximum.
func (r *Result) StrandedShare() (mean, peak float64) {
	for _, p := range r.Series {
		healthy := r.GPUs - p.Down
		if healthy == 0 {
			continue
		}
		s := float64(p.Stranded) / float64(healthy)
		mean += s
		peak = max(peak, s)
	}
	if len(r.Series) > 0 {
		mean /= float64(len(r.Series))
	}
	return mean, peak
}

// WriteText writes every figure of the run, in a fixed order: two runs
// of the same Config write the same bytes.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("policy %s, %d GPUs, seed %d, %.1f h from %s\n", r.Policy, r.GPUs, r.Seed, r.Hours, r.Start.Format(time.RFC3339))
	p("effort: %d events, %d cycles, %d scheduler events\n", r.Events, r.Cycles, r.SchedulerEvents)
	p("GPU-h: inference %.1f training %.1f batch %.1f idle %.1f down %.1f\n", r.InferenceGPUh, r.TrainingGPUh, r.BatchGPUh, r.IdleGPUh, r.DownGPUh)
	p("GPU-h: reserved-idle %.1f borrowed %.1f busy %.1f useful %.1f\n", r.ReservedIdleGPUh, r.BorrowedGPUh, r.BusyGPUh, r.UsefulGPUh)
	p("preemption: drains %d (pods of elastic batch %d) kills %d inference-reclaims %d lost %.1f GPU-h restart %.1f GPU-h grows %d\n", r.Drains, r.Shrinks, r.Kills, r.InferenceReclaims, r.PreemptedLostGPUh, r.RestartGPUh, r.Grows)
	p("failures: nodes %d runs %d lost %.1f GPU-h restart %.1f GPU-h\n", r.NodeFailures, r.FailedRuns, r.FailureLostGPUh, r.FailureRestartGPUh)
	p("moves: %d lost %.1f GPU-h; hot-swaps: pods lost %d gangs replaced %d failed %d lost %.1f GPU-h restart %.1f GPU-h\n",
		r.Moves, r.MoveLostGPUh, r.PodsLost, r.HotSwaps, r.HotSwapsFailed, r.HotSwapLostGPUh, r.HotSwapRestartGPUh)
	p("jobs: requeues %d checkpoints %d turned-away %d spikes %d scale-ups %d scale-downs %d completed %v\n",
		r.Requeues, r.Checkpoints, r.TurnedAway, r.Spikes, r.ScaleUps, r.ScaleDowns, r.Completed[1:])
	p("inference waits: n=%d p50 %v p99 %v max %v; reclaim n=%d p50 %v p99 %v\n", len(r.InferenceWaits),
		Quantile(r.InferenceWaits, 0.5), Quantile(r.InferenceWaits, 0.99), Quantile(r.InferenceWaits, 1),
		len(r.ReclaimWaits), Quantile(r.ReclaimWaits, 0.5), Quantile(r.ReclaimWaits, 0.99))
	p("restore after drain: p50 %v p99 %v max %v\n", Quantile(r.RestoreTimes, 0.5), Quantile(r.RestoreTimes, 0.99), Quantile(r.RestoreTimes, 1))
	for _, q := range r.Waits {
		p("queue %s: %d admissions, wait p50 %v p90 %v p99 %v\n", q.Queue, q.Admissions, q.P50, q.P90, q.P99)
	}
	mean, peak := r.StrandedShare()
	p("stranded: mean %.4f peak %.4f\n", mean, peak)
	h := uint64(14695981039346656037)
	for _, pt := range r.Series {
		for _, v := range []int{int(pt.At / time.Second), pt.Demand, pt.Inference, pt.Training, pt.Batch, pt.Borrowed, pt.Idle, pt.Stranded, pt.Down, pt.PendingResearch, pt.PendingBatch} {
			h = (h ^ uint64(v)) * 1099511628211
		}
	}
	p("series: %d points, fnv %016x\n", len(r.Series), h)
	for _, v := range r.Violations {
		p("violation: %s\n", v)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
