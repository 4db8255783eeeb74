package calendar

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// resolved is a checked request in the IDs of the fleet and the tree.
type resolved struct {
	level  topology.Level
	flavor quota.FlavorID
	queue  quota.NodeID
	groups []topology.GroupID // the fleet groups of the flavor (and pool)
	grace  time.Duration
	gpus   int
}

// resolve checks req whole, in a fixed order, and returns the first
// refusal as an *Error wrapping the sentinel of the rule broken.
func (c *Calendar) resolve(op string, now time.Time, req Request) (resolved, error) {
	bad := func(err error, format string, args ...any) (resolved, error) {
		return resolved{}, refuse(op, req.ID, err, format, args...)
	}
	var r resolved
	switch {
	case req.ID == "":
		return bad(ErrInvalidRequest, "empty ID")
	case c.bookings[req.ID] != nil:
		return bad(ErrDuplicateID, "a booking %q is approved", req.ID)
	case req.Start.Before(now):
		return bad(ErrStartInPast, "start %s is before now %s", req.Start.Format(time.RFC3339), now.Format(time.RFC3339))
	case req.Duration <= 0:
		return bad(ErrBadDuration, "duration %s", req.Duration)
	case req.Grace < 0:
		return bad(ErrInvalidRequest, "grace %s", req.Grace)
	case !inRFC3339(req.Start) || !inRFC3339(req.End()):
		return bad(ErrBadDuration, "window %s + %s ends past what RFC 3339 holds (years 0000-9999)", req.Start.Format(time.RFC3339), req.Duration)
	}
	l, ok := c.fleet.Level(req.Level)
	if !ok {
		return bad(ErrUnknownLevel, "level %q; the fleet's levels are %v", req.Level, c.fleet.Levels())
	}
	r.level = l
	if r.flavor, ok = c.tree.Flavor(req.Flavor); ok {
		for g := range topology.GroupID(c.fleet.NumGroups()) {
			if c.fleet.GroupFlavor(g) == req.Flavor && (req.Pool == "" || c.fleet.GroupPool(g) == req.Pool) {
				r.groups = append(r.groups, g)
			}
		}
	}
	if len(r.groups) == 0 {
		return bad(ErrUnknownFlavor, "no GPUs of flavor %q in pool %q", req.Flavor, req.Pool)
	}
	q, ok := c.tree.Node(req.Queue)
	switch {
	case !ok:
		return bad(ErrUnknownQueue, "queue %q", req.Queue)
	case !c.tree.IsQueue(q):
		return bad(ErrUnknownQueue, "%q is a cohort, not a queue", req.Queue)
	case !c.tree.Serves(q, r.flavor):
		return bad(ErrUnknownFlavor, "queue %q has no quota of %s", req.Queue, req.Flavor)
	}
	r.queue = q
	podGPUs := 0
	for i, p := range req.PodSets {
		if p.Count < 1 || p.GPUsPerPod < 1 || p.GPUsPerPod > c.fleet.MaxGPUsPerNode() || p.Shared() {
			return bad(ErrInvalidRequest, "podSets[%d]: want a count of at least 1 and 1 to %d whole GPUs per pod", i, c.fleet.MaxGPUsPerNode())
		}
		podGPUs += p.GPUs()
	}
	switch {
	case req.GPUs < 0:
		return bad(ErrInvalidRequest, "gpus %d", req.GPUs)
	case req.GPUs == 0 && len(req.PodSets) == 0:
		return bad(ErrInvalidRequest, "neither GPUs nor pod sets")
	case req.GPUs > 0 && len(req.PodSets) > 0 && req.GPUs != podGPUs:
		return bad(ErrInvalidRequest, "gpus %d, but the pod sets take %d", req.GPUs, podGPUs)
	case req.Blocks < 0:
		return bad(ErrInvalidRequest, "blocks %d", req.Blocks)
	}
	r.gpus = req.gpus()
	lo, hi := c.fleet.DomainsAt(l)
	if req.Blocks > int(hi-lo) {
		return bad(ErrTooLarge, "%d blocks, the fleet has %d of level %s", req.Blocks, hi-lo, req.Level)
	}
	if have := c.gpusOf(topology.Root, r.groups); r.gpus > have {
		return bad(ErrTooLarge, "%d GPUs, the fleet has %d of %s", r.gpus, have, req.Flavor)
	}
	r.grace = req.Grace
	if r.grace == 0 {
		r.grace = c.cfg.Grace
	}
	return r, nil
}

