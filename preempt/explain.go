package preempt

import "github.com/fleetsched/fleet/quota"

// explain fills a NoPlan's candidate count and exclusions, as
// counting every indexed workload by the rule that excludes it would.
// Whole queues (another flavor or tree, a rule that never takes from
// them, not borrowing) are counted from the Index's per-queue numbers;
// in the queues the rules allow, work is walked in eviction order up to
// the queue's highest candidate priority, and what lies above it is
// counted as excluded by priority. So a NoPlan costs O(queues x flavors
// + the allowed queues' work up to that priority + the gone), paid only
// when preemption cannot help.
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
			cands := int(x.total[qs] - x.blocked[qs])
			if cands == 0 {
				continue
			}
			gone := s.goneIn(q)
			ex.Claimed += gone
			if !qr.allowed {
				*ex.field(qr.excluded) += cands - gone
				continue
			}
			seen := 0
			x.byQueue[qs].Ascend(func(k orderKey) bool {
				if k.band >= runningBand && int64(bandPrio(k.band)) > qr.maxPrio {
					return false
				}
				if k.band&1 != 0 && x.entries[k.pos].split() {
					return true // counted at its surplus's key
				}
				seen++
				switch e := s.excludedBy(k.pos); e {
				case 0:
					candidates++
				case ExcludedClaimed:
					seen-- // counted with the gone
				default:
					*ex.field(e)++
				}
				return true
			})
			// Unwalked: the running work above maxPrio, less its gone.
			ex.Priority += cands - gone - seen
		}
	}
	np.Candidates, np.Excluded = candidates, ex
}

// goneIn counts the candidates of queue q in the request's flavor
// counted as gone (excluded as claimed).
func (s *Searcher) goneIn(q quota.NodeID) int {
	n := 0
	for _, pos := range s.gone {
		if e := &s.index.entries[pos]; e.run.Queue == q && e.run.Flavor == s.flavor && e.cand {
			n++
		}
	}
	return n
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
