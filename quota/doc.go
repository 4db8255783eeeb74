// Package quota is fleet's quota tree: who is guaranteed how many GPUs of
// each flavor, how unused guarantees are lent and borrowed, and whether a
// request fits now.
//
// # The model
//
// A Tree is built from a Spec: cohorts (inner nodes, which may hold a
// shared pool of quota of their own) and queues (leaves; only queues hold
// workloads), to any depth. Every node with no parent is a root; several
// roots are several independent trees that lend each other nothing. Per node
// and flavor (a GPU model) there is a nominal quota, an optional borrowing
// limit and an optional lending limit; "no limit" is the zero Limit, not a
// nil pointer. Per node there is a fair-sharing weight (default 1), and per
// queue the preemption rules and queueing strategy that package preempt and
// the scheduler interpret (quota only stores them).
//
// # Kueue, one to one
//
// The arithmetic is Kueue's hierarchical cohorts (KEP-79) exactly, so a
// Kueue configuration maps onto a Spec node for node: a Cohort is a Cohort
// node, a ClusterQueue a Queue node, a ClusterQueue without a cohort (or a
// cohort tree) a root. With SubtreeQuota, LocalQuota and Usage as Kueue
// names them:
//
//	localQuota(n)   = max(0, subtreeQuota(n) - lendingLimit(n))    (0 without a lending limit)
//	subtreeQuota(n) = nominal(n) + sum over children c of subtreeQuota(c) - localQuota(c)
//	usage(cohort)   = sum over children c of max(0, usage(c) - localQuota(c))
//	available(root) = subtreeQuota - usage
//	available(n)    = max(0, localQuota - usage)
//	                + min(available(parent), subtreeQuota - localQuota - max(0, usage - localQuota) + borrowingLimit)
//
// Available clamps the result at 0 (Kueue's can go negative after quota is
// cut below usage). Usage changes and quota edits move up the tree in
// O(depth); nothing is recomputed from scratch. A queue can use only the
// flavors it lists, as a ClusterQueue can use only its resource groups'
// flavors. When a request fits by borrowing, Fits names the lowest ancestor
// whose subtree holds it (the node of Kueue's "hierarchical advantage") and
// its height as Kueue counts it to rank flavors: the edges from it down to
// the furthest leaf of its subtree. DominantShare is Kueue's fair-sharing DRS:
// GPUs borrowed over what the parent's tree could lend, in thousandths,
// divided by the weight; 0 when not borrowing; +Inf for a weight-0 borrower.
//
// The promise the arithmetic keeps, and the tests check on random trees: a
// queue below its nominal quota gets back to it once the queues above their
// own quota give up their excess. Borrowed capacity is always reclaimable by
// preemption, and a queue takes it back exactly when its own Rules let it:
// ReclaimWithinCohort Any (any borrower) or LowerPriority (borrowers of
// lower priority), and the borrowers' drain contracts let them be stopped.
// With Kueue's default, ReclaimNever, a queue that lent its quota waits for
// the borrowers to end, as in Kueue; fleet.ReferenceConfig sets the rules
// the guarantee needs, and the scheduler's Explain names the rule to change
// when one keeps a workload waiting.
//
// # Resource groups and flavor assignment
//
// A node may split its resources into ResourceGroups, as a Kueue
// ClusterQueue does: each group covers GPUs and/or named resources and
// lists its flavors in order (GPUs of H100 then A100; cpu and memory of
// "default" then "spot"). Without groups a node has one implicit group
// covering everything, its Quotas' flavors in order. Assign is Kueue's
// flavor assigner: for each pod set, in order, and each group, it walks
// the group's flavors and takes the first where every resource the pod
// set asks of the group fits, on top of what the earlier pod sets were
// given; the queue's Fungibility decides whether a flavor that fits only
// by borrowing (WhenCanBorrow) or only by preempting (WhenCanPreempt)
// ends the search. The Assignment says, per pod set and group, the flavor
// and its mode (Fit, Preempt, NoFit) and borrowing level, and sums the
// Charges per flavor and resource; AddCharges and RemoveCharges apply
// them all or nothing. A pod set's GPUFlavors (the GPU models it accepts)
// filter the GPU group's flavors, the way a pod's node selector filters
// flavors by their node labels in Kueue; flavors of other groups carry no
// node labels in fleet and every pod set may use them.
//
// # Differences from Kueue
//
// testdata/kueue holds the facts of Kueue's flavor assigner tests that
// TestKueueFlavorAssignerCorpus runs through Assign: it agrees with
// Kueue's outcome in every case but those marked there with one of these
// deliberate differences.
//
//   - No preemption oracle. Kueue's assigner simulates a victim search
//     for each flavor that needs preemption and passes over one where it
//     finds no candidates. quota knows quotas, not workloads: Assign
//     reports Preempt wherever quota lets preemption make room (ranking a
//     reclaim of the queue's own lent quota above preempting within the
//     queue, as Kueue's oracle results rank them) and package preempt
//     looks for victims.
//   - No pod-set groups. Kueue assigns the pod sets of one topology
//     group (a leader-worker set) together, on their summed requests;
//     fleet assigns every pod set on its own, in order.
//   - Stateless. Kueue resumes a requeued workload's search at the flavor
//     after the one it last tried; Assign starts at the first flavor each
//     time, so the same tree and request give the same answer.
//   - Node labels. A pod set's node selector, affinity and tolerations
//     filter Kueue's flavors by their labels and taints; fleet's pod sets
//     select nodes by GPU model only (PodSetRequest.GPUFlavors), so only
//     the GPU group's flavors are filtered and other groups' flavors are
//     open to every pod set.
//   - fungibility preference (BorrowingOverPreemption,
//     PreemptionOverBorrowing) is not modelled: fleet prefers borrowing
//     over preemption, Kueue's default.
//   - A request of 0 GPUs asks for no GPUs (a request of 0 of a named
//     resource still asks for a flavor, as in Kueue).
//
// # Quota over time
//
// A Schedule (NewSchedule over a base Spec, in a caller's time.Location)
// replaces a node's quota of one flavor while a Window is in force: days
// of the week, a time of day range (past midnight allowed), a date range;
// the last rule listed wins. At(t) gives the quota in force, ready for
// SetQuota; NextChange(t) the next boundary, so a host applies changes at
// exactly those instants; Guaranteed(flavor, t) the sum of nominal
// quotas; ValidateCapacity refuses a schedule whose guarantees exceed the
// fleet at any instant, with the node, flavor and instant. No call reads
// a clock.
//
// # Live edits
//
// SetQuota replaces one node's quota of one flavor; SetNode replaces, as
// one checked edit, everything a node's NodeSpec says that may change at
// run time: its quotas of every flavor, its fair-sharing weight, and a
// queue's preemption rules and queueing strategy (the parent and kind
// are fixed). Usage is kept either way: a queue left above its new quota
// borrows the excess, reclaimable by preemption.
//
// # What it is not
//
// quota does no placement (which GPUs), no ordering of workloads and no
// victim choice: it answers "does this many GPUs of this flavor fit in this
// queue's quota now, and if not, why". It owns no clock and no goroutines.
//
// # The host's obligations
//
//   - Call AddUsage when a workload is admitted or adopted and RemoveUsage
//     when it ends or is evicted, with the same amounts. AddUsage is
//     bookkeeping and never refuses for lack of quota; ask Fits first.
//   - Use IDs from the Tree (Node, Flavor, Queues). Read accessors panic on
//     IDs out of range; mutating calls return errors and, when they refuse,
//     leave the Tree unchanged.
//   - Do not share a Tree between goroutines without a lock. For what-if
//     searches, Clone it (or CopyTo a scratch tree, which does not allocate),
//     or remove usage and add it back: the arithmetic is exact, so the Tree
//     returns to the same state.
//   - Publish the policy: Render writes it as Markdown for the people who
//     hand out GPUs, and ValidateCapacity says when guarantees exceed the
//     fleet.
//
// # Example
//
//	tree, err := quota.New(spec)           // *SpecError names the node and field
//	inference, _ := tree.Node("prod-inference")
//	h100, _ := tree.Flavor("H100")
//	v := tree.Fits(inference, h100, 8)     // no allocation, O(depth)
//	switch v.Mode {
//	case quota.FitsNominal, quota.FitsBorrowing:
//		_ = tree.AddUsage(inference, h100, 8)
//	case quota.NoFit:
//		log.Print(v)                         // v.Reason says which limit bites, by how much
//	}
package quota
