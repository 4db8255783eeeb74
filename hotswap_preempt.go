package fleet

import (
	"cmp"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Replacements that preempt. A lost pod of a gang that survives the loss
// of a node goes to a free node inside the domain its topology request
// keeps it in when one has room (hotSwaps). When none has, the node of
// that domain where draining lower-priority, preemptible work makes room
// at the least lost work (then the lowest node ID) is cleared with the
// drain contract (reason hot-swap): the victims get their grace, and the
// replacement takes their GPUs in the first cycle after they have left.
// While victims drain for a gang, no more are chosen for it, unless its
// lost pods need more GPUs than they hold.

// swapPreempt drains victims for the lost pods of gang e that no free
// node could take this cycle.
func (s *Scheduler) swapPreempt(now time.Time, e *entry, d *Decisions) {
	need := -s.books.SwapDraining(e.w.ID)
	for _, lp := range e.rec.Lost {
		need += lp.Pod.GPUs
	}
	var taken []topology.NodeID
	for _, lp := range slices.Clone(e.rec.Lost) {
		if need <= 0 {
			return
		}
		n, victims, ok := s.swapVictims(now, e, lp.Pod, taken)
		if !ok {
			continue
		}
		taken = append(taken, n)
		for _, v := range victims {
			r, err := s.books.DrainForSwap(v.w.ID, e.w.ID, now, now.Add(v.grace()))
			if err != nil {
				panic("fleet: draining a checked hot-swap victim: " + err.Error())
			}
			dr := Drain{ID: v.w.ID, Deadline: r.Drain.Deadline, Reason: gang.DrainHotSwap,
				Beneficiaries: []string{e.w.ID}, LostGPUSeconds: s.moveCost(v, now)}
			d.Drain = append(d.Drain, dr)
			ev := s.event(EventDrainStarted, now, v)
			ev.Reason, ev.Beneficiaries, ev.Deadline, ev.LostGPUSeconds = dr.Reason.String(), dr.Beneficiaries, dr.Deadline, dr.LostGPUSeconds
			ev.Node = s.fleet.NodeName(n)
			s.emit(ev)
		}
		need -= lp.Pod.GPUs
	}
}

// swapVictims finds the node for a lost pod of e, inside the domain its
// topology request keeps it in and not in taken, where draining the
// cheapest lower-priority work makes room for the pod at the least lost
// work (then the lowest node ID), and those victims, cheapest first (then
// ID). A victim is running (not draining), preemptible under its class's
// drain contract, past its minimum runtime, of priority below e's, and
// has no pods waiting for a replacement itself.
func (s *Scheduler) swapVictims(now time.Time, e *entry, pod placement.Pod, taken []topology.NodeID) (topology.NodeID, []*entry, bool) {
	f := s.fleet
	lo, hi, g := s.swapRange(e, pod)
	held := s.holdsAgainst(now, e)
	type cand struct {
		e    *entry
		gpus int
		cost float64
	}
	var (
		best      topology.NodeID
		bestCost  float64
		bestPicks []*entry
		found     bool
		cands     []cand
	)
	for n := lo; n < hi; n++ {
		if f.Health(n) != topology.Healthy || f.NodeGroup(n) != g || f.Capacity(n) < pod.GPUs || slices.Contains(taken, n) ||
			inDomains(f, n, held) {
			continue
		}
		cands = cands[:0]
		for _, id := range s.books.HoldersOn(n) {
			v := s.work[id]
			r := v.rec
			if v == e || r.State != gang.Admitted || !r.Policy.Preemptible || v.priority >= e.priority ||
				len(r.Lost) > 0 || now.Before(r.Started.Add(r.Policy.MinRuntime)) {
				continue
			}
			c := cand{e: v, cost: s.moveCost(v, now)}
			for _, x := range r.Nodes {
				if x.Node == n {
					c.gpus += x.GPUs
				}
			}
			cands = append(cands, c)
		}
		slices.SortFunc(cands, func(a, b cand) int { return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.e.w.ID, b.e.w.ID)) })
		room, cost, picks := f.Free(n), 0.0, 0
		for _, c := range cands {
			if room >= pod.GPUs || found && cost >= bestCost {
				break
			}
			room += c.gpus
			cost += c.cost
			picks++
		}
		if room < pod.GPUs || found && cost >= bestCost {
			continue
		}
		best, bestCost, found = n, cost, true
		bestPicks = bestPicks[:0]
		for _, c := range cands[:picks] {
			bestPicks = append(bestPicks, c.e)
		}
	}
	return best, bestPicks, found
}

// swapRange is the nodes [lo, hi) and the group a lost pod of e may be
// replaced in: the domain of its required level that holds its other
// pods (the whole fleet without one), nodes of the lost node's group.
func (s *Scheduler) swapRange(e *entry, pod placement.Pod) (lo, hi topology.NodeID, g topology.GroupID) {
	f, r := s.fleet, e.rec
	g = f.NodeGroup(pod.Node)
	lo, hi = 0, topology.NodeID(f.NumNodes())
	if req := e.w.Topology.Required; req != "" {
		if l, ok := f.Level(req); ok {
			anchor := pod.Node
			if len(r.Assign.Pods) > 0 {
				anchor = r.Assign.Pods[0].Node
			}
			lo, hi = f.Nodes(f.DomainOf(anchor, l))
		}
	}
	return lo, hi, g
}
