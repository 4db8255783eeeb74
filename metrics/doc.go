// Package metrics turns the scheduler's events and snapshots, and the
// host's usage samples, into the figures a compute-platform team reviews
// every month: allocation beside real use (never merged), allocated but
// idle GPUs, queue waits per team and gang size, preemptions and their
// tax, drains, borrowing and lending, stranded GPUs and the largest free
// blocks, cross-spine gangs, and what all of it costs.
//
// # Inputs
//
//   - Events (fleet.Decisions.Events) through Record or RecordAll: who was
//     admitted (with its wait, span and borrowed GPUs), drained, killed,
//     checkpointed, and when it exited.
//   - Snapshots (fleet.Scheduler.Snapshot) through ObserveSnapshot, or
//     the cheaper figures (fleet.Scheduler.Figures) through ObserveFigures,
//     taken periodically: healthy, free and stranded GPUs, the largest free
//     block per level, and each queue's lendable and borrowed quota. Each
//     holds until the next, so the figures are time-weighted.
//   - Usage samples through Observe: per running workload, SM activity and
//     MFU (or achieved FLOP/s) at the host's sampling times. A sample holds
//     until the next one (piecewise constant), so irregular sampling
//     integrates correctly. Allocated time before a workload's first sample
//     is counted as allocated but not sampled: use is unknown, not zero.
//
// A Config prices each GPU flavor (default H100: $2.50 per GPU-hour, 989
// TFLOP/s dense BF16 peak) and sets the idle rules: SM activity under 5%
// for longer than a 15-minute window counts the whole stretch as allocated
// but idle, and IdleCandidates lists workloads idle past a per-class limit
// so the host can reclaim them.
//
// # Outputs
//
// Report(from, to) returns a plain Report for a window rounded out to
// whole buckets (an hour by default). GPU-hours and dollars are additive
// over windows; quantiles come from sketches within 1%. WriteMarkdown
// renders the monthly review (a table per concern, a row per team, the
// fleet's totals), WriteCSV the same tables as long-format data, and
// WriteHourlyCSV the hourly series (inference allocated and used,
// training, batch, borrowed, idle, stranded) for charts. The Prometheus
// exporter lives in metrics/prom, so that this package stays on the
// standard library.
//
// # Definitions
//
//   - Lost work of a preemption, measured when the victim exits: GPUs x
//     time since its latest checkpoint (or admission), so a victim that
//     checkpoints on SIGTERM and reports it loses no work and a killed one
//     loses its drain too; plus GPUs x Config.RestartTime. A stateless
//     inference replica loses no work, only GPUs x ReplicaRestartTime
//     (restart and warm-up). The drain event's LostGPUSeconds is the
//     scheduler's estimate at the decision and is not used.
//   - Node losses: runs a failed node ended (cause "node-lost") lose the
//     same way, but are reported in their own rows (Report.NodeLosses,
//     Usage.NodeLostGPUHours) and are not preemptions.
//   - Preemption tax: preemption-lost over borrowed GPU-hours, broken
//     down by team and cause (work since checkpoints, restarts, kills).
//     A pod an elastic workload gives up (a drain event with Of set) is
//     charged its own GPUs' work since the last checkpoint under cause
//     "shrink" (CauseShrink), and no restart: the workload runs on at its
//     new size, and grows (EventGrown) the same way.
//   - Busy but inefficient: SM activity at or above the idle threshold
//     but MFU under the class's floor (Config.MFUFloor) past MFUWindow.
//   - Right-sizing: per team and hour, inference GPUs beyond observed use
//     over Config.RightSizeTarget; the GPU-hours and dollars fewer
//     replicas would save.
//   - Cohorts: teams roll up into every cohort above them in the quota
//     tree of the latest snapshot.
//   - Drain time: from the drain decision to the victim's exit, when its
//     capacity is back; a kill is a deadline miss.
//   - Lent: a Snapshot says how much each queue could lend and how much
//     each borrows, not who lent to whom; a quota tree's borrowed GPUs of a
//     flavor are shared among its queues in proportion to their lendable
//     quota. What is lendable but not lent is idle reservation.
//   - Cost per useful PFLOP: allocated dollars over MFU-weighted PFLOPs.
//
// # What it is not
//
// metrics makes no decisions and feeds nothing back into the scheduler,
// which does not import it. It owns no clock and no goroutines.
//
// # The host's obligations
//
//   - Feed inputs in time order: events, snapshots and samples share one
//     clock that never goes back. A refused input (*InputError, wrapping
//     ErrInvalidInput, ErrOutOfOrder or ErrUnknownWorkload) changes nothing.
//   - Serialise calls: a Recorder is not safe for concurrent use.
//   - Take snapshots often enough for the time-weighted figures you want;
//     without them a Report has no healthy capacity or fragmentation.
//
// Memory grows with the running workloads and the buckets recorded, never
// with the number of events: waits and drain times go into fixed-accuracy
// sketches, not lists.
//
//	r, err := metrics.New(metrics.Config{IdleLimits: map[string]time.Duration{"notebook": 2 * time.Hour}})
//	d := s.Schedule(now)
//	err = r.RecordAll(d.Events)
//	err = r.ObserveFigures(s.Figures())           // every minute
//	err = r.Observe(now, id, metrics.Sample{SMActivity: 0.7, MFU: 0.38})
//	for _, c := range r.IdleCandidates(now) { ... } // or let fleet.Policy.IdleReclaim act, fed by ReportUsage
//	err = metrics.WriteMarkdown(w, r.Report(monthStart, monthEnd))
package metrics
