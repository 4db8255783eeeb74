package placement

import (
	"cmp"
	"slices"

	"github.com/fleetsched/fleet/topology"
)

// Keeping large blocks free (rule 3 of Placer.Place).
//
// Best fit picks the tightest domain of the level where the gang fits.
// When that domain lies under the one domain of a level above that holds
// the level's largest free block (its most healthy, fully free nodes of
// the group, topology.Fleet.LargestFreeBlock) and the gang takes some of
// those nodes, the block shrinks for the next whole-node gang, though
// another domain may hold the gang and leave every block whole. The
// placement moves there when the move leaves the largest free block of
// every level above, the fleet included, at least as large, and one
// larger. The best fit stays the floor: a move is taken only when it
// dominates it level by level.
//
// The check counts the free nodes the best fit takes and, when it takes
// some, makes one index look-up per level above; the search runs only
// when the best fit would shrink a block.

// maxBlockTrials bounds the trial placements a search makes to learn how
// many free nodes a candidate takes (gangs that are not whole-node).
const maxBlockTrials = 8

// maxBlockVisits bounds the nodes a search at the node level reads.
const maxBlockVisits = 64

// blockLevel is one level above a placement: the domain that alone holds
// its largest free block and by how many free nodes it leads the next
// (lead 0, at no domain, when two domains tie or none has a free node).
type blockLevel struct {
	top  topology.DomainID
	lead int
}

// keepBlocks returns the domain of level l whose placement the gang
// keeps, its pods left at p.pods[mark:]: d0, the best fit just placed,
// unless another domain of l dominates it by the free blocks it leaves.
func (p *Placer) keepBlocks(l topology.Level, d0 topology.DomainID, mark int) topology.DomainID {
	if l <= 1 {
		return d0
	}
	c0, shrinks := p.shrinksBlock(l, d0, mark)
	if !shrinks {
		return d0
	}
	if l == p.deep {
		return p.keepBlocksOnNodes(d0, mark)
	}
	return p.keepBlocksInDomains(l, d0, mark, c0)
}

// shrinksBlock reports whether the pods at p.pods[mark:], placed in d of
// level l, take free nodes from a domain that alone holds the largest
// free block of a level above l, and how many free nodes they take; if
// so it fills p.blocks for the levels 0..l-1 and sizes p.bestLoss.
func (p *Placer) shrinksBlock(l topology.Level, d topology.DomainID, mark int) (int, bool) {
	f := p.f
	c := p.consumed(mark)
	if c == 0 {
		return 0, false
	}
	p.blocks = slices.Grow(p.blocks[:0], int(l))[:l]
	first, _ := f.Nodes(d)
	shrinks := false
	for j := topology.Level(1); j < l; j++ {
		// lead -1: the level's largest block is elsewhere, not yet known.
		a := f.DomainOf(first, j)
		p.blocks[j] = blockLevel{top: -1, lead: -1}
		if fa := f.FreeNodes(a, p.g); fa > 0 {
			if other := f.LargestFreeBlockBesides(j, p.g, a); fa > other {
				p.blocks[j] = blockLevel{top: a, lead: fa - other}
				shrinks = true
			}
		}
	}
	if !shrinks {
		return 0, false
	}
	p.blocks[0] = blockLevel{top: topology.Root, lead: f.FreeNodes(topology.Root, p.g)}
	for j := topology.Level(1); j < l; j++ {
		if p.blocks[j].lead >= 0 {
			continue
		}
		n, top := f.LargestFreeBlock(j, p.g)
		p.blocks[j] = blockLevel{top: -1}
		if lead := n - f.LargestFreeBlockBesides(j, p.g, top); n > 0 && lead > 0 {
			p.blocks[j] = blockLevel{top: top, lead: lead}
		}
	}
	p.bestLoss = slices.Grow(p.bestLoss[:0], int(l))[:l]
	return c, true
}

// lossOf fills loss, by level 0..len(p.blocks)-1, with the free nodes
// the largest block of each level loses when the gang takes c free nodes
// under d: none where d is not under the level's sole largest block, else
// c, or the block's lead when that is less (the next block is then the
// largest).
func (p *Placer) lossOf(d topology.DomainID, c int, loss []int) {
	f := p.f
	first, _ := f.Nodes(d)
	for j := range p.blocks {
		b := p.blocks[j]
		loss[j] = 0
		if b.lead > 0 && f.DomainOf(first, topology.Level(j)) == b.top {
			loss[j] = min(c, b.lead)
		}
	}
}

