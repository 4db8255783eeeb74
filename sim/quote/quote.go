package quote

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/sim"
)

// ErrInvalidConfig wraps every refusal of a quote's input.
var ErrInvalidConfig = errors.New("quote: invalid config")

// Config is how a quote forecasts and prices.
type Config struct {
	// Fleet is the config the scheduler was built with (the simulator
	// reads the topology from it).
	Fleet fleet.Config
	// Demand is the workload model of the forecast: a History's fit of
	// the recorded events, or the host's own. Zero fields take the
	// simulator's defaults.
	Demand sim.Workload
	// Seed drives the forecast's draws; baseline and options share it,
	// so they differ by the booking, not by luck.
	Seed uint64
	// Work is the booking's workloads, submitted at Submit(req) on each
	// option's fork (their Booking is set to the request's ID).
	// Each runs for its ExpectedRuntime.
	Work []gang.Workload
	// Prepare, when set, is what the host does on each option's fork
	// before it approves (the baseline does without): lower a guarantee
	// with SetQueue so the calendar's promise holds, say. Lever names it
	// in one line for the memo.
	Prepare func(now time.Time, s *fleet.Scheduler) error
	Lever   string
	// Price prices GPU-hours and overflow (default metrics.H100(); an
	// ExternalDollarsPerGPUHour of 0 counts overflow without pricing it).
	Price metrics.Flavor
	// Cycle and Autoscale are the simulated host's periods (default 1
	// min each: a forecast trades the 10 s cycle of sim's default for
	// speed; both sides of every comparison use the same).
	Cycle, Autoscale time.Duration
	// Each runs the forecasts: one(i) for i in [0, n), each on its own
	// fork, made one after the other before Each is called (default:
	// one after the other). They share nothing, so a host may run them
	// in parallel, one goroutine each; the quote is the same whatever
	// the order.
	Each func(n int, one func(i int))
	// Tie is the share of the cheapest option's total within which
	// options count as costing the same (default DefaultTie): a forecast
	// is one seeded draw of demand, and totals closer than its error do
	// not rank options. Among such options the one that drains the least
	// work is recommended. Negative: compare totals exactly.
	Tie float64
}

// DefaultTie is Config.Tie's default: options within 1% of the cheapest
// total cost the same.
const DefaultTie = 0.01

// Quote is the forecast of every option of a proposal, beside a
// baseline without the booking, and the recommendation.
type Quote struct {
	Request calendar.Request // the booking request quoted
	// From and To bound the forecast: now to the end of the window.
	From, To time.Time
	Seed     uint64
	Demand   sim.Workload
	Price    metrics.Flavor
	Lever    string
	Baseline *sim.Result
	Options  []Option
	// Recommended is the position in Options of the recommended option
	// (-1: none can be approved); Reason says why, in a sentence.
	Recommended int
	Reason      string
}

// Option is one option's forecast, compared with the baseline.
type Option struct {
	calendar.Option
	// Refused is why the fork refused to approve it (nil: approvable).
	// A refused option has no forecast.
	Refused error
	Result  *sim.Result
	// Teams compares each queue with the baseline, by name.
	Teams []Team
	// BookedGPUh is what the booking's workloads ran.
	BookedGPUh float64
	// DisplacedGPUh sums the teams' displaced GPU-hours, inference
	// apart (its shortfall is overflow); OverflowGPUh is the inference
	// demand unserved beyond the baseline's.
	DisplacedGPUh, OverflowGPUh float64
	// Dollars: displaced at the GPU-hour price, overflow at the external
	// price, and their total.
	DisplacedDollars, OverflowDollars, TotalDollars float64
}

// Team is one queue's change from the baseline.
type Team struct {
	Queue     string // the queue
	Inference bool   // true for a guaranteed inference queue
	// DisplacedGPUh is the GPU-hours it ran less than in the baseline
	// (negative: more), the booking's own work apart.
	DisplacedGPUh float64
	// OffPeakGPUh is its work moved to the trough of inference demand:
	// its GPU-hours times the growth of their off-peak share.
	OffPeakGPUh float64
	// P90 is its queue-wait 90th percentile, baseline and option.
	P90Before, P90After time.Duration
}

// Approvable reports whether the fork approved the option.
func (o *Option) Approvable() bool { return o.Refused == nil }

