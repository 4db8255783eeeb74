package preempt

import (
	"cmp"
	"math"
	"slices"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
)

// cand is a workload the search has looked at and the rules allow as a
// victim (for some attempt; see keep), or one of the two parts of an
// elastic workload that can shrink (see part).
type cand struct {
	entry    int32 // position in the Index
	run      *Running
	id       string
	prio     int32
	gpus     int     // the GPUs taking it frees (see nodesOf)
	cost     float64 // by the CostModel, asked once, when first looked at (of its part alone)
	draining bool
	other    bool        // another queue than the preemptor's
	share    quota.Share // fair sharing: its side of the tree's share at the start
	hier     bool        // the preemptor has hierarchical advantage over its queue
	whole    bool        // taking it stops a workload whole: neither a surplus part nor already draining
	part     uint8       // wholeCand, surplusPart or restPart
	whileB   bool        // borrowWithinCohort allows it while the preemptor borrows
	taken    bool
	forQuota bool // taken among the attempt's victims picked for quota
	// wholeCost: a surplus the fair walk reached, its workload's cost
	// whole, by which the walk orders it (see walkHead).
	wholeCost float64
}

// A running elastic workload with pods above its minimum is two
// candidates, one after the other in s.cands: its surplus (the pods it
// gives up first, down to its minimum: a shrink) and its rest (taking
// it too evicts the workload whole). The rest is taken only with the
// surplus, and the surplus is kept out only once the rest is: a victim
// set holds the surplus alone (the workload shrinks) or both (it goes
// whole).
const (
	wholeCand uint8 = iota
	surplusPart
	restPart
)

// rank orders what a victim costs by priority first, then a shrink
// before a whole eviction: the set with the lowest highest rank wins.
func rank(prio int32, whole bool) int64 {
	r := int64(prio) * 2
	if whole {
		r++
	}
	return r
}

// freeRank is the rank of work already draining, below every priority:
// taking it stops nothing new (its GPUs are coming back anyway), so a set
// of such victims alone beats any set that stops or shrinks running
// work, as room that is free does (freePrice).
const freeRank = int64(freePrice) * 2

func (c *cand) rank() int64 {
	if c.draining {
		return freeRank
	}
	return rank(c.prio, c.whole)
}

// nodesOf is the GPUs per node taking c frees: its workload's, or its
// part's.
func (s *Searcher) nodesOf(c *cand) []placement.NodeGPUs {
	if c.part == wholeCand {
		return c.run.Nodes
	}
	p := s.index.entries[c.entry].parts
	if c.part == surplusPart {
		return p.shrink
	}
	return p.rest
}

