package metrics

import (
	"github.com/fleetsched/fleet"
)

// snapState is the latest snapshot's gauges, held from its time until the
// next snapshot (or, in a Report, until the clock).
type snapState struct {
	valid                   bool
	at                      int64
	healthy, free, stranded float64
	levels                  []levelValue
	quota                   []quotaValue
	uplinks                 []uplinkValue
}

type levelValue struct {
	level int32
	nodes float64
}

// quotaValue is one team's unused quota of one flavor, split into what
// others borrowed (lent) and what nobody used (idle reservation).
type quotaValue struct {
	cell           int32
	lent, reserved float64
}

// ObserveSnapshot records the scheduler's Snapshot. Its fleet gauges
// (healthy, free and stranded GPUs, the largest free block per level) and
// each queue's lent and unused quota hold from s.Time until the next
// snapshot: call it periodically (every minute, say) for time-weighted
// figures. A snapshot older than the latest input is refused with
// ErrOutOfOrder.
//
// The Snapshot says how much each queue lends (Lendable) and how much
// each borrows, not who lends to whom; a tree's borrowed GPUs of a flavor
// are shared among its queues in proportion to what they could lend.
//
// It reads s.Figures() only: ObserveFigures records the same from
// Scheduler.Figures, without the cost of a Snapshot.
func (r *Recorder) ObserveSnapshot(s fleet.Snapshot) error {
	return r.observeFigures("snapshot", s.Figures())
}

// ObserveFigures records the scheduler's Figures (fleet.Scheduler.Figures)
// as ObserveSnapshot records a Snapshot: the same gauges, held from f.Time
// until the next figures or snapshot. Figures older than the latest input
// are refused with ErrOutOfOrder.
func (r *Recorder) ObserveFigures(f fleet.Figures) error {
	return r.observeFigures("figures", f)
}

// observeFigures records f; what names the input in an error.
func (r *Recorder) observeFigures(what string, s fleet.Figures) error {
	if err := r.checkTime(what, s.Time, r.clock, r.began); err != nil {
		return err
	}
	r.tick(s.Time)
	t := s.Time.UnixNano()
	if r.snap.valid {
		r.integrateSnap(&r.st, t)
	}
	r.snap.valid, r.snap.at = true, t
	r.snap.healthy = float64(s.Fleet.HealthyGPUs)
	r.snap.free = float64(s.Fleet.FreeGPUs)
	r.snap.stranded = float64(s.Fleet.StrandedGPUs)
	r.snap.levels = r.snap.levels[:0]
	for _, b := range s.Fleet.LargestFreeBlock {
		r.snap.levels = append(r.snap.levels, levelValue{r.levels.id(b.Level), float64(b.Nodes)})
	}
	r.snap.quota = r.quotaValues(s.Queues, r.snap.quota[:0])
	r.observeUplinks(s.Fleet.Crossings)
	if r.parent == nil {
		r.parent = map[string]string{}
	}
	for _, q := range s.Queues {
		r.parent[q.Name] = q.Parent
	}
	return nil
}

// quotaValues splits every queue's lendable quota into lent and unused.
func (r *Recorder) quotaValues(qs []fleet.QueueView, out []quotaValue) []quotaValue {
	parent := make(map[string]string, len(qs))
	for _, q := range qs {
		parent[q.Name] = q.Parent
	}
	root := func(name string) string {
		for i := 0; i <= len(qs); i++ { // bounded: a cycle ends the walk
			p, ok := parent[name]
			if !ok || p == "" {
				return name
			}
			name = p
		}
		return name
	}
	type key struct{ root, flavor string }
	type pool struct{ borrowed, lendable float64 }
	pools := map[key]*pool{}
	for _, q := range qs {
		if !q.IsQueue {
			continue
		}
		rt := root(q.Name)
		for _, f := range q.Flavors {
			k := key{rt, f.Flavor}
			p := pools[k]
			if p == nil {
				p = &pool{}
				pools[k] = p
			}
			p.borrowed += float64(f.Borrowed)
			p.lendable += float64(f.Lendable)
		}
	}
	for _, q := range qs {
		if !q.IsQueue {
			continue
		}
		rt := root(q.Name)
		team := r.teams.id(q.Name)
		for _, f := range q.Flavors {
			if f.Lendable <= 0 {
				continue
			}
			p := pools[key{rt, f.Flavor}]
			lendable := float64(f.Lendable)
			lent := min(lendable, p.borrowed*lendable/p.lendable)
			out = append(out, quotaValue{
				cell: r.cellID(team, 0, r.flavorID(f.Flavor)),
				lent: lent, reserved: lendable - lent,
			})
		}
	}
	return out
}

// integrateSnap books the latest snapshot's gauges over [at, t) into st.
func (r *Recorder) integrateSnap(st *store, t int64) {
	sn := &r.snap
	st.spread(sn.at, t, func(bk *bucket, secs float64) {
		f := &bk.fleet
		f.Observed += secs
		f.Healthy += sn.healthy * secs
		f.Free += sn.free * secs
		f.Stranded += sn.stranded * secs
		bk.stranded.add(sn.stranded, secs)
		for _, l := range sn.levels {
			ls := bk.level(l.level)
			ls.NodeSeconds += l.nodes * secs
			ls.Seconds += secs
			ls.Min = min(ls.Min, l.nodes)
			ls.Max = max(ls.Max, l.nodes)
		}
		for _, q := range sn.quota {
			c := bk.cell(q.cell)
			c.Lent += q.lent * secs
			c.IdleReserved += q.reserved * secs
		}
		r.integrateUplinks(bk, secs)
	})
}