// gpusOf is domain d's GPUs of the groups.
func (c *Calendar) gpusOf(d topology.DomainID, groups []topology.GroupID) int {
	n := 0
	for _, g := range groups {
		n += c.fleet.Stats(d, g).GPUs
	}
	return n
}

// candidate is one domain of the requested level, as Propose ranks it.
type candidate struct {
	d         topology.DomainID
	gpus      int
	conflict  bool
	unhealthy int
	displaced Displaced
	freeBy    time.Time
}

// better is the ranking of blocks, in one place. A block ranks first when
// it:
//
//  1. overlaps no approved booking;
//  2. holds the fewest GPUs of work that cannot be drained (not
//     preemptible) and is expected to run past the drain (open-ended
//     work always is);
//  3. then the fewest of preemptible work within its queue's guarantee;
//  4. then the fewest GPUs on nodes not healthy now;
//  5. then the fewest of borrowed preemptible work (drained as usual);
//  6. then the fewest GPUs, so that the fewest are stranded;
//  7. then the earliest time its other work is expected to end;
//  8. then the lowest domain ID.
func better(a, b *candidate) int {
	if a.conflict != b.conflict {
		if !a.conflict {
			return -1
		}
		return 1
	}
	return cmp.Or(
		cmp.Compare(a.displaced.Blocking, b.displaced.Blocking),
		cmp.Compare(a.displaced.Guaranteed, b.displaced.Guaranteed),
		cmp.Compare(a.unhealthy, b.unhealthy),
		cmp.Compare(a.displaced.Borrowed, b.displaced.Borrowed),
		cmp.Compare(a.gpus, b.gpus),
		a.freeBy.Compare(b.freeBy),
		cmp.Compare(a.d, b.d),
	)
}

// Propose answers a request with its options, best first: sets of whole
// blocks of the requested level that hold the GPUs (and the pods, each on
// one node), ranked by better, at most Config.MaxOptions, no block in two
// options. Each option says what it would displace from running (the view
// the host passes: every workload holding GPUs now, with its expected
// end), the approved bookings it overlaps, and whether the guarantees of
// every queue could still be met at every instant of the window with it.
// An option with conflicts or an over-commitment is offered for
// information; Approve refuses it.
//
// The proposal is kept, under the request's ID, until approved or
// rejected (or proposed again), or until a later Propose finds its start
// passed: it can no longer be approved, so it is dropped then, and
// pending proposals stay as many as the requests still ahead. A refused request (an *Error: start in
// the past, non-positive duration, unknown level, flavor or queue, more
// GPUs or blocks than the fleet, no set of blocks that holds it) leaves the
// Calendar unchanged. The caller owns the options.
func (c *Calendar) Propose(now time.Time, req Request, running []Running) ([]Option, error) {
	r, err := c.resolve("propose", now, req)
	if err != nil {
		return nil, err
	}
	start, end := req.Start, req.End()
	ranked, err := c.rank(r.level, r.groups, start.Add(-r.grace), start, end, running, "")
	if err != nil {
		return nil, refuse("propose", req.ID, ErrInvalidRequest, "%v", err)
	}

	var options []Option
	var group []candidate
	total := 0
	for _, cd := range ranked {
		group = append(group, cd)
		total += cd.gpus
		if req.Blocks > 0 && len(group) < req.Blocks || req.Blocks == 0 && total < r.gpus {
			continue
		}
		if total >= r.gpus && c.podsFit(group, r.groups, req) {
			options = append(options, c.option(len(options), req, r, group))
			if len(options) == c.cfg.MaxOptions {
				break
			}
		}
		group, total = group[:0], 0
	}
	if len(options) == 0 {
		return nil, refuse("propose", req.ID, ErrTooLarge, "%s", noSet(req, r.gpus, ranked))
	}
	for id, p := range c.proposals {
		if p.Request.Start.Before(now) {
			delete(c.proposals, id)
		}
	}
	c.proposals[req.ID] = &Proposal{Request: req.clone(), Proposed: now, Options: options}
	out := make([]Option, len(options))
	for i, o := range options {
		out[i] = o.clone()
	}
	return out, nil
}

