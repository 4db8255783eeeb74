// Package quote prices the options of a booking proposal by simulating
// the window: for each option, what the other teams lose, how their queue
// waits change, how much work moves to off-peak hours, how much inference
// demand goes unserved (to an external provider) and what it all costs,
// beside a baseline without the booking; and it renders that as a
// Markdown decision memo, options side by side with a recommendation.
//
// # Why it lives here
//
// A quote needs the simulator, and the simulator drives the root
// Scheduler, which imports calendar: calendar cannot import either (the
// import would run in a circle). Package sim stays the host model it is;
// the quote is a host of the simulator like any other, built on its
// public API (Config.From, Config.Arrivals, Result), so a host can do
// what it does with its own demand model. Hence a package of its own,
// under sim, importing the root, calendar, sim and metrics (for prices).
//
// # How a quote is made
//
// From the scheduler as it runs now (s) and the options s.Propose gave:
//
//  1. Baseline: fork s (Scheduler.Fork) and simulate from now to the end
//     of the window with the demand model (a fitted sim.History or the
//     host's own sim.Workload), running work carrying on with the run
//     time its ExpectedRuntime leaves.
//  2. Each option: fork s, apply the host's lever if any (Config.Prepare:
//     say, lower a guarantee with SetQueue so the calendar's promise
//     holds), Approve the option on the fork, submit the booking's
//     workloads at its start, simulate with the same seed and model. An
//     option the fork refuses is quoted as refused, with the reason.
//  3. Compare each with the baseline, team by team, and price: displaced
//     GPU-hours at Price.DollarsPerGPUHour, unserved inference at
//     Price.ExternalDollarsPerGPUHour. The recommendation is the
//     approvable option of the lowest total; totals within Config.Tie
//     (1%) of the cheapest count as the same, and among those the option
//     that drains the least running work wins.
//
// The scheduler passed in is never changed: every simulation runs on a
// fork. A quote is deterministic: the same scheduler, options and Config
// give the same Quote and the same memo, byte for byte. Its forecasts run
// one after the other unless Config.Each runs them otherwise (a host may
// run them in parallel: they share nothing).
//
//	opts, err := s.Propose(now, req)
//	q, err := quote.For(now, s, req, opts, quote.Config{Fleet: cfg, Demand: hist.Workload(2048)})
//	err = q.WriteMemo(os.Stdout)
//	b, err := s.Approve(now, req.ID, q.Options[q.Recommended].Index, "gpu-council")
package quote
