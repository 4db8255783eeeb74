// Calendar books future capacity on the reference fleet (2,048 H100s, 4
// spines) after a month of recorded history: research asks for 1,024 GPUs
// as two whole spines for three weeks, starting in ten days. It prints
// the options, quotes them by simulating the window on forks of the
// scheduler (package sim/quote) and prints the decision memo, approves
// the recommended option, simulates to the end of the window, and reports
// whether the promise was kept (the blocks whole at the start, every
// drain within its contract) and the realised cost beside the quoted one:
//
//	go run ./calendar
//	go run ./calendar -seed 2 -lead 240h -window 504h
//
// Research's guarantee is 848 GPUs, so 1,024 booked GPUs exceed it by
// 176, and on the reference quotas (1,200 + 848 = 2,048 guaranteed) the
// calendar refuses every option: the guarantees plus the booking would
// exceed the fleet. The host's lever here is to lower inference's
// guarantee by the excess before approving (SetQueue, in force from the
// approval): the quote prices what that costs as inference overflow.
//
// The output is deterministic by seed; the run time goes to stderr.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/sim"
	"github.com/fleetsched/fleet/sim/quote"
)

// options are the command line.
type options struct {
	seed    uint64
	history time.Duration // recorded before the request
	lead    time.Duration // from the request to the start
	window  time.Duration
	gpus    int // booked
	cycle   time.Duration
}

func main() {
	o := options{}
	flag.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed gives the same output")
	flag.DurationVar(&o.history, "history", 30*24*time.Hour, "recorded history before the request")
	flag.DurationVar(&o.lead, "lead", 10*24*time.Hour, "from the request to the booking's start")
	flag.DurationVar(&o.window, "window", 21*24*time.Hour, "the booking's window")
	flag.IntVar(&o.gpus, "gpus", 1024, "GPUs booked, as whole spines of 512")
	flag.DurationVar(&o.cycle, "cycle", time.Minute, "the simulated host's scheduling period")
	flag.Parse()
	if _, err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "calendar:", err)
		os.Exit(1)
	}
}

// outcome is what the run found, for tests.
type outcome struct {
	start   time.Time
	promise promise
	quoted  quote.Option
	real    quote.Option
}

func run(o options, stdout, stderr io.Writer) (*outcome, error) {
	cfg := sim.FleetConfig(2048, sim.Borrow)
	p := func(format string, args ...any) { fmt.Fprintf(stdout, format, args...) }

	// A month of history: the scheduler as it runs now, and the demand
	// model fitted to its events.
	var hist sim.History
	t0 := time.Now()
	h, err := sim.Run(sim.Config{Seed: o.seed, Duration: o.history, Cycle: o.cycle, Observer: &hist})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "history: %s simulated in %.1fs\n", span(o.history), time.Since(t0).Seconds())
	s, now := h.Scheduler, h.Start.Add(o.history)
	demand := hist.Workload(2048)
	p("Recorded %.0f days: inference %.0f-%.0f GPUs, training %.0f GPU-h, batch %.0f GPU-h.\n",
		hist.Hours()/24, demand.InferenceTrough*2048, demand.InferencePeak*2048, h.TrainingGPUh, h.BatchGPUh)

	req := calendar.Request{ID: "pretrain", Queue: sim.QueueResearch, Flavor: "H100", GPUs: o.gpus,
		Level: "spine", Blocks: (o.gpus + 511) / 512, Start: now.Add(o.lead), Duration: o.window}
	opts, err := s.Propose(now, req)
	if err != nil {
		return nil, err
	}
	p("\n%s: research asks for %d GPUs as %d whole spines from %s for %s.\n", now.Format("2 Jan 15:04"),
		req.GPUs, req.Blocks, req.Start.Format("2 Jan 15:04"), span(o.window))
	for _, op := range opts {
		state := "approvable"
		if !op.Feasible() {
			state = "refused on the reference quotas"
			if op.Quota != nil {
				state += ": " + op.Quota.Error()
			}
		}
		p("  option %d: %s, work to drain %d GPUs (%d not preemptible);\n%s", op.Index,
			strings.Join(op.DomainNames, "+"), op.Displaced.Blocking+op.Displaced.Guaranteed+op.Displaced.Borrowed,
			op.Displaced.Blocking, wrap(state, "    ", 100))
	}

	// The lever: inference's guarantee lowered by the booking's excess
	// over research's, from the approval on.
	excess := int64(req.GPUs) - nominal(s.Quota(), sim.QueueResearch)
	lever := func(now time.Time, s *fleet.Scheduler) error {
		if excess <= 0 {
			return nil
		}
		return lower(now, s, sim.QueueInference, excess)
	}
	leverText := ""
	if excess > 0 {
		leverText = fmt.Sprintf("lower prod-inference's guarantee by %d GPUs (SetQueue), so that the "+
			"guarantees plus the booking fit the fleet", excess)
	}
	work := bookingWork(req)
	price := metrics.H100()
	price.ExternalDollarsPerGPUHour = 6
	t0 = time.Now()
	q, err := quote.For(now, s, req, opts, quote.Config{Fleet: cfg, Demand: demand, Seed: o.seed, Work: work,
		Prepare: lever, Lever: leverText, Price: price, Cycle: o.cycle, Autoscale: o.cycle, Each: parallel})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "quote: %d forecasts of %s in %.1fs\n", len(opts)+1, span(req.End().Sub(now)), time.Since(t0).Seconds())
	p("\n")
	if err := q.WriteMemo(stdout); err != nil {
		return nil, err
	}
	if q.Recommended < 0 {
		return nil, fmt.Errorf("nothing to approve: %s", q.Reason)
	}
	chosen := q.Options[q.Recommended]

	// Approve on the scheduler itself and carry on to the window's end,
	// in a world that is not the forecast's (another seed, the true
	// workload model).
	if err := lever(now, s); err != nil {
		return nil, err
	}
	b, err := s.Approve(now, req.ID, chosen.Index, "gpu-council")
	if err != nil {
		return nil, err
	}
	p("\nApproved option %d (%s) by %s.\n", chosen.Index, strings.Join(b.Domains, "+"), b.ApprovedBy)
	chk := newChecker(cfg, b, req)
	var arrivals []sim.Arrival
	for _, w := range work {
		w.Booking = req.ID
		arrivals = append(arrivals, sim.Arrival{At: quote.Submit(req), Workload: w})
	}
	t0 = time.Now()
	r, err := sim.Run(sim.Config{Fleet: cfg, From: s, Seed: o.seed + 1000, Start: now, Duration: req.End().Sub(now),
		Cycle: o.cycle, Autoscale: o.cycle, Arrivals: arrivals, InferenceCap: int(nominal(cfg.Quota, sim.QueueInference)),
		Observer: chk})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "realised: %s simulated in %.1fs\n", span(req.End().Sub(now)), time.Since(t0).Seconds())
	if len(r.Violations) > 0 {
		return nil, fmt.Errorf("scheduler contract broken: %s", r.Violations[0])
	}
	out := &outcome{start: req.Start, promise: chk.verdict(), quoted: chosen, real: q.Against(chosen.Option, r)}
	out.promise.write(stdout, req)
	rl := out.real
	p("\nRealised against the quote's baseline (another seed, the true demand model):\n")
	p("| %-26s | %12s | %12s |\n", "", "quoted", "realised")
	p("|%s|%s:|%s:|\n", strings.Repeat("-", 28), strings.Repeat("-", 13), strings.Repeat("-", 13))
	row := func(label string, a, b float64, unit string) {
		p("| %-26s | %12s | %12s |\n", label+" ("+unit+")", amount(a, unit), amount(b, unit))
	}
	row("Booked work", chosen.BookedGPUh, rl.BookedGPUh, "GPU-h")
	row("Displaced", chosen.DisplacedGPUh, rl.DisplacedGPUh, "GPU-h")
	row("Inference overflow", chosen.OverflowGPUh, rl.OverflowGPUh, "GPU-h")
	row("Displaced cost", chosen.DisplacedDollars, rl.DisplacedDollars, "$")
	row("Overflow cost", chosen.OverflowDollars, rl.OverflowDollars, "$")
	row("Total cost", chosen.TotalDollars, rl.TotalDollars, "$")
	return out, nil
}

