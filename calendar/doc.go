// Package calendar books whole blocks of a GPU fleet for windows of time
// ahead ("two whole spines for research from Monday 09:00 for three
// days"), prices each way of doing so, records who approved which, and
// says what the scheduler owes each booking at every instant.
//
// # What it is
//
// A Calendar holds approved bookings and the proposals awaiting a
// decision, over a fleet's structure (package topology) and a quota tree
// (package quota), optionally with quota that follows the clock
// (quota.Schedule). It is a deterministic value: no clock, no goroutines;
// every call takes the host's now. It is not safe for concurrent use.
//
//   - Propose(now, req, running) answers a Request (queue, flavor, GPUs or
//     pod sets, the level of the blocks and how many, start, duration)
//     with Options, best first: which whole domains, the work each would
//     displace (from the view of running work the caller passes, with
//     expected ends), the GPUs it would strand, the approved bookings it
//     overlaps, and whether every queue's guarantee could still be met at
//     every instant of the window. The ranking is in one place (better).
//   - Approve(now, id, option, who) binds an option: it is checked again
//     (other approvals may have come since), journaled with who and when,
//     and only then is it a promise. Reject, Cancel and Shorten are
//     journaled decisions too. Log returns the decisions (JSON), and
//     Replay rebuilds the bookings from them; Snapshot and Restore carry
//     the whole state, proposals included.
//   - Held(now), Due(now) and NextEvent(after) tell the host what each
//     booked domain needs now and when that changes next.
//
// # The promise
//
// At every instant and for every flavor, the guarantees of the quota tree
// (nominal quotas in force at that instant) plus the approved bookings
// never exceed the fleet's GPUs:
//
//	sum of nominal(n, t) + sum over queues q of max(0, booked(q, t) - nominal(q, t)) <= capacity
//
// booked(q, t) counts the whole blocks of q's bookings in force at t. A
// booking within its queue's own guarantee promises nothing new; only its
// excess is added. Approve refuses a booking that would break this
// (*OverCommitError naming the queue, flavor and instant) or that overlaps
// an approved booking of the same domain, or of one above or below it
// (*ConflictError); SetSchedule refuses a schedule that would, and
// RemoveNode a node taken out of service that would (or that lies in an
// approved block not yet over: a removal is planned, not a failure).
// capacity counts the nodes in service only (AddNode brings one back).
// Since both
// sides change only at a schedule boundary or a booking's start or end,
// the check runs at exactly those instants. Bookings of one domain are
// kept in interval indexes (google/btree), so a conflict check costs
// O(log n + k).
//
// # What it is not
//
// The calendar places nothing and evicts nothing: the scheduler does,
// keeping the promise with the ledger it owns. It does not watch running
// work (the caller passes it to Propose) and does not know which workloads
// belong to a booking. A node failure inside a booked domain breaks the
// block: NodeDown answers it with an Offer (keep the block when its other
// nodes still hold the booking, move to a whole healthy domain of the same
// level free for the rest of the window, or none), kept until a repair
// withdraws it (NodeUp) or the host accepts the move (Relocate, a
// journaled decision). The calendar never moves a booking by itself.
//
// # What the scheduler must do
//
// From the approval to the end, for each Hold returned by Held(now):
//
//  1. Booked (before DrainAt): keep the domain free of new open-ended
//     work. Work may enter only if it is expected to end before DrainAt,
//     or if it is preemptible (it will be drained in time).
//  2. Draining (DrainAt = Start minus the grace, default 120 s, to Start):
//     drain every workload in the domain that is not the booking's,
//     preemptible borrowers first, under the drain contract, so that the
//     block is empty at Start; admit no new work there but the booking's.
//  3. Active (Start to End): give the block to the booking's workloads
//     (charged to the booking's queue). Booked GPUs the booking leaves
//     idle may be lent to preemptible work under the drain contract, to be
//     taken back when the booking's work asks for them.
//  4. At End, the hold disappears; Prune(now) forgets ended bookings.
//
// Due(now) returns the holds of phases Draining and Active: a function of
// now, not an edge, so a restarted host repeats nothing and misses
// nothing. NextEvent(after) is the next drain, start, end or quota
// change, for a host that sleeps between events. A Snapshot is plain data
// (JSON); Restore(cfg, snap) rebuilds the Calendar after a restart.
//
// # Example
//
//	cal, err := calendar.New(now, calendar.Config{Fleet: fleet, Quota: tree})
//	opts, err := cal.Propose(now, calendar.Request{ID: "pretrain", Queue: "research",
//		Flavor: "H100", GPUs: 1024, Level: "spine", Blocks: 2,
//		Start: monday9, Duration: 72 * time.Hour}, running)
//	// show opts to a person; opts[i].Feasible() says which can be approved
//	b, err := cal.Approve(now, "pretrain", 0, "alice") // journaled
//	for _, h := range cal.Due(now) {
//		// h.Phase Draining: drain h.Domain's other work; Active: admit the booking's
//	}
package calendar
