// Package preempt chooses who to evict so that a pending workload fits,
// in quota and in topology, and keeps the books of the drains that follow.
//
// # Victims
//
// Searcher.Victims returns a Plan: a 1-minimal set of running workloads
// to stop whole, or, for elastic ones, to shrink (give up some pods
// above their minimum, never some pods of a gang), each with the rule
// that allowed it, its drain deadline, the GPUs it frees and its cost,
// plus the assignment the beneficiary will get once they are gone. Or a
// *NoPlan
// saying why none exists and, per rule (NoPlan.Excluded), how many
// running workloads it kept out. The candidate rules are Kueue's meaning
// of the queue's quota.Rules (withinQueue, reclaimWithinCohort,
// borrowWithinCohort with its threshold and the hierarchical-advantage
// exemption, and fair-sharing preemption), the drain contract
// (Running.Preemptible) and the minimum runtime: see classifyEntry and
// attempts. The one candidate order is compareCandidates: draining
// first, other queues' borrowed work, (fair sharing) higher share, lower
// priority, an elastic workload's surplus (see below) before whole
// evictions, lower cost, ID. Each victim carries the reason Kueue labels
// it with, by the candidate's variant (see Searcher.reason): InQueue,
// Reclaim (InCohortReclamation), ReclaimWhileBorrowing, FairSharing
// (InCohortFairSharing). WithinQueueLowerOrNewerEqualPriority compares
// queue-order times (Running.Submitted, Request.Submitted).
//
// # Elastic victims: shrinking before evicting
//
// A running workload with pods above its minimum (Running.Shrinkable,
// Running.Keep) is offered to the search as two candidates: its surplus,
// the pods it gives up first down to its minimum, priced by the lost
// work of those pods alone; and its rest, which completes its eviction.
// At one priority the surplus comes before every whole eviction, and a
// set is ranked by its highest victim priority, then a shrink below a
// whole eviction: so the search itself chooses to shrink an elastic
// workload rather than evict a workload of the same priority whole, even
// one that would lose less work, while lower priority still goes first
// (a whole eviction of lower priority comes before a shrink). Work
// already draining stops nothing new and ranks below every priority: a
// set of draining victims alone beats any set that stops or shrinks
// running work, whatever their priorities. A shrunk
// victim gives up, pod by pod, only the pods the request needs (see
// shrinkTaken); the plan's cost counts those pods' lost work alone.
// Sets of one rank are compared with each surplus priced whole, the most
// it can lose: a set whose shrink is later trimmed to fewer pods may so
// lose to one that costs less than it priced whole but more than it
// trimmed. Pricing every set compared by its trimmed pods would simulate
// each surplus pod of each set, a cost that grows with the elastic work
// the search meets.
//
// # Fair sharing
//
// With Request.FairSharing the victims for quota are chosen by Kueue's
// fair-sharing walk (pickFair): the request is added to the preemptor's
// queue, and the walk descends from the root to the child with the
// highest share, again after every eviction; the preemptor's own queue
// takes its place in that ranking by its share, request included. A
// queue's candidates go in eviction order; other queues' must pass the
// first of Options.FairSharingStrategies (default: S2-a,
// LessThanOrEqualToFinalShare, then S2-b, LessThanInitialShare) unless
// the preemptor stays within its nominal quota; those the first leaves
// are offered to the second, one per queue, once the first is done. The
// walk judges and takes an elastic workload whole, as Kueue does, in the
// place of its whole eviction in the eviction order, priced whole; the
// fill-back that follows may leave its rest out, so that it shrinks.
//
// # The Index: the host's candidates, kept up to date
//
// The running workloads are an Index the host keeps as work starts and
// stops, each change validated once (typed *IndexError):
//
//	index.Add(r)       // a workload started (or was adopted)
//	index.Update(r)    // it started draining, checkpointed, its class changed
//	index.Checkpointed(id) // only its shared spec's LastCheckpoint moved
//	index.Remove(id)   // it ended (finished, failed, drained, killed)
//
// The Index keeps each queue's candidates in the static part of the
// eviction order, and per topology domain, like the fleet's own
// aggregates (O(depth) per change), the candidate GPUs and clearable
// nodes by priority and the cheapest price of room for a pod of each
// size. A search bounds and prunes domains from these numbers, visits
// only the candidates of the domains it keeps, and prices (CostModel) only
// what it reaches: its cost grows with the decision, not with the
// running workloads.
//
// # How a search decides
//
// Victims are picked in eviction order until quota fits; then, for each
// domain of the gang's required level (the whole fleet without one),
// lowest bound first, leaving out a domain whose room cannot reach the
// gang even with every candidate in it evicted (under DefaultCost), room
// is freed node by node, cheapest node first
// (found best-first down the topology), until the domain holds the gang;
// each domain's set is filled back to 1-minimal and scored (highest victim
// rank, work already draining ranking below every priority, then cost,
// then count), and the search stops once no
// remaining domain's bound can beat the best: the same answer as trying
// every domain. When the victims picked for quota used up what a queue
// may lose on work that frees no room in the domain, the domain is freed
// first and quota topped up. When a domain cannot be freed with elastic
// work met in parts (a surplus taken first can spend what its queue may
// lose before smaller work the room needs), it is tried again with each
// elastic workload whole, in the place of its whole eviction. One
// placement on the scratch fleet validates the set and gives
// Plan.Target. Gangs with segments, spread or pod sets of different
// sizes take Kueue's classical path (place after each pick).
//
// The cost of a victim is a CostModel (default: GPUs x work since the last
// checkpoint plus a restart overhead, in GPU-seconds); a host may plug in
// its own (the search then prices whole priority bands as it reaches
// them; DefaultCost's are priced a few candidates at a time).
//
// # What a search reads, and what it never changes
//
// A search reads a View: the live fleet and quota tree, the Index, and a
// Scratch fleet the caller keeps equal to the live one (a mirror: every
// Allocate, Release and SetHealth applied to both). It never changes the
// live fleet, tree or index: quota what-ifs run on the Searcher's own copy
// of the tree (copied per call, O(queues)), and the one placement that
// validates a plan runs on Scratch with the victims' GPUs released, given
// back before Victims returns, also on a panic; if giving back fails, the
// Searcher refuses further searches with ErrDirtyScratch until the caller
// rebuilds the scratch fleet and calls ScratchRebuilt. Host code called
// during a search (the CostModel, a placement Scorer) never sees the live
// state perturbed; a Scorer is shown only Scratch. Why a mirror rather
// than no mutation at all: placement, which decides Plan.Target with the
// host's Scorer, works on a topology.Fleet; releasing the victims' GPUs
// on a mirror costs O(victim nodes x depth), where a clone per search
// would cost O(nodes).
//
// Several preemptions in one cycle use disjoint victims: pass the IDs
// chosen so far in exclude, and the accepted drains as Request.Claims
// (the scheduler's ledger implements it), so that freed GPUs already
// promised are not promised again. Keeping the books of drains (who waits
// for whom, deadlines, kills) is the scheduler's: this package only
// searches.
//
// # Differences from Kueue
//
// The rules are Kueue's, and testdata/kueue holds the facts of Kueue's own
// preemption tests (classical, hierarchical cohorts, fair sharing) that
// TestKueueCorpus runs: fleet chooses Kueue's victims in every case but
// those marked there with one of these deliberate differences.
//
//   - Order within one priority. Kueue evicts the most recently admitted
//     first (then by UID); fleet the cheapest, by the CostModel (work lost
//     since the last checkpoint), then by ID: a drain contract prices
//     what Kueue approximates by age.
//   - Fair sharing and topology: the fair walk chooses the victims quota
//     needs, checking quota alone; victims a domain needs beyond them
//     are taken in the static eviction order (queues ranked by their
//     share at the start of the search), each passing one of the
//     strategies. Kueue runs its walk with a placement after each
//     eviction.
//   - Workloads Kueue would preempt but fleet keeps: those whose drain
//     contract forbids it (Running.Preemptible) and those started less
//     than their MinRuntime ago. Kueue has neither.
//   - One GPU flavor per workload: the search frees whole GPUs of the
//     one model a workload lands on. Named resources charged in other
//     flavors (resource groups that split a queue's resources) are
//     reclaimed by the scheduler's path for shares, slices and resources
//     (docs/sharing.md), so Kueue's cases where pod sets of one workload
//     preempt in different flavors, or where two resources contend at
//     once, are not in this corpus.
//   - Topology: a gang's victims are chosen per domain of its required
//     level, the domain whose set has the lowest highest rank (then
//     cost, count, ID) winning, work already draining ranking below
//     every priority; Kueue removes candidates in its order (work
//     already evicted first) and places after each removal. Kueue's
//     measured outcome is the same min-max domain.
//   - Other queues first, for quota only. Kueue's order ranks other
//     ClusterQueues' candidates before priority; fleet's victims for
//     quota follow it, but the room a gang needs inside its domain is
//     freed where the highest victim priority is lowest, whoever holds
//     it, so a preemptor may evict its own lower-priority work rather
//     than a borrower's of higher priority. On the reference
//     borrow-preempt shape (2,048 one-GPU workloads, 8 x 8 GPUs asked
//     by a queue at its nominal quota) fleet evicts 32 of the borrowing
//     queue's workloads and 32 of the preemptor's own, none above
//     priority 70; freeing 8 of the borrowing queue's nodes alone, as
//     Kueue's order would, evicts work up to priority 78.
//
// What it is not: preempt sends no signals and keeps no clock; time comes
// in as arguments. A Searcher and an Index are not safe for
// concurrent use.
//
//	index := preempt.NewIndex(fleet, tree) // index.Add(r) on start, Update, Remove
//	s := preempt.NewSearcher(preempt.Options{})
//	view := preempt.View{Fleet: fleet, Tree: tree, Index: index, Scratch: mirror}
//	plan, err := s.Victims(view, preempt.Request{W: &w, Queue: q, Flavor: h100, Now: now}, nil)
//	var np *preempt.NoPlan
//	if errors.As(err, &np) { ... }    // np.Why, np.Excluded: what kept preemption from helping
package preempt
