// Package sim is a deterministic discrete-event simulator of a GPU fleet
// that drives fleet.Scheduler exactly as a real host would. It backs the
// month-long example (examples/fleet), the end-to-end tests and
// benchmarks, and any host that wants to price a policy or a booking
// before it commits to one: the proof that the scheduler's decisions,
// carried out, give the economics the design claims.
//
// # What it simulates
//
//   - Inference: sixteen services of tensor-parallel 1, 2, 4 and 8 GPU
//     replicas whose total demand follows a diurnal curve (by default 500
//     of 2,048 GPUs for 12 hours a day, 1,200 at the peak) plus sudden
//     spikes. An autoscaler runs every minute: scale-up submits
//     prod-inference replicas and cycles at once; scale-down cancels a
//     pending replica or stops a running one (Exited, finished).
//   - Training: research gangs of 8 to 512 GPUs in whole nodes (one leaf
//     up to 64 GPUs, one spine above), lognormal run times, checkpoints
//     every 20 minutes (Checkpointed), a restart overhead of 3 minutes;
//     a preempted or failed job is resubmitted with the work it has left,
//     except a defragmentation mover, which the scheduler restarts at its
//     reserved place. A gang of more than one node survives the loss of
//     a node (unless Config.NoHotSwap): it stops at its last checkpoint
//     and runs on once the scheduler has replaced the lost pods.
//     Researchers stop submitting into a deep queue (a backlog cap).
//   - Batch: preemptible filler of 1 to 64 GPUs that checkpoints every
//     Config.BatchCheckpoint (10 min) but not on SIGTERM; a fixed backlog
//     is kept waiting. It is elastic (unless Config.FixedBatch): pods of
//     one GPU up to 8 GPUs, of 8 beyond, down to one pod; it starts at the
//     size that fits, progresses with the GPUs it holds, gives up pods to
//     a preemptor (Drain.Of: that pod loses its work since the job's last
//     checkpoint) and grows back (Decisions.Grow) when nothing waits.
//   - Drains: a victim exits 20-100 s after SIGTERM, saving its state if
//     it checkpoints; a configurable share hangs and is killed when the
//     scheduler asks (Kill, Exited killed).
//   - Node failures at a rate per GPU-day (default 5e-4, as in Llama 3's
//     training run), taking every workload on the node down (but gangs
//     that survive it); repair
//     after 2-6 hours. A stateless inference replica loses only its
//     restart and warm-up; other work what it had not saved.
//   - Policies: Borrow (the reference quota tree) and Static (no lending
//     across the inference split, preemption inside each partition).
//   - Usage: SM activity and MFU per shape (inference 0.3-0.7 by load,
//     training 0.8-0.95, batch 0.6-0.9) as samples for an Observer, such
//     as a metrics recorder.
//   - Optionally, a job trace (ReadPhilly: the Microsoft Philly trace)
//     replaces the synthetic training and batch streams; CompressTrace
//     scales its arrivals to a target offered load (OfferedGPUs).
//
// # How it runs
//
// Simulated time only: an agenda of events ordered by (time, sequence),
// one seeded PCG generator for every draw, no clock and no goroutines.
// The same Config gives the same Result, byte for byte (WriteText).
// Every Cycle (10 s) the host calls Schedule if anything changed, a drain
// deadline passed or work has waited a minute, and carries out the
// Decisions in the order the scheduler demands: Kill, Drain, Admit. A
// cycle due only because work has waited, with nothing but checkpoints
// reported since the last, is skipped while the scheduler's NextChange
// lies ahead: it would decide nothing. It still counts in
// Result.Cycles (and in Result.Skipped), and a sample at its instant
// runs it, so every figure is that of a run that calls Schedule each
// time. Its
// own bookkeeping of GPUs per node catches a GPU booked twice, and with
// Config.Check every cycle compares the scheduler's Snapshot with it (and
// its Figures with the Snapshot's). An Observer receives a Snapshot every
// sample period; a FiguresObserver, the cheaper Figures instead.
//
//	r, err := sim.Run(sim.Config{Policy: sim.Borrow, Seed: 1})
//	// r.BorrowedGPUh, r.ReservedIdleGPUh, r.ReclaimWaits, r.Waits, r.Series ...
//
// # What it is not
//
// Not a model of any real cluster's timings: the workload is synthetic
// and its parameters are defaults to argue with. The figures compare
// policies on the same workload and seed, which is what it is for.
package sim
