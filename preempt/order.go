package preempt

import (
	"cmp"
	"slices"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/quota"
)

// cand is a workload the search has looked at and the rules allow as a
// victim (for some attempt; see keep).
type cand struct {
	entry    int32 // position in the Index
	run      *Running
	id       string
	prio     int32
	gpus     int
	cost     float64 // by the CostModel, asked once, when first looked at
	draining bool
	other    bool        // another queue than the preemptor's
	share    quota.Share // fair sharing: its side of the tree's share at the start
	hier     bool        // the preemptor has hierarchical advantage over its queue
	whileB   bool        // borrowWithinCohort allows it while the preemptor borrows
	taken    bool
}

// compareCandidates is the eviction order, the one order of the package;
// every other order (the Index's static key, the merge of queues, the
// order of a node's candidates) derives from it:
//  1. already draining first: their GPUs are coming back anyway;
//  2. other queues' borrowed work before the preemptor's own queue;
//  3. under fair sharing, higher dominant share of the candidate's side
//     of the tree first (the same for every candidate of a queue);
//  4. lower priority first;
//  5. lower cost first;
//  6. ID.
func compareCandidates(a, b *cand) int {
	if a.draining != b.draining {
		if a.draining {
			return -1
		}
		return 1
	}
	if a.other != b.other {
		if a.other {
			return -1
		}
		return 1
	}
	if c := b.share.Compare(a.share); c != 0 {
		return c
	}
	if c := cmp.Compare(a.prio, b.prio); c != 0 {
		return c
	}
	if c := cmp.Compare(a.cost, b.cost); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// queueStream walks one queue's candidates in eviction order. The Index
// keeps them by (draining, priority, ID), criteria 1 and 4, which within
// one queue (criteria 2 and 3 are the queue's) is the eviction order up
// to cost: the stream fetches one band of equal draining and priority at
// a time, prices it and sorts it by compareCandidates. Only the bands the
// search reaches are priced.
type queueStream struct {
	queue   quota.NodeID
	tree    *btree.BTreeG[orderKey]
	next    uint64 // the band to fetch next
	maxPrio int64  // priorities above are not candidates (the queue's rule, the attempt)
	band    []int32
	at      int
	done    bool
}

// head returns the stream's next candidate, fetching bands as needed, or
// -1 when it is exhausted.
func (s *Searcher) head(st *queueStream) int32 {
	for st.at >= len(st.band) {
		if st.done || !s.fetchBand(st) {
			st.done = true
			return -1
		}
	}
	return st.band[st.at]
}

// fetchBand loads the next band holding candidates into st.band.
func (s *Searcher) fetchBand(st *queueStream) bool {
	st.band, st.at = st.band[:0], 0
	for len(st.band) == 0 {
		first, any := orderKey{}, false
		st.tree.AscendGreaterOrEqual(orderKey{band: st.next}, func(k orderKey) bool {
			if !any {
				first, any = k, true
			} else if k.band != first.band {
				return false
			}
			if int64(bandPrio(k.band)) <= st.maxPrio {
				if c := s.classify(k.pos); c >= 0 {
					st.band = append(st.band, c)
				}
			}
			return true
		})
		if !any {
			return false
		}
		switch {
		case int64(bandPrio(first.band)) > st.maxPrio && first.band < 1<<32:
			st.next = 1 << 32 // past the draining bands' priorities: on to the running ones
		case int64(bandPrio(first.band)) > st.maxPrio:
			return false
		default:
			st.next = first.band + 1
		}
	}
	cs := s.cands
	slices.SortFunc(st.band, func(a, b int32) int { return compareCandidates(&cs[a], &cs[b]) })
	return true
}

func bandPrio(b uint64) int32 { return int32(uint32(b) ^ 1<<31) }

// merged is the eviction order over every queue of an attempt: a k-way
// merge of the queues' streams by compareCandidates (queues are few).
type merged struct {
	streams []queueStream
	heads   []int32 // per stream: its head candidate, -1 when exhausted
}

// next returns the next candidate in eviction order and the stream it
// came from, and advances past it; -1 when every stream is exhausted.
func (s *Searcher) next(m *merged) (ci int32, from int) {
	best := -1
	for i := range m.streams {
		h := m.heads[i]
		if h < 0 {
			continue
		}
		if best < 0 || compareCandidates(&s.cands[h], &s.cands[m.heads[best]]) < 0 {
			best = i
		}
	}
	if best < 0 {
		return -1, -1
	}
	c := m.heads[best]
	st := &m.streams[best]
	st.at++
	m.heads[best] = s.head(st)
	return c, best
}

// drop ends stream i early: its queue's remaining candidates can no
// longer be taken.
func (m *merged) drop(i int) { m.heads[i] = -1 }
