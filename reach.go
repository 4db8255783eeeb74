package fleet

import (
	"math"
	"math/bits"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// What a workload can ever reach. Submit refuses with ErrNeverFits what
// would otherwise be accepted and then wait forever (Explain blaming
// quota or topology): a pod no eligible node can hold, totals beyond
// int64, more MIG slices than the eligible GPUs can carve, shares bound
// to one domain beyond its GPUs, a booked gang beyond its booking's
// blocks. An elastic pod set is judged at its minimum: it starts at any
// size from MinCount up.

// nodeMax is, per fleet group, the most of each resource one node of the
// group has (resources by topology.ResourceID): fixed with the topology,
// built once.
type nodeMax [][]int64

func newNodeMax(f *topology.Fleet) nodeMax {
	out := make(nodeMax, f.NumGroups())
	for g := range out {
		out[g] = make([]int64, f.NumResources())
	}
	for n := range topology.NodeID(f.NumNodes()) {
		row := out[f.NodeGroup(n)]
		for r := range topology.ResourceID(f.NumResources()) {
			row[r] = max(row[r], f.ResourceCapacity(n, r))
		}
	}
	return out
}

// eligible reports whether w may run on fleet group g: a model it
// accepts, in a pool it accepts.
func (s *Scheduler) eligible(w *gang.Workload, g topology.GroupID) bool {
	_, ok := w.Accepts(s.fleet.GroupFlavor(g))
	return ok && (len(w.Pools) == 0 || slices.Contains(w.Pools, s.fleet.GroupPool(g)))
}

// minimum is what w takes at its smallest: whole GPUs and thousandths of
// GPUs (whole GPUs and shares), elastic pod sets of whole-GPU pods at
// their MinCount.
func minimum(w *gang.Workload) (gpus int, milli int64) {
	for i := range w.PodSets {
		p := &w.PodSets[i]
		n := p.Count
		if p.GPUsPerPod > 0 {
			n = p.Min()
		}
		gpus += n * p.GPUsPerPod
		milli += int64(n) * p.MilliGPUsPerPod()
	}
	return gpus, milli
}

// ceilGPUs is milli thousandths of GPU rounded up to whole GPUs.
func ceilGPUs(milli int64) int { return int((milli + gang.MilliGPU - 1) / gang.MilliGPU) }

// checkReach refuses, with ErrNeverFits, what e could never get from
// the fleet itself, whatever else runs; quota reach is checked apart.
func (s *Scheduler) checkReach(op string, e *entry) error {
	w := &e.w
	never := func(format string, args ...any) error { return refuse(op, w.ID, ErrNeverFits, format, args...) }
	// One pod must fit one eligible node: every resource it names.
	for i := range w.PodSets {
		p := &w.PodSets[i]
		for _, r := range p.Resources {
			id, ok := s.fleet.Resource(r.Name)
			if !ok {
				continue // no node has it: checkSharing names it
			}
			most := int64(0)
			for g := range topology.GroupID(s.fleet.NumGroups()) {
				if s.eligible(w, g) {
					most = max(most, s.nodeMax[g][id])
				}
			}
			if r.Amount > most {
				return never("pod set %q: each pod needs %d %s, the largest eligible node has %d", p.Name, r.Amount, r.Name, most)
			}
		}
	}
	if err := s.checkMIGReach(op, e); err != nil {
		return err
	}
	if w.Booking != "" {
		b, _ := s.cal.Booking(w.Booking)
		if _, milli := minimum(w); ceilGPUs(milli) > b.Held {
			return never("needs %d GPUs, booking %q's blocks hold %d", ceilGPUs(milli), w.Booking, b.Held)
		}
	}
	return nil
}

// checkMIGReach refuses a pod set of MIG slices more numerous than the
// eligible MIG GPUs can carve of its profile: at most one slice per
// start position the profile may take, per GPU.
func (s *Scheduler) checkMIGReach(op string, e *entry) error {
	w := &e.w
	var nodes []topology.NodeID
	for i := range w.PodSets {
		p := &w.PodSets[i]
		if p.MIG == "" {
			continue
		}
		if nodes == nil {
			nodes = s.acceptedNodes(w)
		}
		room := 0
		for _, n := range nodes {
			if prof, ok := s.fleet.NodeMIGProfile(n, p.MIG); ok {
				room += s.fleet.Capacity(n) * bits.OnesCount8(prof.Starts)
			}
		}
		if p.Min() > room {
			return refuse(op, w.ID, ErrNeverFits, "pod set %q: %d slices of %s, the eligible GPUs can carve at most %d",
				p.Name, p.Min(), p.MIG, room)
		}
	}
	return nil
}

// checkTotals refuses, with ErrNeverFits, a workload whose total of a
// named resource (pods times amount, over its pod sets) is beyond int64:
// no fleet has that much, and summed it would wrap.
func checkTotals(op string, w *gang.Workload) error {
	var totals map[string]int64
	for i := range w.PodSets {
		p := &w.PodSets[i]
		for _, r := range p.Resources {
			if totals == nil {
				totals = map[string]int64{}
			}
			hi, lo := bits.Mul64(uint64(p.Count), uint64(r.Amount))
			sum := totals[r.Name] + int64(lo)
			if hi != 0 || lo > math.MaxInt64 || sum < totals[r.Name] {
				return refuse(op, w.ID, ErrNeverFits, "pod set %q: the workload's total of %s is beyond int64 (%d pods of %d)",
					p.Name, r.Name, p.Count, r.Amount)
			}
			totals[r.Name] = sum
		}
	}
	return nil
}