// compareCandidates is the eviction order, the one order of the package;
// every other order (the Index's static key, the merge of queues, the
// order of a node's candidates) derives from it:
//  1. already draining first: their GPUs are coming back anyway;
//  2. other queues' borrowed work before the preemptor's own queue;
//  3. under fair sharing, higher dominant share of the candidate's side
//     of the tree first (the same for every candidate of a queue);
//  4. lower priority first;
//  5. the surplus of an elastic workload (pods above its minimum, given
//     up pod by pod) before whole evictions;
//  6. lower cost first (a surplus: the lost work of its pods alone);
//  7. ID.
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
	if a.whole != b.whole {
		if !a.whole {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.cost, b.cost); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// queueStream walks one queue's candidates in eviction order. The Index
// keeps them by (draining, priority), criteria 1 and 4, which within one
// queue (criteria 2 and 3 are the queue's) is the eviction order up to
// cost. A band of equal draining and priority is ordered by cost, then
// ID, as the search reaches it:
//   - with a cost model the search knows nothing of, the whole band is
//     priced and sorted;
//   - with DefaultCost, whose cost is GPUs x (unsaved time + overhead),
//     the Index keeps each band by GPUs, then by start of unsaved work,
//     latest first: within one GPU count that is cost order whatever now
//     is, so the band is merged from one cursor per GPU count, each
//     pricing a few candidates at a time. Only what the search reaches is
//     priced, however large the band.
type queueStream struct {
	queue   quota.NodeID
	tree    *btree.BTreeG[orderKey]
	next    uint64 // the band to fetch next
	maxPrio int64  // priorities above are not candidates (the queue's rule, the attempt)
	band    []int32
	at      int
	subs    []subCursor // the current band's cursors, when merging
	merging bool
	cur     int // the cursor holding the head
	done    bool
}

// subCursor walks the candidates of one band with one GPU count.
type subCursor struct {
	from  orderKey // fetch keys from here on
	skip  bool     // from itself was fetched already
	chunk int      // how many to price at the next fetch
	buf   []int32
	at    int
	done  bool
}

// A cursor prices firstChunk candidates at its first fetch, twice as many
// at each next one, up to maxChunk: most cursors are read a little, a few
// far.
const (
	firstChunk = 2
	maxChunk   = 32
)

// head returns the stream's next candidate, fetching bands as needed, or
// -1 when it is exhausted.
func (s *Searcher) head(st *queueStream) int32 {
	for {
		if !st.merging {
			if st.at < len(st.band) {
				return st.band[st.at]
			}
		} else if h := s.subHead(st); h >= 0 {
			return h
		}
		if st.done || !s.fetchBand(st) {
			st.done = true
			return -1
		}
	}
}

// advance moves past the stream's head.
func (s *Searcher) advance(st *queueStream) {
	if !st.merging {
		st.at++
		return
	}
	st.subs[st.cur].at++
}

// subHead returns the lowest head of the band's cursors.
func (s *Searcher) subHead(st *queueStream) int32 {
	best := int32(-1)
	for i := range st.subs {
		c := &st.subs[i]
		for c.at >= len(c.buf) && !c.done {
			s.fetchSub(st, c)
		}
		if c.at >= len(c.buf) {
			continue
		}
		if h := c.buf[c.at]; best < 0 || compareCandidates(&s.cands[h], &s.cands[best]) < 0 {
			best, st.cur = h, i
		}
	}
	return best
}

// fetchSub prices the cursor's next few candidates, and more while they
// tie on cost with the last (so each fetch ends on a cost boundary and
// sorting it by cost, then ID, keeps the cursor in order).
func (s *Searcher) fetchSub(st *queueStream, c *subCursor) {
	c.buf, c.at = c.buf[:0], 0
	band, gpus := c.from.band, c.from.gpus
	last, any := c.from, false
	lastCost := 0.0
	st.tree.AscendGreaterOrEqual(c.from, func(k orderKey) bool {
		if c.skip && !any && k == c.from {
			return true
		}
		if k.band != band || k.gpus != gpus {
			return false
		}
		ci := s.classifyIn(k.pos, k.band)
		// Stop only before a candidate of another cost: work the rules
		// exclude may sit between candidates that tie on cost.
		if len(c.buf) >= c.chunk && ci >= 0 && s.cands[ci].cost != lastCost {
			return false
		}
		last, any = k, true
		if ci >= 0 {
			c.buf = append(c.buf, ci)
			lastCost = s.cands[ci].cost
		}
		return true
	})
	if !any {
		c.done = true
		return
	}
	c.from, c.skip = last, true
	c.chunk = min(2*c.chunk, maxChunk)
	cs := s.cands
	slices.SortFunc(c.buf, func(a, b int32) int { return compareCandidates(&cs[a], &cs[b]) })
}

// fetchBand loads the next band holding candidates: whole into st.band,
// or as cursors per GPU count (see queueStream).
func (s *Searcher) fetchBand(st *queueStream) bool {
	st.band, st.at = st.band[:0], 0
	s.recycleSubs(st)
	for {
		// One walk finds the band, and reads it whole unless it is large
		// and DefaultCost lets cursors price it as reached.
		first, any, large := orderKey{}, false, false
		keys := s.bandKeys[:0]
		st.tree.AscendGreaterOrEqual(orderKey{band: st.next}, func(k orderKey) bool {
			if !any {
				first, any = k, true
				if int64(bandPrio(k.band)) > st.maxPrio {
					return false
				}
			}
			if k.band != first.band {
				return false
			}
			if s.lazyCost && k.band >= runningBand && len(keys) >= s.wholeBand {
				large = true
				return false
			}
			keys = append(keys, k.pos)
			return true
		})
		s.bandKeys = keys
		if !any {
			return false
		}
		if int64(bandPrio(first.band)) > st.maxPrio {
			if first.band < runningBand {
				st.next = runningBand // past the draining bands' priorities: on to the running ones
				continue
			}
			return false
		}
		st.next = first.band + 1
		if large {
			// One cursor per GPU count present in the band.
			for k, ok := first, true; ok; {
				st.subs = append(st.subs, subCursor{from: orderKey{band: k.band, gpus: k.gpus, from: math.MaxInt64}, chunk: firstChunk})
				ok = false
				st.tree.AscendGreaterOrEqual(orderKey{band: k.band, gpus: k.gpus + 1, from: math.MaxInt64}, func(n orderKey) bool {
					if n.band == k.band {
						k, ok = n, true
					}
					return false
				})
			}
			for i := range st.subs {
				if k := len(s.bandBufs); k > 0 {
					st.subs[i].buf, s.bandBufs = s.bandBufs[k-1][:0], s.bandBufs[:k-1]
				}
			}
			st.merging = true
			return true
		}
		for _, pos := range keys {
			if c := s.classifyIn(pos, first.band); c >= 0 {
				st.band = append(st.band, c)
			}
		}
		if len(st.band) > 0 {
			cs := s.cands
			slices.SortFunc(st.band, func(a, b int32) int { return compareCandidates(&cs[a], &cs[b]) })
			return true
		}
	}
}

// wholeBand is the size up to which a band is priced whole, which costs
// less than a cursor per GPU count (s.wholeBand; tests lower it).
const wholeBand = 32

// recycleSubs keeps the cursors' buffers for later bands and streams.
func (s *Searcher) recycleSubs(st *queueStream) {
	for i := range st.subs {
		if st.subs[i].buf != nil {
			s.bandBufs = append(s.bandBufs, st.subs[i].buf[:0])
		}
	}
	clear(st.subs)
	st.subs, st.merging = st.subs[:0], false
}

func bandPrio(b uint64) int32 { return int32(uint32(b>>1) ^ 1<<31) }

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
	s.advance(st)
	m.heads[best] = s.head(st)
	return c, best
}

