package preempt

import (
	"fmt"
	"slices"

	"github.com/fleetsched/fleet/quota"
)

// Hopeless reports whether s's last search found no cell it could make
// hold the gang, and so tried none.
func Hopeless(s *Searcher) bool { return s.hopeless }

// Looked counts the Index entries s's last search looked at (classified,
// and priced when the rules allow them): the work a pruned cell never
// costs.
func Looked(s *Searcher) int {
	n := 0
	for _, at := range s.seenAt {
		if at == s.epoch {
			n++
		}
	}
	return n
}

// SetNoRoomSkip makes s fill every cell, even one whose room cannot reach
// the gang: the reference the skip must agree with.
func SetNoRoomSkip(s *Searcher, v bool) { s.noRoomSkip = v }

// RoomSkips counts the cells s left out because their room could not
// reach the gang.
func RoomSkips(s *Searcher) int { return s.roomSkips }

// RoomAnswers counts the requests s answered without a search because
// no cell's room could reach the gang.
func RoomAnswers(s *Searcher) int { return s.roomAnswers }

// SetNoBounds makes s try every cell without pruning by lower bounds,
// the reference the pruned search must agree with.
func SetNoBounds(s *Searcher, v bool) { s.noBounds = v }

// SetExplainByWalk makes s count a NoPlan's candidates by walking every
// indexed workload of the request's flavor, the reference explain must
// agree with.
func SetExplainByWalk(s *Searcher) { s.explainAs = (*Searcher).explainByWalk }

