// Package preempt chooses who to evict so that a pending workload fits,
// in quota and in topology, and keeps the books of the drains that follow.
//
// # Victims
//
// Searcher.Victims returns a Plan: a 1-minimal set of whole running
// workloads (never some pods of a gang), each with the rule that allowed
// it, its drain deadline, the GPUs it frees and its cost, plus the
// assignment the beneficiary will get once they are gone. Or a *NoPlan
// saying why none exists. The candidate rules are Kueue's meaning of the
// queue's quota.Rules (withinQueue, reclaimWithinCohort, borrowWithinCohort
// with its threshold and the hierarchical-advantage exemption, and
// fair-sharing preemption); they, the drain contract (Running.Preemptible)
// and the minimum runtime are documented on Victims, where they are
// decided. The one candidate order is documented on sortCandidates:
// draining first, other queues' borrowed work, lower priority, lower cost,
// ID.
//
// The search is topology-aware from the start: for a gang that must sit
// in one domain, it evaluates each domain from its own candidates' nodes
// with the fleet's per-domain histograms (O(1) per freed node), picks the
// domain whose cheapest sufficient set is cheapest, fills back, and runs
// placement once to validate and to produce Plan.Target. It never
// re-places the gang over the whole fleet per candidate. Domains are tried
// by a lower bound on their set (GPUs still missing there, covered by the
// cheapest candidates), and the search stops once no remaining domain's
// bound can beat the best set found: the answer is the same as trying
// every domain. Passing running sorted by ID (as a scheduler keeping its
// candidates in ID order does) spares string compares in the candidate
// order's tie-break; any order gives the same plan.
//
// The cost of a victim is a CostModel (default: GPUs x work since the last
// checkpoint plus a restart overhead, in GPU-seconds); a host may plug in
// its own.
//
// # What a search reads, and what it never changes
//
// A search reads a View: the live fleet and quota tree, an Index of the
// running workloads the caller keeps up to date (Add on start, Update on
// drain or checkpoint, Remove on exit; each change validated once there),
// and a Scratch fleet the caller keeps equal to the live one. It never
// changes the live fleet, tree or index: quota what-ifs run on the
// Searcher's own copy of the tree, and the one placement that validates a
// plan runs on Scratch with the victims' GPUs released, given back before
// Victims returns (also on a panic; if giving back fails, the Searcher
// refuses further searches with ErrDirtyScratch until ScratchRebuilt).
// Host code called during a search (the CostModel, a placement Scorer)
// sees the live state unchanged, and a Scorer sees only Scratch.
//
// Several preemptions in one cycle use disjoint victims: pass the IDs
// chosen so far in exclude, and the accepted drains as Request.Claims
// (the scheduler's Drains, or a ledger implementing Claims), so that freed
// GPUs already promised are not promised again.
//
// # Drains: the convention with the topology and the quota tree
//
// A Drains keeps, per beneficiary, the GPUs nominated for it and the
// victims it waits for. The scheduler follows this convention, under which
// for every node Allocated = GPUs of running workloads (victims included
// until they exit) + Reserved, and Nominated - Reserved are GPUs victims
// still hold and have promised; so free + allocated + nominated-but-held
// never exceeds capacity and nothing is given twice:
//
//	reserve, err := drains.Accept(plan, now) // 1. nominate
//	for _, x := range reserve { fleet.Allocate(x.Node, x.GPUs) } // free GPUs taken at once
//	tree.AddUsage(queue, flavor, gpus)        // the beneficiary is admitted, waiting
//	// send SIGTERM to each plan.Victims[i] with its Deadline
//
//	// 2. a victim exits (drained or killed):
//	keep := drains.Claims(id)                // its GPUs promised to nominations
//	// release in the fleet what it held minus keep; tree.RemoveUsage its usage
//	drains.VictimExited(id)
//
//	for _, id := range drains.Due(now) { /* kill id */ } // 3. past deadline
//
//	if drains.Ready(b) { a, _ := drains.Complete(b) } // 4. start b on a: already allocated
//
//	for _, x := range drains.Dissolve(b) { fleet.Release(x.Node, x.GPUs) } // 5. b cancelled
//	tree.RemoveUsage(...)                     // and its usage
//
// What it is not: preempt sends no signals and keeps no clock; time comes
// in as arguments. A Searcher and a Drains are not safe for concurrent use.
//
//	index := preempt.NewIndex(fleet, tree) // index.Add(r) on start, Update, Remove
//	s := preempt.NewSearcher(preempt.Options{})
//	view := preempt.View{Fleet: fleet, Tree: tree, Index: index, Scratch: mirror}
//	plan, err := s.Victims(view, preempt.Request{W: &w, Queue: q, Flavor: h100, Now: now}, nil)
//	var np *preempt.NoPlan
//	if errors.As(err, &np) { ... }    // np.Why: no candidates, quota or topology unreachable
package preempt
