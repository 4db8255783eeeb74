// Fleet simulates a month of the reference fleet (2,048 H100s: 4 spines x
// 8 leaf switches x 8 nodes x 8 GPUs) twice, on the same seed and the same
// workload: once under a static split (inference keeps its 1,200 GPUs to
// itself, training and batch share the other 848, nothing is preempted)
// and once under quotas with borrowing and preemption (inference lends up
// to 700 idle GPUs and takes them back with a 120 s drain). It prints one
// table of the economics beside the published estimates:
//
//	go run ./examples/fleet
//	go run ./examples/fleet -days 7 -policy borrow -out out
//	go run ./examples/fleet -trace philly.csv   # Philly arrivals for training and batch
//
// With -out it also writes, per policy, the monthly review of the metrics
// package (Markdown) and two charts (SVG): one day of the fleet stacked by
// use, and the stranded GPUs over the month.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/sim"
	"github.com/fleetsched/fleet/metrics"
)

// options are the command line.
type options struct {
	days   int
	seed   uint64
	gpus   int
	policy string
	trace  string
	out    string
}

func main() {
	var o options
	flag.IntVar(&o.days, "days", 30, "simulated days")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed gives the same run")
	flag.IntVar(&o.gpus, "gpus", 2048, "fleet size in GPUs (8-GPU nodes)")
	flag.StringVar(&o.policy, "policy", "both", "static, borrow or both")
	flag.StringVar(&o.trace, "trace", "", "Philly job CSV whose arrivals replace the synthetic training and batch streams")
	flag.StringVar(&o.out, "out", "", "folder for the Markdown review and the SVG charts")
	flag.Parse()
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// outcome is one policy's run and what it took.
type outcome struct {
	res  *sim.Result
	wall time.Duration
	rec  *metrics.Recorder
}

func run(o options, stdout, stderr io.Writer) error {
	var policies []sim.Policy
	switch o.policy {
	case "static":
		policies = []sim.Policy{sim.Static}
	case "borrow":
		policies = []sim.Policy{sim.Borrow}
	case "both":
		policies = []sim.Policy{sim.Static, sim.Borrow}
	default:
		return fmt.Errorf("-policy %q: want static, borrow or both", o.policy)
	}
	if o.days < 1 {
		return fmt.Errorf("-days %d: want at least 1", o.days)
	}
	var trace []sim.TraceJob
	if o.trace != "" {
		f, err := os.Open(o.trace)
		if err != nil {
			return err
		}
		trace, err = sim.ReadPhilly(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
	}
	runs := map[sim.Policy]*outcome{}
	for _, p := range policies {
		oc, err := simulate(o, p, trace, stderr)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		runs[p] = oc
		if o.out != "" {
			if err := write(o.out, p, oc); err != nil {
				return err
			}
		}
	}
	return table(stdout, runs[sim.Static], runs[sim.Borrow])
}

func simulate(o options, p sim.Policy, trace []sim.TraceJob, stderr io.Writer) (*outcome, error) {
	oc := &outcome{}
	cfg := sim.Config{GPUs: o.gpus, Policy: p, Seed: o.seed, Duration: time.Duration(o.days) * 24 * time.Hour, Trace: trace}
	if o.out != "" {
		rec, err := metrics.New(metrics.Config{RestartTime: 3 * time.Minute})
		if err != nil {
			return nil, err
		}
		oc.rec = rec
		cfg.Observer = recorder{rec}
	}
	t0 := time.Now()
	cfg.Progress = func(now time.Time, done float64) {
		fmt.Fprintf(stderr, "\r%-6s day %2.0f of %d (%3.0f%%) %5.1fs", p, done*float64(o.days), o.days, 100*done, time.Since(t0).Seconds())
	}
	r, err := sim.Run(cfg)
	oc.wall = time.Since(t0)
	fmt.Fprintf(stderr, "\r%-6s %d days in %.1fs: %d events, %.0f events/s\n", p, o.days, oc.wall.Seconds(), r.Events, float64(r.Events)/oc.wall.Seconds())
	if err != nil {
		return nil, err
	}
	oc.res = r
	if len(r.Violations) > 0 {
		return nil, errors.New("scheduler contract broken: " + r.Violations[0])
	}
	return oc, nil
}

// recorder feeds a metrics.Recorder from the simulator.
type recorder struct{ r *metrics.Recorder }

func (x recorder) Events(events []fleet.Event) error { return x.r.RecordAll(events) }

func (x recorder) Snapshot(s fleet.Snapshot) error { return x.r.ObserveSnapshot(s) }

func (x recorder) Usage(now time.Time, us []sim.Usage) error {
	for _, u := range us {
		if err := x.r.Observe(now, u.Workload, metrics.Sample{SMActivity: u.SMActivity, MFU: u.MFU}); err != nil {
			return err
		}
	}
	return nil
}

// write puts the Markdown review and the charts of one run in dir.
func write(dir string, p sim.Policy, oc *outcome) error {
	r := oc.res
	end := r.Start.Add(time.Duration(r.Hours * float64(time.Hour)))
	f, err := os.Create(filepath.Join(dir, "review-"+p.String()+".md"))
	if err != nil {
		return err
	}
	if err := metrics.WriteMarkdown(f, oc.rec.Report(r.Start, end)); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := dayChart(filepath.Join(dir, "day-"+p.String()+".svg"), r); err != nil {
		return err
	}
	return strandedChart(filepath.Join(dir, "stranded-"+p.String()+".svg"), r)
}