// noSet says why no set of blocks holds a request, and what to ask for
// instead.
func noSet(req Request, gpus int, ranked []candidate) string {
	most := 0
	for _, cd := range ranked {
		most = max(most, cd.gpus)
	}
	if req.Blocks > 0 && most > 0 && req.Blocks*most < gpus {
		need := (gpus + most - 1) / most
		return fmt.Sprintf("%d %s block(s) hold at most %d GPUs of %s (%d each): ask for %d blocks (Blocks: %d), "+
			"or Blocks: 0 for as few as hold them", req.Blocks, req.Level, req.Blocks*most, req.Flavor, most, need, need)
	}
	n := "as many as needed"
	if req.Blocks > 0 {
		n = fmt.Sprint(req.Blocks)
	}
	return fmt.Sprintf("no set of %s %s domains holds %d GPUs of %s in the window: approved bookings overlap it, "+
		"or the pods do not fit the nodes; try another window, level or size", n, req.Level, gpus, req.Flavor)
}

// rank returns the domains of level l holding GPUs of the groups, best
// first by better, each with the running work it would displace from
// drainAt and whether it overlaps an approved booking (other than except)
// in [start, end). A running workload on a node outside the fleet is an
// error naming it.
func (c *Calendar) rank(l topology.Level, groups []topology.GroupID, drainAt, start, end time.Time, running []Running, except string) ([]candidate, error) {
	lo, hi := c.fleet.DomainsAt(l)
	cands := make([]candidate, hi-lo)
	for i := range cands {
		cands[i].d = lo + topology.DomainID(i)
	}
	for i := range running {
		w := &running[i]
		for _, ng := range w.Nodes {
			if ng.Node < 0 || int(ng.Node) >= c.fleet.NumNodes() {
				return nil, fmt.Errorf("running %q is on node #%d, not in the fleet", w.ID, ng.Node)
			}
			cd := &cands[c.fleet.DomainOf(ng.Node, l)-lo]
			if !w.End.IsZero() && !w.End.After(drainAt) {
				if w.End.After(cd.freeBy) {
					cd.freeBy = w.End
				}
				continue
			}
			x := &cd.displaced
			switch {
			case !w.Preemptible:
				x.Blocking += ng.GPUs
			case w.Borrowing:
				x.Borrowed += ng.GPUs
			default:
				x.Guaranteed += ng.GPUs
			}
			if n := len(x.Workloads); n == 0 || x.Workloads[n-1] != w.ID {
				x.Workloads = append(x.Workloads, w.ID)
			}
		}
	}
	ranked := cands[:0]
	for i := range cands {
		cd := &cands[i]
		if cd.gpus = c.gpusOf(cd.d, groups); cd.gpus == 0 {
			continue
		}
		healthy := 0
		for _, g := range groups {
			healthy += c.fleet.Stats(cd.d, g).HealthyGPUs
		}
		cd.unhealthy = cd.gpus - healthy
		if except == "" {
			cd.conflict = c.hasConflict(cd.d, start, end)
		} else {
			cd.conflict = len(c.conflicts([]topology.DomainID{cd.d}, start, end, except)) > 0
		}
		ranked = append(ranked, *cd)
	}
	slices.SortFunc(ranked, func(a, b candidate) int { return better(&a, &b) })
	return ranked, nil
}

