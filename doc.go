// Package fleet is the policy brain of a shared GPU fleet: it decides which
// pending workload is admitted, onto which GPUs, and who is drained (with
// how long to checkpoint and exit) to make room.
//
// A fleet runs three workload shapes side by side: inference replicas of
// 1-8 GPUs on one node that must not be preempted in production, training
// gangs of many whole nodes that start all together or not at all and
// want to sit under one leaf switch or spine, and elastic batch work that
// fills whatever is left and is evicted first. The [Scheduler] weighs them
// against a quota tree (Kueue's ClusterQueue and Cohort semantics), the
// physical topology and a drain contract, and returns its choices as
// values.
//
// # What it is not
//
// The library starts no processes, reads no clock, does no I/O and runs no
// goroutines. It is a deterministic state machine, in the spirit of etcd
// raft's RawNode: a host program (a Kubernetes controller, a Slurm plugin,
// a simulator, a test) feeds it events and carries out its decisions. The
// host owns the clock and passes `now` into every call; the same calls with
// the same arguments give the same decisions, byte for byte.
//
// A Scheduler is not safe for concurrent use: the host serialises calls.
// It never calls back into the host to act; replaceable policies (the
// preemption cost model, placement scorers, the queue order) are small
// interfaces the library asks questions of, each with a default.
//
// # The host loop
//
//	s, err := fleet.New(fleet.Config{Topology: topo, Quota: tree, Classes: classes})
//	err = s.Submit(now, w)                   // a gang.Workload; refused whole on bad input
//	d := s.Schedule(now)                     // one cycle: fleet.Decisions
//	next := s.NextChange(now)                // no cycle before next decides anything, if no call comes
//	//   d.Kill  []Kill                        // victims past their deadline (again each cycle): force-stop them
//	//   d.Drain []Drain                       // victim, deadline, reason, beneficiaries: send SIGTERM
//	//   d.Grow  []Growth                      // more pods of a running elastic workload: start them
//	//   d.Admit []Admission                   // workload + node and GPUs of every pod: start it
//	//   d.Events []Event                      // what happened, for metrics and audit
//	err = s.Exited(now, id, gang.ExitDrained) // a workload ended (finished, failed, drained, killed)
//	err = s.Checkpointed(now, id, at)        // it saved its state at at (<= now): lowers its cost
//	lost, err := s.SetNodeHealth(now, node, topology.Down) // the gangs that lost a node
//	err = s.Adopt(now, Adoption{Workload: w, Started: started, Pods: pods})     // rebuild state from what the host sees running
//	err = s.ReportUsage(now, id, busy)       // idle or busy: Policy.IdleReclaim drains work idle too long
//	err = s.SetQueue(now, node)              // live quota edit (quota.NodeSpec): nothing evicted by the edit itself
//	err = s.RemoveNode(now, node)            // out of service (empty nodes); AddNode brings a declared node in
//	x, err := s.Explain(id)                  // why pending: what the last cycle decided, as data and a sentence
//	snap := s.Snapshot()                     // a deep copy for metrics, dashboards and restarts
//	s, err = fleet.Restore(cfg, snap)        // after a restart: drains, nominations, checkpoints intact
//
//	// Levers: bookings of future blocks (Propose, Approve, CancelBooking),
//	// live quota edits and schedules (SetQueue, SetQuotaSchedule), nodes in
//	// and out of service (RemoveNode, AddNode), host drains (RequestDrain),
//	// idle reclaim (ReportUsage), defragmentation (PlanDefrag, Defragment),
//	// and Fork for what-if questions. Decisions also carry Replace and
//	// Failed (hot-swap of lost nodes) and Overflow (inference short of its
//	// guarantee).
//
// A Journal wraps a Scheduler and records every call as a JSON line;
// Replay of a journal gives the same decisions, byte for byte, so a bug
// report is a journal.
//
// The host calls Schedule whenever something changed (or on a period of
// its choosing), acts on every Decision, and reports back what happened
// with Exited and SetNodeHealth. A drained victim's GPUs are nominated for
// its beneficiaries at once, so nobody else takes them while it
// checkpoints; each beneficiary starts in the first cycle after the
// victims on its own nodes have exited; past the deadline every cycle asks
// the host to kill the victim, with how overdue it is, until the host
// reports its exit. So after a kill (or any exit) the host calls Schedule
// again to start what waited for it. A host that cycles on a period may
// skip the cycles before NextChange: after a cycle that decided nothing,
// it is the first instant at which a deadline, a protection's end, a wait
// limit, a quota schedule or a booking's phase could make one decide,
// unless a call (other than Checkpointed) comes first.
//
// Who holds which GPU and which quota, the nominations and the drains are
// kept in one ledger with checked transitions (gang's lifecycle table);
// the victim search reads it and never changes it. Read-only calls
// (Explain, Snapshot) change nothing, but the Scheduler as a whole is not
// safe for concurrent use: a host that reads from another goroutine must
// still serialise those calls with the others.
//
// # Contracts
//
//   - All or nothing: a gang is admitted with every member placed, or not
//     at all; no partial holds exist, so gangs cannot deadlock.
//   - No double allocation: a GPU belongs to at most one workload or
//     pending nomination; free + allocated + nominated = capacity.
//   - Quota follows Kueue (nominal quota, borrowing and lending limits,
//     hierarchical cohorts); borrowed capacity is reclaimable.
//   - Bad input is refused whole with a typed error (errors.Is and
//     errors.As work), and the scheduler's state is unchanged.
//   - Restart loses nothing: Snapshot and Restore keep running work,
//     drains (deadlines, every beneficiary, kill requests), nominations
//     and last checkpoints, the domain held for a blocked gang and the
//     hour's defragmentation spending, so a restart never drains again,
//     never extends a deadline and never picks an extra victim. A host
//     that rebuilds by adoption instead passes the same through Adopt,
//     AdoptCalendar and AdoptDefragSpent.
//
// # Packages
//
//   - fleet (this package): the Scheduler, the host-facing loop: queues,
//     ordering, the cycle that asks quota, placement and preempt,
//     nominations while victims drain, reservations that keep large gangs
//     from starving (with backfill), Explain, Snapshot and the Journal.
//   - topology: the physical tree (spine > leaf > node, or racks), node
//     health, per-domain free-capacity aggregates and fragmentation.
//   - quota: the quota tree of cohorts and queues, borrowing and lending
//     limits, fair-share weights, usage and "does it fit".
//   - gang: the workload model: pod sets, priority class, topology
//     request, checkpoint and drain contract, lifecycle states.
//   - placement: where a gang fits: all-or-nothing search over the
//     topology, host scorers, and a structured reason when it does not.
//   - preempt: who to evict: candidate rules, the cost of lost work,
//     minimal quota- and topology-aware victim sets, drain deadlines.
//   - metrics: allocation against real use, queue waits, preemption tax,
//     stranded GPUs and cost, from the Scheduler's events and snapshots.
//   - importer/slurm, importer/k8s, importer/kueue: the formats users
//     already have, kept apart so the core never imports Kubernetes code.
//
// Lower packages never import higher ones: topology, gang and quota import
// nothing of this module; placement imports topology and gang; preempt
// adds quota; this package imports them all.
package fleet
