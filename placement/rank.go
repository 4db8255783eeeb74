package placement

import (
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// rankLevel is one rank group of a pod set, its level resolved.
type rankLevel struct {
	size     int
	level    topology.Level
	required bool
}

// resolveRanks resolves the rank groups of pod set ps (appended to p.ranks)
// and refuses, as ErrBadRequest, groups that placement cannot honour
// exactly.
func (p *Placer) resolveRanks(ps gang.PodSet, segmented bool) *NoFit {
	nf := p.checkRanks(ps, segmented)
	if nf != nil {
		nf.Err = ErrBadRequest
	}
	return nf
}

func (p *Placer) checkRanks(ps gang.PodSet, segmented bool) *NoFit {
	if segmented || p.w.Spread.MaxPerDomain > 0 {
		return p.invalid("rank groups of pod set " + ps.Name + " beside a segment or a per-domain spread")
	}
	preferred, prev := 0, rankLevel{size: 1, level: p.deep}
	for j, g := range ps.RankGroups {
		l, ok := p.f.Level(g.Level)
		switch {
		case !ok:
			return p.invalid("unknown rank group level " + g.Level)
		case g.Size < 1 || j > 0 && g.Size <= prev.size || g.Size%prev.size != 0 || ps.Count%g.Size != 0:
			return p.invalid("rank groups of pod set " + ps.Name + " must nest and divide its pods")
		case l > prev.level:
			return p.invalid("rank groups of pod set " + ps.Name + " must nest: each level at or above the one before")
		}
		prev = rankLevel{size: g.Size, level: l, required: g.Required}
		p.ranks = append(p.ranks, prev)
		if !g.Required {
			preferred++
		}
	}
	p.maxRelax = max(p.maxRelax, preferred)
	return nil
}

// setRanks makes p.active the current pod set's rank groups, smallest
// first, without the p.relax largest preferred ones. A segment is one
// required group, placed by the same descent, unless a per-domain spread
// below its level makes segments share limits (see placeSegments).
func (p *Placer) setRanks(ps int) {
	all := p.ranks[p.rankAt[ps]:p.rankAt[ps+1]]
	p.active = p.active[:0]
	if seg := p.w.Topology.Segment; seg.Size > 0 && p.w.SegmentedPodSet() == ps &&
		(p.spreadLevel == 0 || p.spreadLevel >= p.segLevel) {
		p.active = append(p.active, rankLevel{size: seg.Size, level: p.segLevel, required: true})
		return
	}
	drop := p.relax
	for j := len(all) - 1; j >= 0; j-- {
		if !all[j].required && drop > 0 {
			drop--
			continue
		}
		p.active = append(p.active, all[j])
	}
	slices.Reverse(p.active)
}

// unitSize is the pods in one group of the j-th active rank group; the
// 0-th is one pod.
func (p *Placer) unitSize(j int) int {
	if j == 0 {
		return 1
	}
	return p.active[j-1].size
}

// placeRanked places count pods of the current pod set inside d as whole
// groups of its largest active rank group, or nothing.
func (p *Placer) placeRanked(d topology.DomainID, count int) bool {
	top := len(p.active)
	units := count / p.unitSize(top)
	if p.unitCap(d, top) < units {
		return false
	}
	p.fillUnits(d, top, units)
	return true
}

// unitCap is how many whole groups of the j-th active rank group d can
// take: below the group's level, what the pods or smaller groups of d
// make up; above it, the sum over d's children.
func (p *Placer) unitCap(d topology.DomainID, j int) int {
	if j == 0 {
		return p.capacity(d)
	}
	g := p.active[j-1]
	if p.f.DomainLevel(d) >= g.level {
		return p.unitCap(d, j-1) / (g.size / p.unitSize(j-1))
	}
	n := 0
	lo, hi := p.f.Children(d)
	for c := lo; c < hi; c++ {
		n += p.unitCap(c, j)
	}
	return n
}

// fillUnits places n groups of the j-th active rank group inside d, in
// rank order: above the group's level the children share them by the
// fewest-domains rule, each taking a run of consecutive groups; at or
// below it the groups split into the next smaller ones, down to pods.
func (p *Placer) fillUnits(d topology.DomainID, j, n int) {
	if j == 0 {
		p.fill(d, n)
		return
	}
	g := p.active[j-1]
	if p.f.DomainLevel(d) >= g.level {
		p.fillUnits(d, j-1, n*(g.size/p.unitSize(j-1)))
		return
	}
	lo, hi := p.f.Children(d)
	base := len(p.caps)
	for c := lo; c < hi; c++ {
		p.caps = append(p.caps, p.unitCap(c, j))
	}
	p.distribute(base, lo, n, func(c topology.DomainID, units int) { p.fillUnits(c, j, units) })
	p.caps = p.caps[:base]
}

// RankOrder returns the pods of pod set ps in rank order: element r is
// the pod of rank (Index) r. Placement numbers every pod set's pods so
// that the pods inside any one domain hold consecutive ranks, groups of a
// rank group and segments included, and neighbouring ranks share the
// lowest domain they can. (Segments under a per-domain spread below their
// level are the one exception: each is whole, but they are spread before
// they are ordered.) It allocates the returned slice.
func (a Assignment) RankOrder(ps int) []Pod {
	n := 0
	for _, p := range a.Pods {
		if p.PodSet == ps {
			n++
		}
	}
	out := make([]Pod, n)
	for _, p := range a.Pods {
		if p.PodSet == ps && p.Index >= 0 && p.Index < n {
			out[p.Index] = p
		}
	}
	return out
}
