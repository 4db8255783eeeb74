package metrics

import "math"

// sums are the additive figures of one cell (team x shape x flavor) in one
// bucket. Amounts are GPU-seconds unless named otherwise. Shape 0 holds
// what belongs to a team but to no workload: quota lent and idle
// reservation, read from snapshots.
type sums struct {
	Allocated    float64
	Sampled      float64 // allocated GPU-seconds covered by usage samples
	Used         float64 // SM-activity weighted
	UsefulFLOP   float64 // FLOPs, not GPU-seconds
	Idle         float64 // allocated while idle past the window
	Borrowed     float64 // above the queue's nominal quota
	Lent         float64 // the team's unused quota that others borrowed
	IdleReserved float64 // the team's unused quota nobody borrowed
	Lost         float64 // lost to preemption: work since the last checkpoint plus restart
	Restart      float64 // the restart part of Lost
	NodeLost     float64 // lost to failed nodes, likewise
	CrossSpine   float64 // allocated to gangs that cross spines
	LowMFU       float64 // allocated while busy but under the MFU floor past its window
	HotSwapWait  float64 // seconds from a lost node to its replacement, summed
	Overflow     float64 // GPU-seconds a guaranteed inference queue was short (sent elsewhere)
	HotSwapSaved float64 // GPU-seconds a whole-gang failure would have lost beyond the lost pods

	Submissions, Admissions, Preemptions, Kills, CrossSpineGangs, NodeLosses, HotSwaps int64
}

func (s *sums) add(o *sums) {
	s.Allocated += o.Allocated
	s.Sampled += o.Sampled
	s.Used += o.Used
	s.UsefulFLOP += o.UsefulFLOP
	s.Idle += o.Idle
	s.Borrowed += o.Borrowed
	s.Lent += o.Lent
	s.IdleReserved += o.IdleReserved
	s.Lost += o.Lost
	s.Restart += o.Restart
	s.NodeLost += o.NodeLost
	s.CrossSpine += o.CrossSpine
	s.LowMFU += o.LowMFU
	s.HotSwapWait += o.HotSwapWait
	s.Overflow += o.Overflow
	s.HotSwapSaved += o.HotSwapSaved
	s.HotSwaps += o.HotSwaps
	s.NodeLosses += o.NodeLosses
	s.Submissions += o.Submissions
	s.Admissions += o.Admissions
	s.Preemptions += o.Preemptions
	s.Kills += o.Kills
	s.CrossSpineGangs += o.CrossSpineGangs
}

// causeSums count preemptions (or node losses) of one team for one cause.
type causeSums struct {
	Count, Kills int64
	Work         float64 // GPU-seconds since the last checkpoint
	Restart      float64 // GPU-seconds of restart (and warm-up)
}

// levelSums integrate the largest free block of one topology level.
type levelSums struct {
	NodeSeconds, Seconds float64
	Min, Max             float64
}

// fleetSums integrate the fleet-wide gauges read from snapshots.
type fleetSums struct {
	Observed  float64 // seconds covered by a snapshot
	Healthy   float64 // GPU-seconds
	Free      float64
	Stranded  float64
	NodeDowns int64
}

// gangClasses are the gang-size classes of queue-wait quantiles.
const gangClasses = 4

func gangClass(gpus int) int {
	switch {
	case gpus <= 8:
		return 0
	case gpus <= 64:
		return 1
	case gpus <= 512:
		return 2
	}
	return 3
}

func gangClassName(c int) string {
	return [gangClasses]string{"1-8", "9-64", "65-512", "513+"}[c]
}

// bucket holds everything recorded for one time bucket. Slices are indexed
// by the Recorder's interned IDs and grow as IDs appear.
type bucket struct {
	cells     []sums
	causes    []causeSums
	levels    []levelSums
	uplinks   []uplinkSums // by leaf ID
	waitTeam  []sketch
	waitClass [gangClasses]sketch
	drain     sketch
	stranded  sketch // time-weighted, in GPUs
	fleet     fleetSums
}

func (b *bucket) cell(id int32) *sums {
	if int(id) >= len(b.cells) {
		b.cells = append(b.cells, make([]sums, int(id)+1-len(b.cells))...)
	}
	return &b.cells[id]
}

func (b *bucket) cause(id int32) *causeSums {
	if int(id) >= len(b.causes) {
		b.causes = append(b.causes, make([]causeSums, int(id)+1-len(b.causes))...)
	}
	return &b.causes[id]
}

func (b *bucket) level(id int32) *levelSums {
	for int(id) >= len(b.levels) {
		b.levels = append(b.levels, levelSums{Min: math.Inf(1), Max: math.Inf(-1)})
	}
	return &b.levels[id]
}

func (b *bucket) waitOf(team int32) *sketch {
	if int(team) >= len(b.waitTeam) {
		b.waitTeam = append(b.waitTeam, make([]sketch, int(team)+1-len(b.waitTeam))...)
	}
	return &b.waitTeam[team]
}

// store is a run of buckets of one width. The Recorder keeps one for what
// is settled; a Report builds a second, clipped to its window, for what is
// still in progress (running workloads, the latest snapshot), so reading
// never changes the Recorder.
type store struct {
	width  int64 // bucket width in nanoseconds
	base   int64 // bucket number of buckets[0]
	bk     []*bucket
	lo, hi int64 // bucket numbers kept: [lo, hi)
}

func newStore(width, lo, hi int64) store { return store{width: width, lo: lo, hi: hi} }

// number returns the bucket number holding instant t (Unix nanoseconds).
func (st *store) number(t int64) int64 {
	n := t / st.width
	if t%st.width < 0 {
		n--
	}
	return n
}

// at returns bucket number n, creating it, or nil when n is outside the
// store's range.
func (st *store) at(n int64) *bucket {
	if n < st.lo || n >= st.hi {
		return nil
	}
	if len(st.bk) == 0 {
		st.base = n
	}
	if n < st.base {
		grow := int(st.base - n)
		st.bk = append(make([]*bucket, grow, grow+len(st.bk)), st.bk...)
		st.base = n
	}
	i := int(n - st.base)
	if i >= len(st.bk) {
		st.bk = append(st.bk, make([]*bucket, i+1-len(st.bk))...)
	}
	if st.bk[i] == nil {
		st.bk[i] = &bucket{}
	}
	return st.bk[i]
}

// get returns bucket number n if it exists.
func (st *store) get(n int64) *bucket {
	i := n - st.base
	if len(st.bk) == 0 || i < 0 || i >= int64(len(st.bk)) {
		return nil
	}
	return st.bk[i]
}

// spread calls f for every bucket overlapping [a, b) (Unix nanoseconds)
// with the seconds of the overlap: piecewise-constant integration.
func (st *store) spread(a, b int64, f func(bk *bucket, secs float64)) {
	if b <= a {
		return
	}
	first, last := st.number(a), st.number(b-1)
	if first < st.lo {
		first = st.lo
	}
	if last >= st.hi {
		last = st.hi - 1
	}
	for n := first; n <= last; n++ {
		s, e := max(a, n*st.width), min(b, (n+1)*st.width)
		if e > s {
			f(st.at(n), float64(e-s)/1e9)
		}
	}
}

// point returns the bucket holding instant t, or nil outside the range.
func (st *store) point(t int64) *bucket { return st.at(st.number(t)) }