// dominates reports whether the losses a are no larger than b at every
// level and smaller at one.
func dominates(a, b []int) bool {
	less := false
	for j := range a {
		if a[j] > b[j] {
			return false
		}
		less = less || a[j] < b[j]
	}
	return less
}

// consumed counts the nodes, fully free before, on which the pods at
// p.pods[from:] take a GPU, a share or a slice: the free nodes they take.
func (p *Placer) consumed(from int) int {
	f := p.f
	p.seen = p.seen[:0]
	last := topology.NodeID(-1)
	for i := from; i < len(p.pods); i++ {
		// Pods on one node mostly come one after another: read the
		// node once for them.
		pod := &p.pods[i]
		if pod.Node == last || pod.GPUs == 0 && pod.Share == 0 && pod.MIG == "" {
			continue
		}
		if last = pod.Node; f.Free(last) == f.Capacity(last) {
			p.seen = append(p.seen, last)
		}
	}
	slices.Sort(p.seen)
	return len(slices.Compact(p.seen))
}

// minConsumed is a floor on the free nodes that any placement of the gang
// inside d takes: one a pod for whole-node gangs (whole); for one pod set of k
// whole GPUs, the nodes the pods need beyond those the free GPUs of d's
// partly used nodes hold (at most Stranded/k), at most MaxGPUsPerNode/k
// on each free node; 0 for other gangs.
func (p *Placer) minConsumed(d topology.DomainID, whole bool) int {
	w := p.w
	if whole {
		return w.Pods()
	}
	if len(w.PodSets) > 1 || p.shared || w.PodSets[0].GPUsPerPod <= 0 {
		return 0
	}
	k := w.PodSets[0].GPUsPerPod
	per := p.f.MaxGPUsPerNode() / k
	if p.maxPerNode > 0 {
		per = min(per, p.maxPerNode)
	}
	rest := w.Pods() - p.f.Stats(d, p.g).Stranded/k
	if rest <= 0 || per <= 0 {
		return 0
	}
	return (rest + per - 1) / per
}

// keepBlocksInDomains is keepBlocks above the node level. It walks the
// domains of l that hold the gang in best-fit order, and a candidate
// replaces the kept placement when its losses dominate the kept one's;
// it stops at one that shrinks no block above the fleet. A candidate
// whose losses, with the fewest free nodes it could take (minConsumed),
// do not dominate is passed over untried; so are, as a run, the domains
// under the lowest block d0 shrinks when none of them can take fewer free
// nodes than d0 (they shrink the same blocks, or more). Whole-node gangs
// take one free node a pod anywhere, so their losses are known before a
// trial; other gangs' are counted on a trial, at most maxBlockTrials.
func (p *Placer) keepBlocksInDomains(l topology.Level, d0 topology.DomainID, mark, c0 int) topology.DomainID {
	f := p.f
	p.lossOf(d0, c0, p.bestLoss)
	whole := p.wholeNodes()
	first, _ := f.Nodes(d0)
	in, _ := p.lowestBlock(first) // shrinksBlock found one
	inLo, inHi := p.descendants(in, l)
	skipIn := p.minConsumed(in, whole) >= c0
	// List the candidates before any trial (trials of several pod sets
	// allocate on the fleet, which must not happen inside a walk of its
	// indexes).
	p.keep = p.keep[:0]
	free, from := p.w.GPUs(), topology.DomainID(0)
	if whole {
		free = p.w.Pods()
	}
	for more := true; more; {
		more = false
		visit := func(d topology.DomainID, x int) bool {
			if skipIn && d >= inLo && d < inHi {
				free, from, more = x, inHi, true
				return false
			}
			if d != d0 {
				p.keep = append(p.keep, d)
			}
			return true
		}
		if whole {
			f.AscendDomainsByFreeNodesFrom(l, p.g, free, from, visit)
		} else {
			f.AscendDomainsByFreeGPUsFrom(l, p.g, free, from, visit)
		}
	}
	if ps := &p.w.PodSets[p.order[0]]; !whole && ps.GPUsPerPod > 1 {
		// Best fit by pods of k GPUs, the walk's order breaking ties;
		// a domain with room for fewer pods than the pod set has cannot
		// hold the gang.
		p.byPods = p.byPods[:0]
		for _, d := range p.keep {
			if n := f.PodsThatFit(d, p.g, ps.GPUsPerPod); n >= ps.Count {
				p.byPods = append(p.byPods, domPods{d, n})
			}
		}
		slices.SortStableFunc(p.byPods, func(a, b domPods) int { return cmp.Compare(a.pods, b.pods) })
		p.keep = p.keep[:0]
		for _, c := range p.byPods {
			p.keep = append(p.keep, c.d)
		}
	}
	p.loss = slices.Grow(p.loss[:0], int(l))[:l]
	best, trials := d0, 0
	for _, d := range p.keep {
		if p.lossOf(d, p.minConsumed(d, whole), p.loss); !dominates(p.loss, p.bestLoss) {
			continue
		}
		if !whole {
			if trials++; trials > maxBlockTrials {
				break
			}
		}
		end := len(p.pods)
		if !p.tryDomain(d) {
			continue
		}
		if !whole {
			if p.lossOf(d, p.consumed(end), p.loss); !dominates(p.loss, p.bestLoss) {
				p.pods = p.pods[:end]
				continue
			}
		}
		p.pods = append(p.pods[:mark], p.pods[end:]...)
		best = d
		copy(p.bestLoss, p.loss)
		if !p.lossAbove() {
			break // no level above the fleet loses: nothing does better
		}
	}
	return best
}

