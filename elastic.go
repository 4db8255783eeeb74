package fleet

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// Elastic pod sets (gang.PodSet.MinCount below Count, whole GPUs per pod)
// run at any size from their minimum to their count:
//
//   - admission: a workload that does not fit whole is admitted at the
//     largest size that fits its quota and the fleet (Admission.Pods lists
//     the pods it starts with); a preemption makes room for its minimum;
//   - shrink: the victim search prefers an elastic workload's pods above
//     its minimum, priced by their lost work alone, to evicting a
//     workload of the same priority whole (preempt's package
//     documentation), and asks an elastic victim to give up only the
//     pods the beneficiary needs, down to its minimum, before evicting it
//     whole. Each pod given up is split off into a workload of its own,
//     named ledger.SplitID ("batch-7#workers-5"), and drained under the
//     ordinary contract: Drain.Of and Drain.Pod tell the host which pod to
//     stop, a Kill past the deadline names it the same way, and the host
//     reports that pod's exit with Exited(now, drain.ID, how). The parent
//     runs on, charged for the pods it keeps;
//   - grow: when nothing of its priority or higher waits, a cycle starts
//     missing pods again on free GPUs inside the domain its topology
//     request keeps it in (Decisions.Grow).

// splitPod is a pod split off an elastic workload: the workload it
// belongs to and where it runs, as the host knows it.
type splitPod struct {
	of  string
	pod PodAssignment
}

// Growth starts more pods of a running elastic workload.
type Growth struct {
	ID string // the running elastic workload
	// Pods lists the pods to start now, with their pod set, index, node
	// and GPUs. The GPUs are already accounted to the workload.
	Pods []PodAssignment
}

