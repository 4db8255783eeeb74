package fleet

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet/quota"
)

// CheckInvariants lets the external tests check the ledger after every
// step, and that the pending work is listed in order exactly once.
func (s *Scheduler) CheckInvariants() error {
	if s.ordered.Len() != len(s.queued) {
		return fmt.Errorf("%d pending workloads listed in order, %d queued", s.ordered.Len(), len(s.queued))
	}
	var prev *entry
	var err error
	s.ordered.Ascend(func(e *entry) bool {
		switch {
		case s.queued[e.w.ID] != e:
			err = fmt.Errorf("%s listed in order, not queued", e.w.ID)
		case prev != nil && !queueLess(prev, e):
			err = fmt.Errorf("%s listed after %s", e.w.ID, prev.w.ID)
		}
		prev = e
		return err == nil
	})
	if err != nil {
		return err
	}
	return s.books.CheckInvariants()
}

// UsageOf is a queue's quota usage of one resource of a flavor ("" for
// GPUs, in thousandths), for tests of resource accounting.
func (s *Scheduler) UsageOf(queue, flavor, resource string) int64 {
	q, _ := s.tree.Node(queue)
	f, _ := s.tree.Flavor(flavor)
	r := quota.GPU
	if resource != "" {
		r, _ = s.tree.Resource(resource)
	}
	return s.tree.UsageOf(q, f, r)
}

// NodeResource is a node's allocated amount of a named resource and its
// thousandths of GPU in use.
func (s *Scheduler) NodeResource(node, resource string) (amount int64, milliGPUs int) {
	n, _ := s.fleet.Node(node)
	if r, ok := s.fleet.Resource(resource); ok {
		amount = s.fleet.ResourceAllocated(n, r)
	}
	return amount, s.fleet.MilliUsed(n)
}

// PlanDefragNaive plans every domain of a level in full, with no bound,
// and returns the cheapest plan's cost and move count (ok false: none):
// the reference the bounded search must equal.
func (s *Scheduler) PlanDefragNaive(now time.Time, level, flavor string, gpus int, priority int32) (lost float64, moves int, ok bool) {
	l, _ := s.fleet.Level(level)
	g, _ := s.groupOfFlavor(flavor)
	lo, hi := s.fleet.DomainsAt(l)
	price := 0.0
	for d := lo; d < hi; d++ {
		st := s.fleet.Stats(d, g)
		need := gpus
		if need == 0 {
			need = st.HealthyGPUs
		}
		if st.HealthyGPUs < need || need == 0 {
			continue
		}
		whole, nodes, movers, fine := s.clearable(now, d, g, priority, "", need == st.HealthyGPUs)
		if !fine {
			continue
		}
		p, found := s.planDomain(now, d, need, whole, nodes, movers, priority)
		if !found {
			continue
		}
		if !ok || p.price < price || p.price == price && len(p.Moves) < moves {
			price, lost, moves, ok = p.price, p.LostGPUSeconds, len(p.Moves), true
		}
	}
	return lost, moves, ok
}