// For quotes opts, the options s.Propose gave for req at now. s is not
// changed: each forecast runs on a fork of it.
func For(now time.Time, s *fleet.Scheduler, req calendar.Request, opts []calendar.Option, cfg Config) (*Quote, error) {
	if len(cfg.Fleet.Topology.Nodes) == 0 {
		return nil, fmt.Errorf("%w: Fleet, the scheduler's config, is required", ErrInvalidConfig)
	}
	if !req.End().After(now) {
		return nil, fmt.Errorf("%w: the window of %q ends at %s, before now", ErrInvalidConfig, req.ID, req.End().Format(time.RFC3339))
	}
	if cfg.Price == (metrics.Flavor{}) {
		cfg.Price = metrics.H100()
	}
	if cfg.Cycle == 0 {
		cfg.Cycle = time.Minute
	}
	if cfg.Autoscale == 0 {
		cfg.Autoscale = time.Minute
	}
	if cfg.Each == nil {
		cfg.Each = func(n int, one func(int)) {
			for i := range n {
				one(i)
			}
		}
	}
	q := &Quote{Request: req, From: now, To: req.End(), Seed: cfg.Seed, Demand: cfg.Demand, Price: cfg.Price,
		Lever: cfg.Lever, Options: make([]Option, len(opts)), Recommended: -1}
	infCap := guarantee(s.Quota(), sim.QueueInference)
	var work []sim.Arrival
	for _, w := range cfg.Work {
		w.Booking = req.ID
		work = append(work, sim.Arrival{At: Submit(req), Workload: w})
	}
	// Forecast 0 is the baseline, forecast i+1 option i.
	// The forks are made here, one after the other: s serves one call
	// at a time, and only the forks run in parallel.
	errs := make([]error, len(opts)+1)
	forks := make([]*fleet.Scheduler, len(opts)+1)
	for i := range forks {
		if forks[i], errs[i] = s.Fork(); errs[i] != nil {
			return nil, errs[i]
		}
		forks[i].KeepEvents(false) // a forecast reads no events
	}
	cfg.Each(len(opts)+1, func(i int) {
		f := forks[i]
		forks[i] = nil
		sc := sim.Config{Fleet: cfg.Fleet, From: f, Seed: cfg.Seed, Start: now, Duration: req.End().Sub(now),
			Cycle: cfg.Cycle, Autoscale: cfg.Autoscale, Workload: cfg.Demand, InferenceCap: infCap}
		if i > 0 {
			o := &q.Options[i-1]
			o.Option = opts[i-1]
			if o.Refused = approve(now, f, req.ID, o.Index, cfg.Prepare); o.Refused != nil {
				return
			}
			sc.Arrivals = work
		}
		r, err := sim.Run(sc)
		if err == nil && len(r.Violations) > 0 {
			err = fmt.Errorf("quote: the forecast broke a scheduler contract: %s", r.Violations[0])
		}
		if err != nil {
			errs[i] = err
			return
		}
		r.Scheduler = nil // the fork is spent; keep the quote plain data
		if i == 0 {
			q.Baseline = r
		} else {
			q.Options[i-1].Result = r
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range q.Options {
		q.compare(&q.Options[i])
	}
	tie := cfg.Tie
	if tie == 0 {
		tie = DefaultTie
	}
	q.recommend(tie)
	return q, nil
}

// Against compares r, a run of the window with the booking approved as
// option (a realised run, say), with the quote's baseline, priced as the
// quote prices its options.
func (q *Quote) Against(option calendar.Option, r *sim.Result) Option {
	o := Option{Option: option, Result: r}
	q.compare(&o)
	return o
}

// Submit is when the booking's workloads are submitted: at the drain
// (the start minus the grace), so they are pending when the window opens
// and go first into the blocks.
func Submit(req calendar.Request) time.Time {
	grace := req.Grace
	if grace == 0 {
		grace = calendar.DefaultGrace
	}
	return req.Start.Add(-grace)
}

// approve applies the host's lever and approves option on fork f.
func approve(now time.Time, f *fleet.Scheduler, id string, option int, prepare func(time.Time, *fleet.Scheduler) error) error {
	if prepare != nil {
		if err := prepare(now, f); err != nil {
			return err
		}
	}
	_, err := f.Approve(now, id, option, "quote")
	return err
}

// guarantee is queue's nominal quota of its first flavor (0 if unknown).
func guarantee(spec quota.Spec, queue string) int {
	for _, n := range spec.Nodes {
		if n.Name == queue && len(n.Quotas) > 0 {
			return int(n.Quotas[0].Nominal)
		}
	}
	return 0
}

// compare fills o's comparison with the baseline and its prices.
func (q *Quote) compare(o *Option) {
	if o.Result == nil {
		return
	}
	base, r := q.Baseline, o.Result
	o.BookedGPUh = r.BookedGPUh
	waits := func(r *sim.Result, queue string) time.Duration {
		for _, w := range r.Waits {
			if w.Queue == queue {
				return w.P90
			}
		}
		return 0
	}
	use := func(r *sim.Result, queue string) sim.QueueUse {
		for _, u := range r.Queues {
			if u.Queue == queue {
				return u
			}
		}
		return sim.QueueUse{Queue: queue}
	}
	var names []string
	for _, u := range append(slices.Clone(base.Queues), r.Queues...) {
		if !slices.Contains(names, u.Queue) {
			names = append(names, u.Queue)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		b, x := use(base, name), use(r, name)
		t := Team{Queue: name, Inference: b.Inference || x.Inference, DisplacedGPUh: b.GPUh - x.GPUh,
			P90Before: waits(base, name), P90After: waits(r, name)}
		if b.GPUh > 0 && x.GPUh > 0 {
			t.OffPeakGPUh = x.GPUh * (x.OffPeakGPUh/x.GPUh - b.OffPeakGPUh/b.GPUh)
		}
		o.Teams = append(o.Teams, t)
		if !t.Inference {
			o.DisplacedGPUh += t.DisplacedGPUh
		}
	}
	o.OverflowGPUh = max(0, r.UnservedGPUh-base.UnservedGPUh)
	o.DisplacedDollars = o.DisplacedGPUh * q.Price.DollarsPerGPUHour
	o.OverflowDollars = o.OverflowGPUh * q.Price.ExternalDollarsPerGPUHour
	o.TotalDollars = o.DisplacedDollars + o.OverflowDollars
}

// recommend picks, among the approvable options whose total is within
// tie of the cheapest, the one that drains the least work that cannot be
// preempted, then the least work, then the lowest total, then the
// calendar's own order.
func (q *Quote) recommend(tie float64) {
	var ok []int
	for i := range q.Options {
		if q.Options[i].Approvable() {
			ok = append(ok, i)
		}
	}
	if len(ok) == 0 {
		q.Reason = "no option can be approved"
		if len(q.Options) > 0 {
			q.Reason += ": " + q.Options[0].Refused.Error()
		}
		return
	}
	cheapest := q.Options[ok[0]].TotalDollars
	for _, i := range ok {
		cheapest = min(cheapest, q.Options[i].TotalDollars)
	}
	same := func(o *Option) bool { return o.TotalDollars <= cheapest+max(0, tie)*math.Abs(cheapest) }
	slices.SortStableFunc(ok, func(a, b int) int {
		x, y := &q.Options[a], &q.Options[b]
		if sx, sy := same(x), same(y); sx != sy {
			if sx {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(x.Displaced.Blocking, y.Displaced.Blocking), cmp.Compare(drained(x), drained(y)),
			cmp.Compare(x.TotalDollars, y.TotalDollars), cmp.Compare(x.Index, y.Index))
	})
	best := &q.Options[ok[0]]
	q.Recommended = ok[0]
	if len(ok) == 1 {
		q.Reason = "it is the only option that can be approved; it costs " + dollars(best.TotalDollars)
		return
	}
	next := &q.Options[ok[1]]
	if !same(next) || best.Displaced.Blocking == next.Displaced.Blocking && drained(best) == drained(next) {
		q.Reason = fmt.Sprintf("it costs the least: %s (%s displaced, %s overflow), %s less than option %d",
			dollars(best.TotalDollars), dollars(best.DisplacedDollars), dollars(best.OverflowDollars),
			dollars(next.TotalDollars-best.TotalDollars), next.Index)
		return
	}
	// A tie on cost: the option that disturbs the least running work.
	q.Reason = fmt.Sprintf("it costs %s, within %s of option %d's %s (closer than the forecast can tell), "+
		"and drains less work: %s GPUs (%s not preemptible) against %s (%s not preemptible)",
		dollars(best.TotalDollars), share(max(0, tie)), next.Index, dollars(next.TotalDollars),
		count(float64(drained(best))), count(float64(best.Displaced.Blocking)),
		count(float64(drained(next))), count(float64(next.Displaced.Blocking)))
}

// drained is how many GPUs of running work an option drains in its blocks.
func drained(o *Option) int {
	return o.Displaced.Blocking + o.Displaced.Guaranteed + o.Displaced.Borrowed
}
