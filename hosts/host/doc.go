// Package host is what fleet's hosts share: the part of carrying out a
// Scheduler's decisions that does not depend on the system the host
// runs on. hosts/kube (Kubernetes) and hosts/slurm (Slurm) each
// translate their system's objects at one seam of their own; around that
// seam they do the same things, and those are written here once:
//
//   - the clock: Clock, WallClock, and ShiftedClock for tests that run
//     against real daemons but decide when a deadline passes;
//   - restart by Adopt: DrainRecord, what a host keeps of a drain where
//     its system shows nothing (a pod annotation, a state file), turned
//     back into the fleet.AdoptedDrain it was (Adopted); Adopt, which
//     adopts a workload whose nomination no longer fits without it;
//   - the reconcile loop's steps: Every (a step now and every period),
//     SyncHealth (node health changes, in node order, into the
//     scheduler), Nodes (an admission's or nomination's node per pod
//     index), ForEach (a cycle's writes, so many at a time);
//   - what a waiting workload is told: Sentence and Waiting, Explain's
//     sentence without the time of the cycle, so the host writes it only
//     when the reason changes;
//   - metrics: Metrics, fleet's figures in Prometheus's text format with
//     the standard library only, under metrics/prom's names.
//
// A host's step reads its system, brings the scheduler in line, runs a
// cycle and acts, in the order fleet.Decisions asks (kills, drains,
// failed gangs and replacements, admissions), outside the scheduler's
// lock:
//
//	now := clock.Now()
//	for _, ch := range host.SyncHealth(s, now, known, health, log) { stop(ch.Ended) }
//	d := s.Schedule(now)
//	metrics.RecordAll(d.Events)
//	... kills, drains, failed, replacements, admissions: host.Nodes(a.Pods, n) ...
//	for _, id := range waiting { if msg, ok := host.Waiting(s, id); ok { tell(id, msg) } }
//	host.ForEach(workers, len(writes), func(i int) { write(writes[i]) })
//
// # Where it lives, and why
//
// It is a package of the core module (github.com/fleetsched/fleet), not
// a module of its own, and it sits under hosts/ beside the hosts that
// use it:
//
//   - It needs only the standard library and the core packages, so
//     being in the core module adds nothing to anyone's module graph: a
//     dependent of the core gets no new requirement, and the hosts,
//     which require the core already, get no new module to require,
//     tag and keep in step. A module of its own would be a fifth
//     version for the hosts to pin for a few hundred lines that change
//     with the core's API (Adoption, Decisions, Explanation) anyway.
//   - It is not in the core's import graph: no core package imports
//     it, as none imports a host. Under hosts/ the purity rules of the
//     library (no clock, no goroutines) do not apply, as they do not to
//     the hosts: a host reads the wall clock and runs its writes in
//     parallel, and so does this package, on the host's behalf.
//   - Metrics serves the Prometheus text format itself rather than
//     through the Prometheus client, so that hosts/slurm keeps to the
//     standard library and Slurm's tools; hosts/kube, which has the
//     client already, serves metrics/prom's Exporter. A test of
//     metrics/prom feeds both the same events and snapshot and requires
//     the same text, so the two cannot drift apart.
//
// Nothing here is policy: what to do with a decision, and in which
// system's words, stays in each host.
package host