// bookingWork is the booking's pre-training run: one gang over all its
// GPUs for the whole window, checkpointing every 20 minutes.
func bookingWork(req calendar.Request) []gang.Workload {
	return []gang.Workload{{ID: req.ID + "-run", Queue: req.Queue, PriorityClass: fleet.ClassReservedResearch,
		Shape: gang.Training, Flavor: req.Flavor, PodSets: []gang.PodSet{{Name: "workers", Count: req.GPUs / 8, GPUsPerPod: 8}},
		Drain:           gang.DrainContract{CheckpointInterval: 20 * time.Minute},
		ExpectedRuntime: req.Duration}}
}

// parallel runs the quote's forecasts one goroutine each, sharing every
// CPU (three forecasts on two cores end together, not two then one);
// each writes its own slot, so the quote does not depend on which ends
// first.
// span prints a length of simulated time as people say it: "21 days",
// "31 days", "36 hours".
func span(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}

func parallel(n int, one func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(i)
		}()
	}
	wg.Wait()
}

// nominal is queue's guarantee of its first flavor.
func nominal(spec quota.Spec, queue string) int64 {
	for _, n := range spec.Nodes {
		if n.Name == queue && len(n.Quotas) > 0 {
			return n.Quotas[0].Nominal
		}
	}
	return 0
}

// lower cuts queue's guarantee by gpus, and its lending limit with it.
func lower(now time.Time, s *fleet.Scheduler, queue string, gpus int64) error {
	spec := s.Quota()
	i := slices.IndexFunc(spec.Nodes, func(n quota.NodeSpec) bool { return n.Name == queue })
	if i < 0 {
		return fmt.Errorf("no queue %q", queue)
	}
	n := spec.Nodes[i]
	n.Quotas = slices.Clone(n.Quotas)
	fq := &n.Quotas[0]
	fq.Nominal -= gpus
	if l, ok := fq.LendingLimit.Get(); ok && l > fq.Nominal {
		fq.LendingLimit = quota.LimitOf(fq.Nominal)
	}
	return s.SetQueue(now, n)
}

// amount renders a figure of a unit: GPU-hours whole, dollars with $.
func amount(v float64, unit string) string {
	s := fmt.Sprintf("%.0f", v)
	if unit == "$" {
		return "$" + s
	}
	return s
}

// wrap breaks text into lines of at most width columns (a longer word
// keeps a line of its own), each starting with indent and ending in a
// newline.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if line != indent && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}