// drop ends stream i early: its queue's remaining candidates can no
// longer be taken.
func (m *merged) drop(i int) { m.heads[i] = -1 }

// hasOwnCandidates reports whether the preemptor's queue has a candidate.
func (s *Searcher) hasOwnCandidates() bool {
	qr := &s.queues[s.req.Queue]
	return qr.allowed && s.anyCandidate(s.req.Queue, qr.maxPrio)
}

// stream opens queue q's candidates up to maxPrio.
func (s *Searcher) stream(q quota.NodeID, maxPrio int64) queueStream {
	st := queueStream{queue: q, tree: s.index.byQueue[s.index.queueSlot(q, s.flavor)], maxPrio: maxPrio}
	if k := len(s.bandBufs); k > 0 {
		st.band, s.bandBufs = s.bandBufs[k-1][:0], s.bandBufs[:k-1]
	}
	if k := len(s.subPool); k > 0 {
		st.subs, s.subPool = s.subPool[k-1][:0], s.subPool[:k-1]
	}
	return st
}

// recycle keeps a stream's buffers for the next one.
func (s *Searcher) recycle(st *queueStream) {
	s.recycleSubs(st)
	s.subPool = append(s.subPool, st.subs[:0])
	s.bandBufs = append(s.bandBufs, st.band[:0])
	st.band, st.subs = nil, nil
}

// openAttempt opens the merged eviction order over the queues an attempt
// may take from.
func (s *Searcher) openAttempt(a attempt) merged {
	for i := range s.streams {
		s.recycle(&s.streams[i])
	}
	s.streams, s.heads = s.streams[:0], s.heads[:0]
	for q := range s.queues {
		qr := &s.queues[q]
		if !qr.allowed {
			continue
		}
		maxPrio := qr.maxPrio
		if qr.other {
			switch {
			case a.others == othersHier && !qr.hier:
				continue
			case a.others == othersHierOrWhileB && !qr.hier:
				maxPrio = min(maxPrio, qr.whileBMax)
			}
		}
		st := s.stream(quota.NodeID(q), maxPrio)
		if st.tree == nil {
			s.recycle(&st)
			continue
		}
		s.streams = append(s.streams, st)
	}
	for i := range s.streams {
		s.heads = append(s.heads, s.head(&s.streams[i]))
	}
	return merged{streams: s.streams, heads: s.heads}
}

// streamBufs holds the eviction order's streams and their buffers,
// reused from call to call.
type streamBufs struct {
	streams   []queueStream
	heads     []int32
	bandBufs  [][]int32
	subPool   [][]subCursor
	bandKeys  []int32 // fetchBand's keys of one band
	chunk     []int32 // pickForQuota's run of candidates
	chunkFrom []int   // and the stream each came from
}
