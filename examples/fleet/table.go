package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
	"github.com/fleetsched/fleet/sim"
)

// dollarsPerGPUHour prices an H100 hour, as the estimates and the metrics
// package's default flavor do.
const dollarsPerGPUHour = 2.50

// unit says how a figure prints.
type unit uint8

const (
	gpus unit = iota + 1
	gpuHours
	dollars
	percent
	hours
	jobs
	count
	signedGPUHours
	signedDollars
)

// figure is one row of the table: how to read it from a run (ok false
// when the run has no such figure) and the published estimate.
type figure struct {
	name     string
	unit     unit
	value    func(oc *outcome) (float64, bool)
	estimate string
}

// team is a team's row of a metrics report.
func team(rep metrics.Report, name string) metrics.Usage {
	for _, t := range rep.Teams {
		if t.Team == name {
			return t.Usage
		}
	}
	return metrics.Usage{}
}

func wait90(rep metrics.Report, queue string) (float64, bool) {
	return waitQ(rep.Waits.ByTeam, queue, 0.9)
}

// waitQ is quantile p (0.9 or 0.99) of the waits keyed key: a team or a
// gang-size class.
func waitQ(qs []metrics.Quantiles, key string, p float64) (float64, bool) {
	for _, q := range qs {
		if q.Key == key && q.Count > 0 {
			if p > 0.95 {
				return q.P99.Seconds(), true
			}
			return q.P90.Seconds(), true
		}
	}
	return 0, false
}

// second is the p99 printed after a row's p90 ("p90 / p99"; with several
// seeds each is the median), for the rows of waits by gang size.
func second(name string) func(oc *outcome) (float64, bool) {
	for _, r := range []struct{ row, class string }{
		{"gang wait p90 / p99, 1-8 GPUs", "1-8"}, {"  9-64 GPUs", "9-64"}, {"  65-512 GPUs", "65-512"}, {"  more than 512", "513+"},
	} {
		if r.row == name {
			return bySize(r.class, 0.99)
		}
	}
	return nil
}

// bySize is the wait of gangs of one size class at quantile p.
func bySize(class string, p float64) func(oc *outcome) (float64, bool) {
	return func(oc *outcome) (float64, bool) { return waitQ(oc.rep.Waits.ByGangSize, class, p) }
}

// ownTax is a team's preemption tax: what it lost over what it borrowed.
func ownTax(name string) func(oc *outcome) (float64, bool) {
	return func(oc *outcome) (float64, bool) {
		u := team(oc.rep, name)
		return 100 * u.PreemptionTax(), u.BorrowedGPUHours > 0
	}
}

// month scales a run's figure to 30 days.
func month(oc *outcome, v float64) float64 { return oc.res.Month(v) }

