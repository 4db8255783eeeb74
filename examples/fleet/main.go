// Fleet simulates a month of the reference fleet (2,048 H100s: 4 spines x
// 8 leaf switches x 8 nodes x 8 GPUs) under two policies, on the same
// seeds and the same workload: a static split (inference keeps its 1,200
// GPUs and their nodes to itself; training and batch share the other 848,
// with priorities and preemption inside that partition) and quotas with
// borrowing (inference lends up to 700 idle GPUs and takes them back with
// a 120 s drain). By default it runs one seed of each policy, the two at
// once, and prints the headline figures beside the published estimates;
// stderr shows the simulated days done and the time left as it goes.
// -seeds runs several seeds and prints each figure as the median and
// range over them; -full prints every row of the table:
//
//	go run ./examples/fleet
//	go run ./examples/fleet -seeds 5 -full
//	go run ./examples/fleet -days 7 -out out
//	go run ./examples/fleet -trace philly.csv -load 1.1   # Philly arrivals for training and batch
//
// With -out it also writes, for the first seed and per policy, the
// monthly review of the metrics package (Markdown) and PNG charts: a day
// of the fleet, stranded GPUs per hour, inference capacity-back times,
// queue waits per team per day and drains per day.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/metrics"
	"github.com/fleetsched/fleet/sim"
)

// options are the command line.
type options struct {
	days   int
	seed   uint64
	seeds  int
	gpus   int
	policy string
	trace  string
	load   float64
	out    string
	defrag float64
	full   bool
	cpu    string
}

func main() {
	var o options
	flag.IntVar(&o.days, "days", 30, "simulated days")
	flag.Uint64Var(&o.seed, "seed", 1, "first random seed: the same seeds give the same runs")
	flag.IntVar(&o.seeds, "seeds", 1, "seeds run (in parallel), from -seed on; with more than one, each figure is a median (range)")
	flag.BoolVar(&o.full, "full", false, "print every row of the table, not only the headline figures")
	flag.IntVar(&o.gpus, "gpus", 2048, "fleet size in GPUs (8-GPU nodes)")
	flag.StringVar(&o.policy, "policy", "both", "static, borrow or both")
	flag.StringVar(&o.trace, "trace", "", "Philly job CSV whose arrivals replace the synthetic training and batch streams")
	flag.Float64Var(&o.load, "load", 0, "with -trace: compress arrivals to offer this multiple of the non-inference capacity (0: as recorded)")
	flag.Float64Var(&o.defrag, "defrag", 0, "defragmentation budget, GPU-hours of lost work an hour (0: off)")
	flag.StringVar(&o.out, "out", "", "folder for the Markdown reviews and the PNG charts of the first seed")
	flag.StringVar(&o.cpu, "cpuprofile", "", "write a CPU profile of the runs to this file (go tool pprof reads it)")
	flag.Parse()
	if err := profiled(o.cpu, func() error { return run(o, os.Stdout, os.Stderr) }); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// profiled runs f, writing a CPU profile of it to path unless path is empty.
func profiled(path string, f func() error) error {
	if path == "" {
		return f()
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return fmt.Errorf("-cpuprofile: %w", err)
	}
	err = f()
	pprof.StopCPUProfile()
	return errors.Join(err, out.Close())
}

// outcome is one run (a policy and a seed) and its metrics.
type outcome struct {
	res  *sim.Result
	rep  metrics.Report
	rec  *metrics.Recorder
	wall time.Duration
}

// load is a trace run's offered load.
type load struct {
	gpus, capacity, compression float64
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
	switch {
	case o.days < 1:
		return fmt.Errorf("-days %d: want at least 1", o.days)
	case o.seeds < 1:
		return fmt.Errorf("-seeds %d: want at least 1", o.seeds)
	case o.load < 0 || o.load > 0 && o.trace == "":
		return fmt.Errorf("-load %v: want a positive multiple, with -trace", o.load)
	}
	window := time.Duration(o.days) * 24 * time.Hour
	var trace []sim.TraceJob
	var offered *load
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
		cfg := sim.FleetConfig(o.gpus, sim.Borrow)
		capacity := float64(nonInference(cfg))
		offered = &load{capacity: capacity, compression: 1}
		if o.load > 0 {
			trace, offered.compression = sim.CompressTrace(trace, o.gpus, window, o.load*capacity)
		}
		offered.gpus = sim.OfferedGPUs(trace, o.gpus, window)
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
	}

	// One goroutine per run, as many at once as there are CPUs; results
	// land in fixed slots, so the output does not depend on which ends
	// first.
	runs := make([][]*outcome, len(policies))
	errs := make([][]error, len(policies))
	prog := newProgress(stderr, isTerminal(stderr), time.Now, len(policies)*o.seeds, o.days)
	defer prog.finish()
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for pi, p := range policies {
		runs[pi] = make([]*outcome, o.seeds)
		errs[pi] = make([]error, o.seeds)
		for k := range o.seeds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				seed := o.seed + uint64(k)
				slot := pi*o.seeds + k
				oc, err := simulate(o, p, seed, trace, func(_ time.Time, share float64) { prog.update(slot, share) })
				runs[pi][k], errs[pi][k] = oc, err
				if err == nil {
					prog.update(slot, 1)
					prog.note(fmt.Sprintf("%-6s seed %d: %d days in %.1fs, %d events", p, seed, o.days, oc.wall.Seconds(), oc.res.Events))
				}
			}()
		}
	}
	wg.Wait()
	prog.finish()
	for pi, p := range policies {
		for k, err := range errs[pi] {
			if err != nil {
				return fmt.Errorf("%s, seed %d: %w", p, o.seed+uint64(k), err)
			}
		}
	}
	if o.out != "" {
		for pi, p := range policies {
			if err := write(o.out, p, runs[pi][0]); err != nil {
				return err
			}
		}
	}
	var static, borrow []*outcome
	for pi, p := range policies {
		if p == sim.Static {
			static = runs[pi]
		} else {
			borrow = runs[pi]
		}
	}
	return table(stdout, o, offered, static, borrow)
}

