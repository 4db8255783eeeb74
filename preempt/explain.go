package preempt

import "github.com/fleetsched/fleet/quota"

// explain fills a NoPlan's candidate count and exclusions. Whole queues
// (another flavor or tree, a rule that never takes from them, not
// borrowing, the drain contract) are counted from the Index's per-queue
// numbers; the queues the rules allow are walked to sort their work
// between candidates, priority and minimum runtime. So a NoPlan costs
// O(queues x flavors + the allowed queues' candidates), paid only when
// preemption cannot help.
func (s *Searcher) explain(np *NoPlan) {
	x, t := s.index, s.tree
	var ex Exclusions
	candidates := 0
	for q := range quota.NodeID(t.NumNodes()) {
		if !t.IsQueue(q) {
			continue
		}
		qr := &s.queues[q]
		for fl := range quota.FlavorID(t.NumFlavors()) {
			qs := x.queueSlot(q, fl)
			if x.total[qs] == 0 {
				continue
			}
			if fl != s.flavor || qr.excluded == ExcludedOtherFlavorOrTree {
				ex.OtherFlavorOrTree += int(x.total[qs])
				continue
			}
			ex.NotPreemptible += int(x.blocked[qs])
			if x.byQueue[qs] == nil {
				continue
			}
			x.byQueue[qs].Ascend(func(k orderKey) bool {
				if k.band&1 != 0 && x.entries[k.pos].split() {
					return true // counted at its surplus's key
				}
				if e := s.excludedBy(k.pos); e == 0 {
					candidates++
				} else {
					*ex.field(e)++
				}
				return true
			})
		}
	}
	np.Candidates, np.Excluded = candidates, ex
}

// excludedBy is exclusionOf without making a candidate of the entry (a
// count needs no price): the rules of the whole call, as classify
// applies them.
func (s *Searcher) excludedBy(pos int32) Exclusion {
	if s.seenAt[pos] == s.epoch {
		if ci := s.candAt[pos]; ci < 0 {
			return Exclusion(-ci)
		}
		return 0
	}
	return s.ruleOut(pos)
}