// figures are the table's rows. The preemption tax and its parts come
// from the metrics report, the same one the review renders.
func figures() []figure {
	always := func(f func(oc *outcome) float64) func(oc *outcome) (float64, bool) {
		return func(oc *outcome) (float64, bool) { return f(oc), true }
	}
	share := func(f func(oc *outcome) float64) func(oc *outcome) (float64, bool) {
		return func(oc *outcome) (float64, bool) {
			b := oc.rep.Fleet.BorrowedGPUHours
			return 100 * f(oc) / b, b > 0
		}
	}
	pct := func(num func(r *sim.Result) float64) func(oc *outcome) (float64, bool) {
		return always(func(oc *outcome) float64 { return 100 * num(oc.res) / (oc.res.Hours * float64(oc.res.GPUs)) })
	}
	idleReserved := func(r *sim.Result) float64 { return max(0, r.ReservedIdleGPUh-r.BorrowedGPUh) }
	return []figure{
		{"idle inference guarantee", gpus, always(func(oc *outcome) float64 { return oc.res.Avg(idleReserved(oc.res)) }), "~400 GPUs st."},
		{"  its cost per month", dollars, always(func(oc *outcome) float64 {
			return month(oc, idleReserved(oc.res)) * dollarsPerGPUHour
		}), "~$730k st."},
		{"lent by inference, per month", gpuHours, always(func(oc *outcome) float64 { return month(oc, oc.res.BorrowedGPUh) }), "~252k GPU-h"},
		{"  worth per month", dollars, always(func(oc *outcome) float64 {
			return month(oc, oc.res.BorrowedGPUh) * dollarsPerGPUHour
		}), "~$630k"},
		{"preemption tax, of borrowed", percent, share(func(oc *outcome) float64 { return oc.rep.Fleet.LostGPUHours }), "~3%"},
		{"  work since checkpoint", percent, share(func(oc *outcome) float64 {
			return oc.rep.Fleet.LostGPUHours - oc.rep.Fleet.RestartGPUHours
		}), ""},
		{"  restarts", percent, share(func(oc *outcome) float64 { return oc.rep.Fleet.RestartGPUHours }), ""},
		{"  research's own", percent, ownTax(sim.QueueResearch), ""},
		{"  batch's own", percent, ownTax(sim.QueueBatch), ""},
		{"drains per day", count, always(func(oc *outcome) float64 { return float64(oc.res.Drains) / (oc.res.Hours / 24) }), ""},
		{"  killed at the deadline", count, always(func(oc *outcome) float64 { return float64(oc.res.Kills) / (oc.res.Hours / 24) }), ""},
		{"defrag moves per day", count, always(func(oc *outcome) float64 { return float64(oc.res.Moves) / (oc.res.Hours / 24) }), ""},
		{"  lost work, of borrowed", percent, share(func(oc *outcome) float64 { return oc.res.MoveLostGPUh }), ""},
		{"node losses, per month", gpuHours, always(func(oc *outcome) float64 { return month(oc, oc.rep.Fleet.NodeLostGPUHours) }), ""},
		{"  hot-swapped gangs", count, always(func(oc *outcome) float64 { return month(oc, float64(oc.res.HotSwaps)) }), ""},
		{"  hot-swap lost work", gpuHours, always(func(oc *outcome) float64 {
			return month(oc, oc.res.HotSwapLostGPUh+oc.res.HotSwapRestartGPUh)
		}), ""},
		{"  hot-swaps failed", count, always(func(oc *outcome) float64 { return month(oc, float64(oc.res.HotSwapsFailed)) }), ""},
		{"stranded GPUs, mean", percent, always(func(oc *outcome) float64 { m, _ := oc.res.StrandedShare(); return 100 * m }), "<5%"},
		{"  peak", percent, always(func(oc *outcome) float64 { _, p := oc.res.StrandedShare(); return 100 * p }), ""},
		{"inference capacity back p99", hours, capacityBack(0.99), "<=5 min"},
		{"  p50", hours, capacityBack(0.5), ""},
		{"queue wait p90, inference", hours, func(oc *outcome) (float64, bool) { return wait90(oc.rep, sim.QueueInference) }, ""},
		{"  research", hours, func(oc *outcome) (float64, bool) { return wait90(oc.rep, sim.QueueResearch) }, ""},
		{"  batch", hours, func(oc *outcome) (float64, bool) { return wait90(oc.rep, sim.QueueBatch) }, ""},
		{"queue wait p99, inference", hours, func(oc *outcome) (float64, bool) {
			return waitQ(oc.rep.Waits.ByTeam, sim.QueueInference, 0.99)
		}, ""},
		{"gang wait p90 / p99, 1-8 GPUs", hours, bySize("1-8", 0.9), ""},
		{"  9-64 GPUs", hours, bySize("9-64", 0.9), ""},
		{"  65-512 GPUs", hours, bySize("65-512", 0.9), ""},
		{"  more than 512", hours, bySize("513+", 0.9), ""},
		{"allocated, of GPU-h", percent, pct(func(r *sim.Result) float64 { return r.InferenceGPUh + r.TrainingGPUh + r.BatchGPUh }), ""},
		{"  SM-busy", percent, pct(func(r *sim.Result) float64 { return r.BusyGPUh }), ""},
		{"  MFU", percent, pct(func(r *sim.Result) float64 { return r.UsefulGPUh }), ""},
		{"training, average", gpus, always(func(oc *outcome) float64 { return oc.res.Avg(oc.res.TrainingGPUh) }), ""},
		{"batch, average", gpus, always(func(oc *outcome) float64 { return oc.res.Avg(oc.res.BatchGPUh) }), ""},
		{"training jobs done", jobs, always(func(oc *outcome) float64 { return float64(oc.res.Completed[gang.Training]) }), ""},
		{"batch jobs done", jobs, always(func(oc *outcome) float64 { return float64(oc.res.Completed[gang.Batch]) }), ""},
		{"node failures", count, always(func(oc *outcome) float64 { return float64(oc.res.NodeFailures) }), "~31 a month"},
	}
}