// nonInference is the capacity outside the inference guarantee, in GPUs.
func nonInference(cfg fleet.Config) int64 {
	total := int64(0)
	for _, n := range cfg.Topology.Nodes {
		total += int64(n.GPUs)
	}
	for _, n := range cfg.Quota.Nodes {
		if n.Name == sim.QueueInference && len(n.Quotas) > 0 {
			total -= n.Quotas[0].Nominal
		}
	}
	return total
}

// metricsConfig is the recorder's configuration, matching the simulator:
// a 3-minute restart, and a replica's restart plus 2-minute warm-up.
func metricsConfig() metrics.Config {
	return metrics.Config{RestartTime: 3 * time.Minute, ReplicaRestartTime: 5 * time.Minute,
		MFUFloors: map[string]float64{fleet.ClassReservedResearch: 0.2}}
}

func simulate(o options, p sim.Policy, seed uint64, trace []sim.TraceJob, progress func(time.Time, float64)) (*outcome, error) {
	rec, err := metrics.New(metricsConfig())
	if err != nil {
		return nil, err
	}
	oc := &outcome{rec: rec}
	cfg := sim.Config{GPUs: o.gpus, Policy: p, Seed: seed, Duration: time.Duration(o.days) * 24 * time.Hour,
		Trace: trace, Observer: recorder{rec}, Progress: progress}
	if o.defrag > 0 {
		cfg.Fleet = sim.FleetConfig(o.gpus, p)
		cfg.Fleet.Policy.DefragBudget = o.defrag
	}
	t0 := time.Now()
	r, err := sim.Run(cfg)
	oc.wall = time.Since(t0)
	if err != nil {
		return nil, err
	}
	if len(r.Violations) > 0 {
		return nil, errors.New("scheduler contract broken: " + r.Violations[0])
	}
	oc.res = r
	oc.rep = rec.Report(r.Start, end(r))
	return oc, nil
}

func end(r *sim.Result) time.Time { return r.Start.Add(time.Duration(r.Hours * float64(time.Hour))) }

// recorder feeds a metrics.Recorder from the simulator. It is a
// sim.FiguresObserver: the recorder reads the scheduler's figures, not
// its workloads, so the simulator need not take a Snapshot.
type recorder struct{ r *metrics.Recorder }

var _ sim.FiguresObserver = recorder{}

func (x recorder) Events(events []fleet.Event) error { return x.r.RecordAll(events) }

func (x recorder) Snapshot(s fleet.Snapshot) error { return x.r.ObserveSnapshot(s) }

func (x recorder) Figures(f fleet.Figures) error { return x.r.ObserveFigures(f) }

func (x recorder) Usage(now time.Time, us []sim.Usage) error {
	for _, u := range us {
		if err := x.r.Observe(now, u.Workload, metrics.Sample{SMActivity: u.SMActivity, MFU: u.MFU}); err != nil {
			return err
		}
	}
	return nil
}