func (s *Searcher) explainByWalk(np *NoPlan) {
	x, t := s.index, s.tree
	var ex Exclusions
	candidates := 0
	for q := range quota.NodeID(t.NumNodes()) {
		if !t.IsQueue(q) {
			continue
		}
		for fl := range quota.FlavorID(t.NumFlavors()) {
			qs := x.queueSlot(q, fl)
			if fl != s.flavor || s.queues[q].excluded == ExcludedOtherFlavorOrTree {
				ex.OtherFlavorOrTree += int(x.total[qs])
				continue
			}
			ex.NotPreemptible += int(x.blocked[qs])
			if x.byQueue[qs] == nil {
				continue
			}
			x.byQueue[qs].Ascend(func(k orderKey) bool {
				if k.band&1 != 0 && x.entries[k.pos].split() {
					return true
				}
				if e := s.ruleOut(k.pos); e == 0 {
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

// OrderItem is what the eviction order reads of one candidate.
type OrderItem struct {
	Draining bool
	Other    bool
	Share    quota.Share
	Prio     int32
	Shrink   bool // the surplus of an elastic workload
	Cost     float64
	ID       string
}

func (o OrderItem) cand() cand {
	return cand{draining: o.Draining, other: o.Other, share: o.Share, prio: o.Prio, whole: !o.Shrink, cost: o.Cost, id: o.ID}
}

// CompareOrder is compareCandidates.
func CompareOrder(a, b OrderItem) int {
	x, y := a.cand(), b.cand()
	return compareCandidates(&x, &y)
}

// StaticLess is the Index's order of one queue's candidates (the packed
// band of draining and priority, then ID), and SameBand says whether two
// candidates share a band (the search then orders them by cost and ID).
func StaticLess(a, b OrderItem) bool {
	return keyLess(orderKey{band: packBand(a.Draining, a.Prio, !a.Shrink), id: a.ID}, orderKey{band: packBand(b.Draining, b.Prio, !b.Shrink), id: b.ID})
}

func SameBand(a, b OrderItem) bool {
	return packBand(a.Draining, a.Prio, !a.Shrink) == packBand(b.Draining, b.Prio, !b.Shrink)
}

// StreamOrder returns the IDs of every candidate for req, as the search's
// merged queue streams yield them (the eviction order).
func StreamOrder(s *Searcher, v View, req Request) []string {
	s.begin(v, req, nil)
	defer s.end()
	if s.validateRequest() != nil || s.setupGone() != nil {
		return nil
	}
	s.setupQueues()
	m := s.openAttempt(attempt{true, othersAll})
	var out []string
	for {
		ci, _ := s.next(&m)
		if ci < 0 {
			return out
		}
		out = append(out, s.cands[ci].id)
	}
}

// SetWholeBand sets the band size up to which bands are priced whole (0:
// every band of running work through cursors per GPU count).
func SetWholeBand(s *Searcher, n int) { s.wholeBand = n }

// IndexDiff describes how two indexes of the same workloads differ in
// what a search reads (orders, bands, prices); "" when they agree.
func IndexDiff(a, b *Index) string {
	a.refile()
	b.refile()
	keys := func(x *Index, i int) []string {
		var out []string
		if t := x.byQueue[i]; t != nil {
			t.Ascend(func(k orderKey) bool {
				out = append(out, fmt.Sprintf("%d/%d/%d/%s", k.band, k.gpus, k.from, k.id))
				return true
			})
		}
		return out
	}
	drain := func(x *Index) []string {
		var out []string
		x.draining.Ascend(func(k orderKey) bool {
			out = append(out, k.id)
			return true
		})
		return out
	}
	nodeIDs := func(x *Index, n int) []string {
		var out []string
		for _, i := range x.onNode[n] {
			out = append(out, x.entries[i].run.W.ID)
		}
		slices.Sort(out)
		return out
	}
	switch {
	case a.Len() != b.Len():
		return fmt.Sprintf("len %d != %d", a.Len(), b.Len())
	case !slices.Equal(drain(a), drain(b)):
		return "draining"
	case !slices.Equal(a.held, b.held):
		return "held"
	case !slices.Equal(a.reach, b.reach):
		return "reach"
	case !slices.Equal(a.firstSlot, b.firstSlot):
		return "firstSlot"
	case !slices.Equal(a.clearPrice, b.clearPrice):
		return "clearPrice"
	case !slices.Equal(a.maxClear, b.maxClear):
		return "maxClear"
	case !slices.Equal(a.cellClear, b.cellClear):
		return "cellClear"
	case !slices.Equal(a.blocked, b.blocked) || !slices.Equal(a.total, b.total):
		return "per-queue counts"
	case !slices.Equal(a.runGPUs, b.runGPUs) || !slices.Equal(a.runGPUFrom, b.runGPUFrom):
		return "cost sums"
	}
	for i := range a.byQueue {
		if !slices.Equal(keys(a, i), keys(b, i)) {
			return fmt.Sprintf("queue slot %d order", i)
		}
		if !slices.Equal(a.queueBands[i], b.queueBands[i]) {
			return fmt.Sprintf("queue slot %d bands", i)
		}
	}
	for d := range a.gpuBands {
		if !slices.Equal(a.gpuBands[d], b.gpuBands[d]) || !slices.Equal(a.nodeBands[d], b.nodeBands[d]) ||
			!slices.Equal(a.domQueues[d], b.domQueues[d]) {
			return fmt.Sprintf("domain %d bands", d)
		}
	}
	for n := range a.onNode {
		if !slices.Equal(nodeIDs(a, n), nodeIDs(b, n)) {
			return fmt.Sprintf("node %d workloads", n)
		}
	}
	lines := func(x *Index, i int) []lineKey {
		var out []lineKey
		if t := x.classes[i]; t != nil {
			t.Ascend(func(k lineKey) bool {
				out = append(out, k)
				return true
			})
		}
		return out
	}
	if !slices.Equal(a.lines, b.lines) || !slices.Equal(a.lineCount, b.lineCount) {
		return "node lines"
	}
	for i := range a.classes {
		if !slices.Equal(lines(a, i), lines(b, i)) {
			return fmt.Sprintf("class tree %d", i)
		}
	}
	return ""
}

// IndexOnNode lists the IDs of the workloads holding GPUs on node n, in
// the index's own order (which searches read in).
func IndexOnNode(x *Index, n int) []string {
	var out []string
	for _, i := range x.onNode[n] {
		out = append(out, x.entries[i].run.W.ID)
	}
	return out
}

// SetNoQuotaAnswer makes s search even when the per-queue sums prove no
// attempt can make quota fit: the reference that answer must agree with.
func SetNoQuotaAnswer(s *Searcher, v bool) { s.noQuotaAnswer = v }

// QuotaAnswers counts the requests s answered WhyQuota from the sums,
// without a search.
func QuotaAnswers(s *Searcher) int { return s.quotaAnswers }

// SetEpoch sets the epoch s marks its per-call records with, so that a
// test can bring its wrap (after 2^32 calls) to the next call.
func SetEpoch(s *Searcher, e uint32) { s.epoch = e }

// SetCellEpoch sets the counter s marks its cell and node walks with.
func SetCellEpoch(s *Searcher, e uint32) { s.cellEpoch = e }