// detail are the rows printed only with -full: the parts of a headline
// figure and the figures a first reading can skip.
func detail(name string) bool {
	switch name {
	case "  work since checkpoint", "  restarts", "  killed at the deadline",
		"defrag moves per day", "  lost work, of borrowed", "node losses, per month",
		"  hot-swapped gangs", "  hot-swap lost work", "  hot-swaps failed",
		"  peak", "  p50", "  SM-busy", "  MFU",
		"training, average", "batch, average", "node failures":
		return true
	}
	return false
}

// capacityBack is the quantile p of the time an inference replica waited
// for capacity: of reclaims under borrowing, of every replica that waited
// under the static split (there is nothing to reclaim there).
func capacityBack(p float64) func(oc *outcome) (float64, bool) {
	return func(oc *outcome) (float64, bool) {
		r := oc.res
		ws := r.ReclaimWaits
		if len(ws) == 0 {
			for _, d := range r.InferenceWaits {
				if d > 0 {
					ws = append(ws, d)
				}
			}
		}
		if len(ws) == 0 {
			return 0, true
		}
		return sim.Quantile(ws, p).Seconds(), true
	}
}

// spread is a figure over the seeds: median, least and most.
type spread struct {
	med, lo, hi float64
	n           int
}

func over(ocs []*outcome, f figure) spread {
	var vs []float64
	for _, oc := range ocs {
		if v, ok := f.value(oc); ok {
			vs = append(vs, v)
		}
	}
	return spreadOf(vs)
}

// cell prints a spread with its unit: the median, and the range over the
// seeds when there is more than one.
func cell(s spread, u unit) string {
	if s.n == 0 {
		return "n/a"
	}
	one := func(v float64) string { return format(v, u) }
	if s.n == 1 || one(s.lo) == one(s.hi) {
		return one(s.med)
	}
	switch u {
	case hours:
		return one(s.med) + " (" + one(s.lo) + "-" + one(s.hi) + ")"
	case dollars, signedDollars:
		return one(s.med) + " (" + one(s.lo) + "-" + one(s.hi) + ")"
	}
	num := func(v float64) string { return strings.TrimSuffix(one(v), suffix(u)) }
	return num(s.med) + " (" + num(s.lo) + "-" + num(s.hi) + ")" + suffix(u)
}

func suffix(u unit) string {
	switch u {
	case gpus:
		return " GPUs"
	case gpuHours, signedGPUHours:
		return " GPU-h"
	case percent:
		return "%"
	case jobs:
		return " jobs"
	}
	return ""
}

// format prints one value with its unit. Nothing prints as a negative
// zero, and only signed units print a sign.
func format(v float64, u unit) string {
	zero := func(s string) string {
		if strings.Trim(s, "-0.") == "" || strings.HasPrefix(s, "-") && strings.Trim(s[1:], "0.k") == "" {
			return strings.TrimPrefix(s, "-")
		}
		return s
	}
	switch u {
	case gpus:
		return zero(fmt.Sprintf("%.0f", v)) + " GPUs"
	case jobs:
		return zero(fmt.Sprintf("%.0f", v)) + " jobs"
	case count:
		if v < 10 {
			return zero(fmt.Sprintf("%.1f", v))
		}
		return zero(fmt.Sprintf("%.0f", v))
	case percent:
		return zero(fmt.Sprintf("%.1f", v)) + "%"
	case gpuHours:
		if v < 9999.5 {
			return zero(fmt.Sprintf("%.0f", max(0, v))) + " GPU-h"
		}
		return fmt.Sprintf("%.0fk", v/1000) + " GPU-h"
	case signedGPUHours:
		return signed(zero(fmt.Sprintf("%.0fk", v/1000))) + " GPU-h"
	case dollars:
		return money(max(0, v))
	case signedDollars:
		switch m := money(math.Abs(v)); {
		case m == "$0k":
			return m
		case v < 0:
			return "-" + m
		default:
			return "+" + m
		}
	case hours:
		return dur(time.Duration(v * float64(time.Second)))
	}
	return fmt.Sprint(v)
}

func signed(s string) string {
	if strings.HasPrefix(s, "-") || strings.Trim(s, "0.k") == "" {
		return s
	}
	return "+" + s
}

func money(d float64) string {
	if math.Round(d/1e4) >= 100 {
		return fmt.Sprintf("$%.2fM", d/1e6)
	}
	return fmt.Sprintf("$%.0fk", d/1e3)
}

// dur prints a duration with its unit, whatever its size.
func dur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.0f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