// option builds the option of a group of ranked blocks.
func (c *Calendar) option(index int, req Request, r resolved, group []candidate) Option {
	group = slices.Clone(group)
	slices.SortFunc(group, func(a, b candidate) int { return cmp.Compare(a.d, b.d) })
	o := Option{Index: index}
	for _, cd := range group {
		o.Domains = append(o.Domains, cd.d)
		o.DomainNames = append(o.DomainNames, c.fleet.DomainName(cd.d))
		o.GPUs += cd.gpus
		o.Unhealthy += cd.unhealthy
		o.Displaced.Blocking += cd.displaced.Blocking
		o.Displaced.Guaranteed += cd.displaced.Guaranteed
		o.Displaced.Borrowed += cd.displaced.Borrowed
		o.Displaced.Workloads = append(o.Displaced.Workloads, cd.displaced.Workloads...)
		if cd.freeBy.After(o.FreeBy) {
			o.FreeBy = cd.freeBy
		}
	}
	// A workload spanning two blocks is named once.
	slices.Sort(o.Displaced.Workloads)
	o.Displaced.Workloads = slices.Compact(o.Displaced.Workloads)
	o.Stranded = o.GPUs - r.gpus
	o.Conflicts = c.conflicts(o.Domains, req.Start, req.End(), "")
	b := &Booking{ID: req.ID, Queue: req.Queue, Held: o.GPUs, Start: req.Start, End: req.End(), flavor: r.flavor, queue: r.queue}
	o.Quota = c.overCommit(r.flavor, req.Start, req.End(), b, "")
	return o
}

// podsFit reports whether the request's pods fit the blocks' nodes of the
// groups, each pod on one node, by first fit in decreasing pod size (a
// request of GPUs alone always fits blocks that hold the GPUs).
func (c *Calendar) podsFit(group []candidate, groups []topology.GroupID, req Request) bool {
	if len(req.PodSets) == 0 {
		return true
	}
	var free []int
	for _, cd := range group {
		free = c.nodeGPUs(free, cd.d, groups, false)
	}
	return fitPods(free, req.PodSets)
}

// nodeGPUs appends the GPUs of domain d's nodes of the groups to free,
// leaving out nodes that are down when up is set.
func (c *Calendar) nodeGPUs(free []int, d topology.DomainID, groups []topology.GroupID, up bool) []int {
	lo, hi := c.fleet.Nodes(d)
	for n := lo; n < hi; n++ {
		if slices.Contains(groups, c.fleet.NodeGroup(n)) && !(up && c.fleet.Health(n) == topology.Down) {
			free = append(free, c.fleet.Capacity(n))
		}
	}
	return free
}

// fitPods reports whether the pod sets fit nodes with free GPUs each, by
// first fit in decreasing pod size. It uses up free.
func fitPods(free []int, podSets []gang.PodSet) bool {
	sets := slices.Clone(podSets)
	slices.SortStableFunc(sets, func(a, b gang.PodSet) int { return cmp.Compare(b.GPUsPerPod, a.GPUsPerPod) })
	for _, p := range sets {
		left := p.Count
		for i := range free {
			if k := min(left, free[i]/p.GPUsPerPod); k > 0 {
				free[i] -= k * p.GPUsPerPod
				left -= k
			}
			if left == 0 {
				break
			}
		}
		if left > 0 {
			return false
		}
	}
	return true
}

// inRFC3339 reports whether t is an instant RFC 3339 can write, a year
// from 0000 to 9999 both in its own location and in UTC: what
// encoding/json marshals. A booking must start and end inside it, or a
// snapshot holding it could not be persisted.
func inRFC3339(t time.Time) bool {
	y, u := t.Year(), t.UTC().Year()
	return y >= 0 && y <= 9999 && u >= 0 && u <= 9999
}
