package metrics

import (
	"github.com/fleetsched/fleet"
)

// LeafUplinks is how many running gangs spanning several leaves crossed
// one leaf (shared its uplinks) over a window, from snapshots
// (fleet.FleetView.Crossings).
type LeafUplinks struct {
	Leaf string // the leaf's name
	// Avg is time-weighted over the window's observed hours (a leaf not
	// in a snapshot counts 0 for its time); Max is the most at once.
	Avg, Max float64
}

// uplinkValue is one leaf's count in the latest snapshot.
type uplinkValue struct {
	leaf  int32
	gangs float64
}

// uplinkSums is one leaf's gangs over a bucket.
type uplinkSums struct {
	GangSeconds, Max float64
}

// observeUplinks keeps a snapshot's crossings until the next snapshot.
func (r *Recorder) observeUplinks(crossings []fleet.LeafCrossings) {
	r.snap.uplinks = r.snap.uplinks[:0]
	for _, c := range crossings {
		r.snap.uplinks = append(r.snap.uplinks, uplinkValue{r.leaves.id(c.Leaf), float64(c.Gangs)})
	}
}

// integrateUplinks books the latest snapshot's crossings over secs of
// bucket bk.
func (r *Recorder) integrateUplinks(bk *bucket, secs float64) {
	for _, u := range r.snap.uplinks {
		for int(u.leaf) >= len(bk.uplinks) {
			bk.uplinks = append(bk.uplinks, uplinkSums{})
		}
		s := &bk.uplinks[u.leaf]
		s.GangSeconds += u.gangs * secs
		s.Max = max(s.Max, u.gangs)
	}
}

// addUplinks sums bucket b's crossings into per (by leaf ID).
func addUplinks(per []uplinkSums, b *bucket) {
	for id, s := range b.uplinks {
		per[id].GangSeconds += s.GangSeconds
		per[id].Max = max(per[id].Max, s.Max)
	}
}

// uplinksReport turns per-leaf sums into the report's rows, in the order
// leaves were first seen, over observed seconds.
func (r *Recorder) uplinksReport(per []uplinkSums, observed float64) []LeafUplinks {
	var out []LeafUplinks
	for id, s := range per {
		if s.Max == 0 {
			continue
		}
		u := LeafUplinks{Leaf: r.leaves.names[id], Max: s.Max}
		if observed > 0 {
			u.Avg = s.GangSeconds / observed
		}
		out = append(out, u)
	}
	return out
}

// Crossings returns the latest snapshot's leaves crossed by gangs that
// span several leaves, with their counts, for gauges such as a Prometheus
// exporter's. It changes nothing.
func (r *Recorder) Crossings() []fleet.LeafCrossings {
	var out []fleet.LeafCrossings
	for _, u := range r.snap.uplinks {
		out = append(out, fleet.LeafCrossings{Leaf: r.leaves.names[u.leaf], Gangs: int(u.gangs)})
	}
	return out
}
