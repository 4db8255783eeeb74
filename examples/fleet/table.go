package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/sim"
)

// dollarsPerGPUHour prices an H100 hour, as the estimates do.
const dollarsPerGPUHour = 2.50

// table prints the economics of the runs beside the published estimates.
// Either run may be nil (one policy only).
func table(w io.Writer, static, borrow *outcome) error {
	any := static
	if any == nil {
		any = borrow
	}
	r0 := any.res
	days := r0.Hours / 24
	fmt.Fprintf(w, "fleet: %d GPUs, %.0f days, seed %d; inference guaranteed %d, research %d\n\n",
		r0.GPUs, days, r0.Seed, r0.InferenceNominal, r0.ResearchNominal)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, f func(r *sim.Result) string, estimate string) {
		cells := []string{name}
		for _, oc := range []*outcome{static, borrow} {
			if oc == nil {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, f(oc.res))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, estimate), "\t")+"\t")
	}
	fmt.Fprintln(tw, "\tstatic split\tborrowing\testimate\t")
	row("idle inference reservation, avg GPUs", func(r *sim.Result) string {
		return fmt.Sprintf("%.0f", r.Avg(max(0, r.ReservedIdleGPUh-r.BorrowedGPUh)))
	}, "~400 (static)")
	row("  its cost per month", func(r *sim.Result) string {
		return money(r.Month(max(0, r.ReservedIdleGPUh-r.BorrowedGPUh)) * dollarsPerGPUHour)
	}, "~$730k (static)")
	row("GPU-h lent by inference per month", func(r *sim.Result) string {
		return fmt.Sprintf("%.0fk", r.Month(r.BorrowedGPUh)/1000)
	}, "")
	recovered := "-"
	worth := "-"
	if static != nil && borrow != nil {
		others := func(r *sim.Result) float64 { return r.Month(r.TrainingGPUh + r.BatchGPUh) }
		gain := others(borrow.res) - others(static.res)
		recovered = fmt.Sprintf("%.0fk", gain/1000)
		worth = money(gain * dollarsPerGPUHour)
	}
	fmt.Fprintf(tw, "GPU-h recovered by borrowing per month\t\t%s\t~252k\t\n", recovered)
	fmt.Fprintf(tw, "  worth per month\t\t%s\t~$630k\t\n", worth)
	row("preemption tax, lost / borrowed GPU-h", func(r *sim.Result) string {
		if r.BorrowedGPUh == 0 {
			return fmt.Sprintf("n/a (%d drains)", r.Drains)
		}
		return fmt.Sprintf("%.1f%% (%d drains, %d kills)", 100*(r.PreemptedLostGPUh+r.RestartGPUh)/r.BorrowedGPUh, r.Drains, r.Kills)
	}, "~3%")
	row("stranded GPUs, mean (peak)", func(r *sim.Result) string {
		mean, peak := r.StrandedShare()
		return fmt.Sprintf("%.1f%% (%.1f%%)", 100*mean, 100*peak)
	}, "<5%")
	row("inference capacity back, p50/p99", func(r *sim.Result) string {
		if len(r.ReclaimWaits) > 0 {
			return fmt.Sprintf("%s / %s (%d reclaims; drain to back p99 %s)", dur(sim.Quantile(r.ReclaimWaits, 0.5)),
				dur(sim.Quantile(r.ReclaimWaits, 0.99)), len(r.ReclaimWaits), dur(sim.Quantile(r.RestoreTimes, 0.99)))
		}
		var waited []time.Duration
		for _, d := range r.InferenceWaits {
			if d > 0 {
				waited = append(waited, d)
			}
		}
		if len(waited) == 0 {
			return "never waited"
		}
		return fmt.Sprintf("%s / %s (%d waited)", dur(sim.Quantile(waited, 0.5)), dur(sim.Quantile(waited, 0.99)), len(waited))
	}, "<=5 min")
	for _, q := range []string{sim.QueueInference, sim.QueueResearch, sim.QueueBatch} {
		row("queue wait p90, "+q, func(r *sim.Result) string {
			for _, w := range r.Waits {
				if w.Queue == q {
					return dur(w.P90)
				}
			}
			return "-"
		}, "")
	}
	row("allocated / SM-busy / MFU, % of GPU-h", func(r *sim.Result) string {
		total := r.Hours * float64(r.GPUs)
		alloc := r.InferenceGPUh + r.TrainingGPUh + r.BatchGPUh
		return fmt.Sprintf("%.0f / %.0f / %.0f", 100*alloc/total, 100*r.BusyGPUh/total, 100*r.UsefulGPUh/total)
	}, "")
	row("avg GPUs: inference / training / batch", func(r *sim.Result) string {
		return fmt.Sprintf("%.0f / %.0f / %.0f", r.Avg(r.InferenceGPUh), r.Avg(r.TrainingGPUh), r.Avg(r.BatchGPUh))
	}, "")
	row("jobs done: training / batch", func(r *sim.Result) string {
		return fmt.Sprintf("%d / %d", r.Completed[gang.Training], r.Completed[gang.Batch])
	}, "")
	row("node failures (runs lost)", func(r *sim.Result) string {
		return fmt.Sprintf("%d (%d)", r.NodeFailures, r.FailedRuns)
	}, "~5e-4 /GPU-day")
	row("simulator: events, events/s", func(r *sim.Result) string {
		oc := static
		if r.Policy == sim.Borrow.String() {
			oc = borrow
		}
		return fmt.Sprintf("%dk, %.0fk/s", r.Events/1000, float64(r.Events)/oc.wall.Seconds()/1000)
	}, "")
	return tw.Flush()
}

func money(d float64) string {
	if d >= 1e6 {
		return fmt.Sprintf("$%.2fM", d/1e6)
	}
	return fmt.Sprintf("$%.0fk", d/1e3)
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Minute:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}