// table prints the economics of the runs beside the published estimates.
// Either policy's runs may be missing (one policy only).
func table(w io.Writer, o options, offered *load, static, borrow []*outcome) error {
	any := static
	if len(any) == 0 {
		any = borrow
	}
	r0 := any[0].res
	seeds := fmt.Sprintf("seed %d", o.seed)
	if o.seeds > 1 {
		seeds = fmt.Sprintf("seeds %d-%d, median (range)", o.seed, o.seed+uint64(o.seeds)-1)
	}
	fmt.Fprintf(w, "fleet: %d GPUs, %.0f days, %s\n", r0.GPUs, r0.Hours/24, seeds)
	fmt.Fprintf(w, "inference guaranteed %d GPUs, research %d GPUs; batch checkpoints every 10 min\n",
		r0.InferenceNominal, r0.ResearchNominal)
	if offered != nil {
		fmt.Fprintf(w, "trace: offered load %.0f GPUs = %.2fx the non-inference capacity (%.0f GPUs),\n"+
			"  arrivals compressed %.2fx\n", offered.gpus, offered.gpus/offered.capacity, offered.capacity, offered.compression)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "\tstatic split\tborrowing\testimate")
	for _, f := range figures() {
		if detail(f.name) && !o.full {
			continue
		}
		cells := []string{f.name}
		for _, ocs := range [][]*outcome{static, borrow} {
			if len(ocs) == 0 {
				cells = append(cells, "-")
				continue
			}
			c := cell(over(ocs, f), f.unit)
			if p99 := second(f.name); p99 != nil {
				first, second := over(ocs, f), over(ocs, figure{value: p99})
				c = "n/a"
				if first.n > 0 && second.n > 0 {
					c = format(first.med, f.unit) + " / " + format(second.med, f.unit)
				}
			}
			cells = append(cells, c)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, f.estimate), "\t"))
	}
	if len(static) > 0 && len(static) == len(borrow) {
		// The gain is paired by seed: the same workload under each policy.
		var gains, worth []float64
		for k := range static {
			others := func(oc *outcome) float64 { return month(oc, oc.res.TrainingGPUh+oc.res.BatchGPUh) }
			g := others(borrow[k]) - others(static[k])
			gains = append(gains, g)
			worth = append(worth, g*dollarsPerGPUHour)
		}
		fmt.Fprintln(tw, strings.Join([]string{"training+batch gained", "", cell(spreadOf(gains), signedGPUHours), ""}, "\t"))
		fmt.Fprintln(tw, strings.Join([]string{"  worth per month", "", cell(spreadOf(worth), signedDollars), ""}, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range apart(o, static, borrow) {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "\nTax, waits and drains come from the metrics report the review renders. Batch is\n"+
		"elastic: a preemptor takes the pods it needs, each drained alone, before stopping a job whole.")
	switch {
	case !o.full && o.seeds == 1:
		fmt.Fprintln(w, "-full prints every row (tax parts, hot-swaps, MFU); -seeds 5 the range over seeds.")
	case !o.full:
		fmt.Fprintln(w, "-full prints every row (tax parts, hot-swaps, MFU).")
	case o.seeds == 1:
		fmt.Fprintln(w, "-seeds 5 prints each figure as the median and range over five seeds.")
	}
	return nil
}

// apart names each seed whose figure stands apart from the others': off
// the median of the seeds by more than half of it, for the figures a
// reader compares across policies. The run is not wrong, but a median
// hides it.
func apart(o options, static, borrow []*outcome) []string {
	var out []string
	watch := map[string]bool{"training jobs done": true, "batch jobs done": true, "preemption tax, of borrowed": true,
		"  research": true, "idle inference guarantee": true}
	for _, pol := range []struct {
		name string
		ocs  []*outcome
	}{{"static split", static}, {"borrowing", borrow}} {
		if len(pol.ocs) < 3 {
			continue
		}
		for _, f := range figures() {
			if !watch[f.name] {
				continue
			}
			s := over(pol.ocs, f)
			for k, oc := range pol.ocs {
				v, ok := f.value(oc)
				if !ok || s.med <= 0 || math.Abs(v-s.med) <= 0.5*s.med {
					continue
				}
				out = append(out, fmt.Sprintf("%s, seed %d stands apart: %s %s against a median of %s",
					pol.name, o.seed+uint64(k), strings.TrimSpace(f.name), format(v, f.unit), format(s.med, f.unit)))
			}
		}
	}
	if len(out) > 0 {
		out = append([]string{""}, out...)
	}
	return out
}

// spreadOf is the median, least and most of vs.
func spreadOf(vs []float64) spread {
	if len(vs) == 0 {
		return spread{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{med: med, lo: s[0], hi: s[len(s)-1], n: len(s)}
}