// lowestBlock is the lowest domain above node n that alone holds its
// level's largest free block, if any.
func (p *Placer) lowestBlock(n topology.NodeID) (topology.DomainID, bool) {
	for j := len(p.blocks) - 1; j >= 1; j-- {
		if b := p.blocks[j]; b.lead > 0 && p.f.DomainOf(n, topology.Level(j)) == b.top {
			return b.top, true
		}
	}
	return 0, false
}

// lossAbove reports whether the kept placement shrinks the largest block
// of a level above the fleet.
func (p *Placer) lossAbove() bool {
	for _, x := range p.bestLoss[1:] {
		if x > 0 {
			return true
		}
	}
	return false
}

// keepBlocksOnNodes is keepBlocks for a gang on one node. A pod that
// takes GPUs takes the node out of the free nodes exactly when all its
// GPUs were free, so each candidate's losses are known before its trial.
// The nodes that hold the gang are read in best-fit order, at most
// maxBlockVisits of them; runs of fully free nodes of the largest size
// under a block no better than the last one read are skipped whole.
func (p *Placer) keepBlocksOnNodes(d0 topology.DomainID, mark int) topology.DomainID {
	f := p.f
	need := p.w.GPUs()
	if need == 0 {
		return d0
	}
	c := func(n topology.NodeID) int {
		if f.Free(n) == f.Capacity(n) {
			return 1
		}
		return 0
	}
	n0 := topology.NodeID(d0 - f.NodeDomain(0))
	p.lossOf(d0, c(n0), p.bestLoss)
	p.loss = slices.Grow(p.loss[:0], len(p.blocks))[:len(p.blocks)]
	// List the candidates before any trial: trials of several pod sets
	// allocate on the fleet, which must not happen inside a walk of its
	// indexes.
	p.nodes = p.nodes[:0]
	free, from, visits := need, topology.NodeID(0), 0
	for more := true; more && visits < maxBlockVisits; {
		more = false
		f.AscendNodesByFreeFrom(p.g, free, from, func(n topology.NodeID, x int) bool {
			if visits++; visits > maxBlockVisits {
				return false
			}
			if n == n0 || p.avoided(n) {
				return true
			}
			if p.lossOf(f.NodeDomain(n), c(n), p.loss); dominates(p.loss, p.bestLoss) {
				p.nodes = append(p.nodes, candidate{n: n, free: x})
				return true
			}
			if x == f.MaxGPUsPerNode() {
				// Every node of this run is fully free and under the
				// same blocks or more: resume past the lowest.
				if b, ok := p.lowestBlock(n); ok {
					_, hi := f.Nodes(b)
					free, from, more = x, hi, true
					return false
				}
			}
			return true
		})
	}
	best := d0
	for _, cand := range p.nodes {
		d := f.NodeDomain(cand.n)
		if p.lossOf(d, c(cand.n), p.loss); !dominates(p.loss, p.bestLoss) {
			continue
		}
		end := len(p.pods)
		if !p.tryDomain(d) {
			continue
		}
		p.pods = append(p.pods[:mark], p.pods[end:]...)
		best = d
		copy(p.bestLoss, p.loss)
		if !p.lossAbove() {
			break
		}
	}
	return best
}
