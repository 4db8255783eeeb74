package preempt

import (
	"slices"

	"github.com/fleetsched/fleet/topology"
)

// A cell whose room cannot reach the gang even if every candidate in it
// were evicted is left out before it is filled: filling it (fillCellAll,
// Kueue's walk, the warm retry) prices its nodes only to fail. Skipping it
// changes nothing else, which is what makes the skip safe:
//
//   - a failed fill leaves nothing behind: the next cell (or the end of
//     the search) takes back every victim and takes the quota victims
//     again, the state a skip leaves as it is; the cell still counts as
//     evaluated (the search is not hopeless);
//   - the candidates it would have classified are classified later, or
//     never, with the same result: the rules are fixed for the call, and
//     no order or tie-break depends on the order of classification;
//   - classifying asks the cost model, and a negative cost would make the
//     search unbounded mid-way; so the skip is taken only under
//     DefaultCost with a restart overhead of 0 or more, whose prices are
//     never negative and whose calls no host observes.
//
// The bound: a node's GPUs free now (taken victims and gone work
// included) plus those of the work there the rules let go that is not
// taken yet are the most any set of victims can free on it, whichever of
// that work is taken when the fill starts (a fill may give the victims
// picked for quota back and take them again: what it gives back it
// counts again); the cell's pod count rises by what those GPUs add node
// by node, exactly as free counts it. Work already taken whole is in
// what is free now and is not counted twice; an elastic workload taken
// in part counts whole, which only loosens the bound.
// TestRoomShortSkipKeepsPlans compares plans with and without the skip.

// roomShort reports whether cell b cannot hold the gang whatever the
// search takes in it. Each workload on the cell's nodes is looked at
// once, its GPUs added to every node it holds (a gang across the cell
// is read once, not once per node).
func (s *Searcher) roomShort(b cellBound) bool {
	f, x, sh := s.fleet, s.index, &s.shape
	if s.cellFits(b.cell, b.groupSlot) {
		return false
	}
	s.roomEpoch++
	if s.roomEpoch == 0 {
		clear(s.roomSeen)
		clear(s.roomAt)
		s.roomEpoch = 1
	}
	if n := len(x.entries); len(s.roomSeen) < n {
		s.roomSeen = slices.Grow(s.roomSeen, n-len(s.roomSeen))[:n]
	}
	if n := f.NumNodes(); len(s.roomAt) < n {
		s.roomAt, s.roomMore = make([]uint32, n), make([]int32, n)
	}
	// Every workload holding GPUs on node n is listed on n, so once n's
	// list is read, n's room is complete: the walk adds it up node by
	// node and stops as soon as the cell can hold the gang.
	k := sh.podGPUs
	reach := int(s.cellSlots[b.cell*sh.numGroupSlots+int(b.groupSlot)])
	lo, hi := f.Nodes(sh.firstCell + topology.DomainID(b.cell))
	for n := lo; n < hi; n++ {
		if d, gi := s.cell(n); d != b.cell || gi != b.groupSlot {
			continue
		}
		for _, pos := range x.onNode[n] {
			if s.roomSeen[pos] == s.roomEpoch {
				continue
			}
			s.roomSeen[pos] = s.roomEpoch
			if !s.mayTake(pos) || s.takenWhole(pos) {
				continue
			}
			for _, ng := range x.entries[pos].run.Nodes {
				if s.roomAt[ng.Node] != s.roomEpoch {
					s.roomAt[ng.Node], s.roomMore[ng.Node] = s.roomEpoch, 0
				}
				s.roomMore[ng.Node] += int32(ng.GPUs)
			}
		}
		if s.roomAt[n] != s.roomEpoch || s.roomMore[n] == 0 {
			continue
		}
		have, more := f.Free(n)+int(s.freed[n]), int(s.roomMore[n])
		if reach += (have+more)/k - have/k; reach >= sh.pods {
			return false
		}
	}
	return true
}

// roomMarks are roomShort's per-call scratch: the workloads it looked
// at, and per node the GPUs of work there it may take.
type roomMarks struct {
	roomEpoch uint32
	roomSeen  []uint32 // per Index entry: the roomShort call that looked at it
	roomAt    []uint32 // per node: the roomShort call roomMore is of
	roomMore  []int32
}

// mayTake reports whether the rules let the search take the Index entry
// at pos, as classify decides it, without classifying it.
func (s *Searcher) mayTake(pos int32) bool {
	if s.seenAt[pos] == s.epoch {
		return s.candAt[pos] >= 0
	}
	return s.ruleOut(pos) == 0
}

// skipsShortCells reports whether the search may leave out cells whose
// room cannot reach the gang (see roomShort).
func (s *Searcher) skipsShortCells() bool {
	if s.noBounds || s.noRoomSkip || s.unbounded || !s.lazyCost {
		return false
	}
	return s.cost.(DefaultCost).RestartOverhead >= 0
}

// takenWhole reports whether the Index entry at pos is taken in the
// simulation with all it frees (a whole candidate, or both parts of an
// elastic one): its GPUs are in freed already.
func (s *Searcher) takenWhole(pos int32) bool {
	if s.seenAt[pos] != s.epoch {
		return false
	}
	ci := s.candAt[pos]
	if ci < 0 || !s.cands[ci].taken {
		return false
	}
	return s.cands[ci].part != surplusPart || s.cands[ci+1].taken
}

// roomOutOfReach reports, with the skip allowed (skipsShortCells),
// whether a search's walk over the cells (cellBounds, nextCell) leaves
// every one out, for its priority bound or as roomShort, and whether it
// tries one (leaves it out as roomShort rather than for its bound). The
// walk depends on no attempt, and roomShort does not depend on which
// victims are taken, so it holds before the victims for quota are picked
// as after: with short, no attempt then finds a plan, each failing for
// topology once its victims fit quota (hopeless when none is tried), for
// quota otherwise.
func (s *Searcher) roomOutOfReach() (short, tried bool) {
	if !s.skipsShortCells() {
		return false, false
	}
	s.cellBounds()
	if !s.wholeCells {
		// nextCell would yield every bound listed, in an order that
		// does not matter here, and price each to order them.
		for _, b := range s.bounds {
			if b.prio != freePrice && int64(b.prio) > s.maxVictim {
				continue
			}
			tried = true
			if !s.roomShort(b) {
				return false, true
			}
		}
		return true, tried
	}
	for {
		b, more := s.nextCell()
		if !more {
			return true, tried
		}
		if b.prio != freePrice && int64(b.prio) > s.maxVictim {
			continue
		}
		tried = true
		if !s.roomShort(b) {
			return false, true
		}
	}
}
