package fleet

import "time"

// CheckInvariants lets the external tests check the ledger after every
// step.
func (s *Scheduler) CheckInvariants() error { return s.books.CheckInvariants() }

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