// elasticSize returns the largest size of e's spec that fits its quota
// and a placement on the fleet now, as a spec of that size: the spec
// itself when it fits whole or is not elastic, or when no size does.
// Elastic pod sets give up pods from the last pod set first. A smaller
// spec is written into a buffer the next call reuses.
func (s *Scheduler) elasticSize(e *entry) *gang.Workload {
	w := &e.w
	if !ledger.Elastic(w) || s.sizeFits(e, w) {
		return w
	}
	most := 0
	for _, ps := range w.PodSets {
		if elasticSet(ps) {
			most += ps.Count - ps.Min()
		}
	}
	// Fitting is monotone in the pods given up: the fewest that fits.
	lo, hi := 1, most
	if !s.sizeFits(e, shrunkSpec(&s.specs.sized, w, most)) {
		return w
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if s.sizeFits(e, shrunkSpec(&s.specs.sized, w, mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return shrunkSpec(&s.specs.sized, w, lo)
}

func (s *Scheduler) sizeFits(e *entry, w *gang.Workload) bool {
	if !s.quotaFits(e.queue, e.flavor, int64(w.GPUs())).Fits() {
		return false
	}
	_, err := s.placer.Place(s.fleet, w)
	return err == nil
}

func elasticSet(ps gang.PodSet) bool {
	return ps.GPUsPerPod > 0 && !ps.Shared() && len(ps.Resources) == 0 && ps.Min() < ps.Count
}

// specBufs are the specs of smaller sizes a cycle tries, kept from call
// to call: a spec of each size is looked at, never kept.
type specBufs struct {
	sized, minimal gang.Workload
}

// shrunkSpec writes into dst w with n pods fewer, taken from its elastic
// pod sets, last first, down to their minimum, and returns dst. dst's
// pod sets are its own (their buffer is reused); their other slices,
// and the rest of the spec, are w's, shared for reading.
func shrunkSpec(dst, w *gang.Workload, n int) *gang.Workload {
	sets := append(dst.PodSets[:0], w.PodSets...)
	*dst = *w
	dst.PodSets = sets
	for i := len(sets) - 1; i >= 0 && n > 0; i-- {
		ps := &sets[i]
		if !elasticSet(*ps) {
			continue
		}
		d := min(n, ps.Count-ps.Min())
		ps.Count -= d
		ps.MinCount = min(ps.MinCount, ps.Count)
		n -= d
		ps.RankGroups = nil
	}
	return dst
}

// minimumSpec is w at its minimum size (w itself when not elastic),
// written into a buffer the next call reuses.
func (s *Scheduler) minimumSpec(w *gang.Workload) *gang.Workload {
	if !ledger.Elastic(w) {
		return w
	}
	most := 0
	for _, ps := range w.PodSets {
		if elasticSet(ps) {
			most += ps.Count - ps.Min()
		}
	}
	return shrunkSpec(&s.specs.minimal, w, most)
}

// splitSpec is the spec of pod index of pod set ps of w once split off:
// one pod of that pod set, with w's queue, priority and drain contract.
func splitSpec(w *gang.Workload, ps, index int) gang.Workload {
	c := w.Clone()
	c.ID = ledger.SplitID(w.ID, w.PodSets[ps].Name, index)
	p := c.PodSets[ps]
	p.Count, p.MinCount, p.RankGroups = 1, 0, nil
	c.PodSets = []gang.PodSet{p}
	c.Topology, c.Spread, c.Booking = gang.TopologyRequest{}, gang.Spread{}, ""
	return c
}

// splitVictim splits the pods a shrink victim gives up into workloads of
// their own and returns them, ready to drain; undo folds them back.
func (s *Scheduler) splitVictim(v preempt.Victim) (ids []string, undo func(), err error) {
	parent := s.work[v.ID]
	var done []placement.Pod
	undo = func() {
		for i, p := range slices.Backward(done) {
			id := ids[i]
			if uerr := s.books.Unsplit(id, p); uerr != nil {
				panic("fleet: folding a split back: " + uerr.Error())
			}
			delete(s.work, id)
		}
	}
	for _, p := range v.Pods {
		spec := splitSpec(&parent.w, p.PodSet, p.Index)
		ce := &entry{w: spec, queue: parent.queue, flavor: parent.flavor, priority: parent.priority, class: parent.class,
			submitted: parent.submitted, seq: parent.seq,
			split: &splitPod{of: parent.w.ID, pod: PodAssignment{PodSet: parent.w.PodSets[p.PodSet].Name, Index: p.Index,
				Node: s.fleet.NodeName(p.Node), GPUs: p.GPUs}}}
		rec, serr := s.books.Split(parent.w.ID, p, &ce.w)
		if serr != nil {
			undo()
			return nil, func() {}, serr
		}
		ce.rec = rec
		s.work[spec.ID] = ce
		ids = append(ids, spec.ID)
		done = append(done, p)
	}
	return ids, undo, nil
}

// grow starts missing pods of shrunk elastic workloads on free GPUs, in
// ID order, when no workload of their priority or higher was left
// waiting by this cycle: waiting work comes first, and growing into room
// it would preempt back costs a drain for nothing.
func (s *Scheduler) grow(now time.Time, waiting int32, anyWaiting bool, d *Decisions) {
	s.shrunk = s.books.AppendShrunken(s.shrunk[:0])
	defer clear(s.shrunk) // the buffer must not keep ended workloads alive
	for _, r := range s.shrunk {
		e := s.work[r.W.ID]
		if anyWaiting && e.priority <= waiting || r.Started.Equal(now) {
			// Work admitted this cycle grows in a later one: a host
			// carries out Grow before Admit, for work already running.
			continue
		}
		held := s.holdsAgainst(now, e)
		if s.barredFromReservation(now, e) {
			held = s.withReserve(held)
		}
		var g Growth
		for ps, set := range r.W.PodSets {
			for range set.Count - r.Size()[ps] {
				idx, ok := s.books.GrowIndex(r, ps)
				if !ok || !s.tree.Fits(e.queue, e.flavor, int64(set.GPUsPerPod)).Fits() {
					break
				}
				n, ok := s.growNode(e, set.GPUsPerPod, held)
				if !ok {
					break
				}
				p := placement.Pod{PodSet: ps, Index: idx, Node: n, GPUs: set.GPUsPerPod}
				if err := s.books.Grow(r.W.ID, []placement.Pod{p}); err != nil {
					panic(fmt.Sprintf("fleet: a grow checked free was refused: %v", err))
				}
				g.Pods = append(g.Pods, PodAssignment{PodSet: set.Name, Index: idx, Node: s.fleet.NodeName(n), GPUs: p.GPUs})
			}
		}
		if len(g.Pods) == 0 {
			continue
		}
		g.ID = r.W.ID
		d.Grow = append(d.Grow, g)
		// GPUs is its size now; BorrowedGPUs what of the pods started
		// is above its queue's nominal quota.
		ev := s.event(EventGrown, now, e)
		grown := 0
		for _, p := range g.Pods {
			grown += p.GPUs
		}
		ev.BorrowedGPUs = int(min(s.tree.Borrowed(e.queue, e.flavor), int64(grown)))
		s.emit(ev)
	}
}

// growNode is where one more pod of e goes: best fit by free GPUs among
// healthy nodes of its group, inside the domain of its required level
// that holds its other pods (anywhere without one), outside held domains.
func (s *Scheduler) growNode(e *entry, gpus int, held []topology.DomainID) (topology.NodeID, bool) {
	f, r := s.fleet, e.rec
	lo, hi := topology.NodeID(0), topology.NodeID(f.NumNodes())
	if req := e.w.Topology.Required; req != "" && len(r.Assign.Pods) > 0 {
		if l, ok := f.Level(req); ok {
			lo, hi = f.Nodes(f.DomainOf(r.Assign.Pods[0].Node, l))
		}
	}
	best, found := topology.NodeID(0), false
	f.AscendNodesByFree(r.Assign.Group, gpus, func(n topology.NodeID, free int) bool {
		if n < lo || n >= hi || f.Health(n) != topology.Healthy {
			return true
		}
		if inDomains(f, n, held) {
			return true
		}
		best, found = n, true
		return false
	})
	return best, found
}

// waitingPriority is the highest priority of the workloads this cycle
// left waiting (not admitted, not nominated), and whether any is.
func waitingPriority(pending []*entry, books *ledger.Ledger) (int32, bool) {
	var top int32
	any := false
	for _, e := range pending {
		if e.rec.State != gang.Pending {
			continue
		}
		if _, ok := books.Nomination(e.w.ID); ok {
			continue
		}
		if !any || e.priority > top {
			top, any = e.priority, true
		}
	}
	return top, any
}

// sizeOf renders a holder's running size for Explain: pods per pod set
// against their counts.
func sizeOf(w *gang.Workload, size []int) string {
	out := ""
	for i, ps := range w.PodSets {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %d of %d", ps.Name, size[i], ps.Count)
		if ps.Min() < ps.Count {
			out += fmt.Sprintf(" (min %d)", ps.Min())
		}
	}
	return out
}
