package preempt

import (
	"fmt"
	"slices"

	"github.com/fleetsched/fleet/topology"
)

// The search's simulation: victims are "taken" by removing their usage
// from the Searcher's own tree and counting their GPUs as freed per node;
// on the fast path the pods of the gang that would fit are counted per
// cell (a domain of the required level, per eligible group) from the
// fleet's histograms, O(1) per freed node. Nothing here writes the live
// fleet or tree; the scratch fleet is written only by releaseFreed and
// giveBack.

// gangShape is what the gang needs from the topology.
type gangShape struct {
	fast          bool // one pod size, no segments, no spread: counted, not placed
	level         topology.Level
	firstCell     topology.DomainID
	numCells      int
	podGPUs       int
	pods          int
	groupSlot     []int32 // per fleet group: its slot among eligible groups, or -1
	numGroupSlots int
}

// setupShape decides between the fast path and the placing path.
func (s *Searcher) setupShape() *NoPlan {
	f, w, sh := s.fleet, s.req.W, &s.shape
	sh.level = 0
	if w.Topology.Required != "" {
		l, ok := f.Level(w.Topology.Required)
		if !ok {
			return s.invalid("unknown required level " + w.Topology.Required)
		}
		sh.level = l
	}
	sh.podGPUs, sh.pods = w.PodSets[0].GPUsPerPod, 0
	sh.fast = !w.Topology.Segment.Enabled() && w.Spread.MaxPerNode == 0 && w.Spread.MaxPerDomain == 0
	for _, ps := range w.PodSets {
		if ps.GPUsPerPod != sh.podGPUs {
			sh.fast = false
		}
		// Every pod set, not only the first: the answer must not depend
		// on the order they are listed in.
		switch {
		case ps.GPUsPerPod <= 0:
			return s.invalid("pod set " + ps.Name +
				" asks for no whole GPU; the victim search frees whole GPUs only")
		case ps.GPUsPerPod > f.MaxGPUsPerNode():
			return s.invalid(fmt.Sprintf("pod set %s: %d GPUs a pod, more than any node has (%d)",
				ps.Name, ps.GPUsPerPod, f.MaxGPUsPerNode()))
		}
		sh.pods += ps.Count
	}
	sh.groupSlot = slices.Grow(sh.groupSlot[:0], f.NumGroups())[:f.NumGroups()]
	sh.numGroupSlots = 0
	for g := range topology.GroupID(f.NumGroups()) {
		sh.groupSlot[g] = -1
		if w.Flavor != "" && f.GroupFlavor(g) != w.Flavor {
			continue
		}
		if len(w.Pools) > 0 && !slices.Contains(w.Pools, f.GroupPool(g)) {
			continue
		}
		sh.groupSlot[g] = int32(sh.numGroupSlots)
		sh.numGroupSlots++
	}
	lo, hi := f.DomainsAt(sh.level)
	sh.firstCell, sh.numCells = lo, int(hi-lo)
	if n := sh.numCells * sh.numGroupSlots; len(s.cellSlots) < n {
		s.cellSlots = make([]int32, n)
	}
	if len(s.cellAt) < sh.numCells {
		s.cellAt = make([]uint32, sh.numCells)
	}
	s.cellsFitting, s.fitsUntouched = 0, false
	return nil
}

// setupCells decides whether some cell holds the gang with nothing but
// the gone workloads freed, among the cells their GPUs did not touch
// (those are counted in cellsFitting): the fleet's ordered index lists
// the domains with enough free GPUs.
func (s *Searcher) setupCells() {
	f, sh := s.fleet, &s.shape
	if !sh.fast {
		return
	}
	want := sh.pods * sh.podGPUs
	for g := range topology.GroupID(f.NumGroups()) {
		if sh.groupSlot[g] < 0 || s.fitsUntouched {
			continue
		}
		switch {
		case sh.level == 0:
			s.fitsUntouched = s.podsThatFit(topology.Root, g, sh.podGPUs) >= sh.pods
		case int(sh.level) == f.Depth():
			if want <= f.MaxGPUsPerNode() {
				f.AscendNodesByFree(g, want, func(n topology.NodeID, _ int) bool {
					s.fitsUntouched = len(s.avoid) == 0 || !s.avoidedNode(n)
					return !s.fitsUntouched
				})
			}
		default:
			f.AscendDomainsByFreeGPUs(sh.level, g, want, func(d topology.DomainID, _ int) bool {
				s.fitsUntouched = s.podsThatFit(d, g, sh.podGPUs) >= sh.pods
				return !s.fitsUntouched
			})
		}
	}
}

// cell returns the cell of node n, or -1 when n cannot hold a pod of the
// gang (unhealthy, or of a group it may not use).
func (s *Searcher) cell(n topology.NodeID) (cell int, groupSlot int32) {
	f := s.fleet
	if f.Health(n) != topology.Healthy || len(s.avoid) > 0 && s.avoidedNode(n) {
		return -1, -1
	}
	gi := s.shape.groupSlot[f.NodeGroup(n)]
	if gi < 0 {
		return -1, -1
	}
	return int(f.DomainOf(n, s.shape.level) - s.shape.firstCell), gi
}

// readCell loads a cell's pod counts from the fleet the first time the
// call touches it.
func (s *Searcher) readCell(d int) {
	if s.cellAt[d] == s.epoch {
		return
	}
	s.cellAt[d] = s.epoch
	f, sh := s.fleet, &s.shape
	dom := sh.firstCell + topology.DomainID(d)
	for g := range topology.GroupID(f.NumGroups()) {
		if gi := sh.groupSlot[g]; gi >= 0 {
			v := int32(s.podsThatFit(dom, g, sh.podGPUs))
			s.cellSlots[d*sh.numGroupSlots+int(gi)] = v
			if int(v) >= sh.pods {
				s.cellsFitting++
			}
		}
	}
}

// cellFits reports whether cell d holds the gang in group slot gi.
func (s *Searcher) cellFits(d int, gi int32) bool {
	s.readCell(d)
	return int(s.cellSlots[d*s.shape.numGroupSlots+int(gi)]) >= s.shape.pods
}

// topologyOK reports whether some cell holds the gang now.
func (s *Searcher) topologyOK() bool { return s.fitsUntouched || s.cellsFitting > 0 }

// free counts x more GPUs of node n as freed (x < 0 takes them back) and
// updates the pods that would fit in its cell.
func (s *Searcher) free(n topology.NodeID, x int) {
	if x == 0 {
		return
	}
	if !s.marked[n] {
		// Marked rather than tested on freed: fill-back frees a node down
		// to 0 and back many times.
		s.marked[n] = true
		s.touched = append(s.touched, n)
	}
	old := s.fleet.Free(n) + int(s.freed[n])
	s.freed[n] += int32(x)
	if !s.shape.fast {
		return
	}
	d, gi := s.cell(n)
	if d < 0 {
		return
	}
	s.readCell(d)
	k := s.shape.podGPUs
	if diff := (old+x)/k - old/k; diff != 0 {
		i := d*s.shape.numGroupSlots + int(gi)
		before := int(s.cellSlots[i]) >= s.shape.pods
		s.cellSlots[i] += int32(diff)
		after := int(s.cellSlots[i]) >= s.shape.pods
		if before != after {
			if after {
				s.cellsFitting++
			} else {
				s.cellsFitting--
			}
		}
	}
}

func (s *Searcher) freeAll(c *cand, sign int) {
	for _, x := range s.nodesOf(c) {
		s.free(x.Node, sign*x.GPUs)
	}
}

// take evicts candidate ci in the simulation (the rest of an elastic
// workload with its surplus, taken first when it is not yet).
func (s *Searcher) take(ci int32) {
	c := &s.cands[ci]
	if c.part == restPart && !s.cands[ci-1].taken {
		s.take(ci - 1)
	}
	s.removeUsage(c)
	c.taken = true
	s.freeAll(c, 1)
	s.taken = append(s.taken, ci)
}

// untake reverses take (not the append to taken).
func (s *Searcher) untake(ci int32) {
	c := &s.cands[ci]
	s.addUsage(c)
	c.taken = false
	s.freeAll(c, -1)
}

// untakeAll reverses every take, with one tree change per queue.
func (s *Searcher) untakeAll() {
	for _, ci := range slices.Backward(s.taken) {
		c := &s.cands[ci]
		c.taken = false
		s.freeAll(c, -1)
		s.pendingUsage(c.run.Queue, c.gpus)
	}
	s.flushUsage(1)
	s.taken = s.taken[:0]
}

// untakeTail reverses the last n takes, with one tree change per queue.
func (s *Searcher) untakeTail(n int) {
	tail := s.taken[len(s.taken)-n:]
	for _, ci := range slices.Backward(tail) {
		c := &s.cands[ci]
		c.taken = false
		s.freeAll(c, -1)
		s.pendingUsage(c.run.Queue, c.gpus)
	}
	s.flushUsage(1)
	s.taken = s.taken[:len(s.taken)-n]
}

// takeAll takes the given candidates (none taken), with one tree change
// per queue.
func (s *Searcher) takeAll(list []int32) {
	for _, ci := range list {
		c := &s.cands[ci]
		c.taken = true
		s.freeAll(c, 1)
		s.pendingUsage(c.run.Queue, c.gpus)
	}
	s.flushUsage(-1)
	s.taken = append(s.taken, list...)
}

// fillBack walks the picked victims newest first and keeps out each one
// without which the request still fits, so the set is 1-minimal (the
// surplus of an elastic workload only once its rest is out: it then
// shrinks rather than go whole, if that still fits). It
// tries runs of victims at once, growing the run while whole runs can go
// and halving it when one cannot: fitting is monotone (less usage and
// more free GPUs never make it stop fitting), so a run goes back exactly
// when each of its victims would one by one, and the set is the same as
// the one-by-one walk's, at one tree change per queue per run. Topology
// is checked first: it is O(nodes) and usually says "needed" without
// touching the tree.
func (s *Searcher) fillBack(allowBorrow bool) {
	run := 1
	for j := len(s.taken) - 1; j >= 0; {
		n := min(run, j+1)
		seg := s.taken[j-n+1 : j+1]
		if s.index.splits > 0 && s.pinned(seg) {
			if n == 1 {
				j-- // its rest stays: it is needed
				continue
			}
			run = n / 2
			continue
		}
		for _, ci := range seg {
			s.freeAll(&s.cands[ci], -1)
		}
		ok := s.topologyOK()
		if ok {
			for _, ci := range seg {
				c := &s.cands[ci]
				s.pendingUsage(c.run.Queue, c.gpus)
			}
			s.flushUsage(1)
			if ok = s.quotaOK(allowBorrow); !ok {
				for _, ci := range seg {
					c := &s.cands[ci]
					s.pendingUsage(c.run.Queue, c.gpus)
				}
				s.flushUsage(-1)
			}
		}
		if ok {
			for _, ci := range seg {
				s.cands[ci].taken = false
			}
			s.taken = slices.Delete(s.taken, j-n+1, j+1)
			j -= n
			run *= 2
			continue
		}
		for _, ci := range seg {
			s.freeAll(&s.cands[ci], 1)
		}
		if n == 1 {
			j-- // needed
			continue
		}
		run = n / 2
	}
}

// pinned reports whether seg, a run of the taken victims, holds the
// surplus of a workload whose rest is taken after the run: the surplus
// stays while the rest does.
func (s *Searcher) pinned(seg []int32) bool {
	if s.index.splits == 0 {
		return false
	}
	for i, ci := range seg {
		if s.cands[ci].part == surplusPart && s.cands[ci+1].taken && !slices.Contains(seg[i+1:], ci+1) {
			return true
		}
	}
	return false
}

// scratchFor returns the fleet placement may run on: View.Scratch, or a
// clone of the live fleet when the caller keeps none.
func (s *Searcher) scratchFor() *topology.Fleet {
	if s.scratchFleet == nil {
		s.scratchFleet = s.fleet.Clone()
	}
	return s.scratchFleet
}

// releaseFreed releases on the scratch fleet every GPU counted as freed
// (healthy nodes only: placement uses no other), after checking that the
// scratch fleet agrees with the live one on those nodes. The Searcher is
// dirty until giveBack has allocated them back.
func (s *Searcher) releaseFreed() *NoPlan {
	f := s.scratchFor()
	if f.FreeGPUs(topology.Root, topology.AllGroups) != s.fleet.FreeGPUs(topology.Root, topology.AllGroups) {
		return s.invalid("the scratch fleet differs from the live fleet")
	}
	for _, n := range s.touched {
		if f.Allocated(n) != s.fleet.Allocated(n) || f.Health(n) != s.fleet.Health(n) {
			return s.invalid("the scratch fleet differs from the live fleet on " + f.NodeName(n))
		}
	}
	s.dirty = true
	bad := topology.NodeID(-1)
	// One batch: a leaf whose nodes the plan frees moves in the scratch
	// fleet's ordered indexes once, not once per node.
	f.Batch(func() {
		for _, n := range s.touched {
			if !s.releaseOn(n, int(s.freed[n])) {
				bad = n
				return
			}
		}
	})
	if bad >= 0 {
		s.giveBack()
		return s.invalid("indexed workloads hold more GPUs than allocated on " + f.NodeName(bad))
	}
	return nil
}

// releaseOn releases g GPUs of node n on the scratch fleet (g < 0
// allocates them back), recording them for giveBack.
func (s *Searcher) releaseOn(n topology.NodeID, g int) bool {
	f := s.scratchFleet
	if g == 0 || f.Health(n) != topology.Healthy {
		return true
	}
	var err error
	if g > 0 {
		err = f.Release(n, g)
	} else {
		err = f.Allocate(n, -g)
	}
	if err != nil {
		return false
	}
	if s.released[n] == 0 && g > 0 {
		s.releasedOn = append(s.releasedOn, n)
	}
	s.released[n] += int32(g)
	return true
}

// giveBack allocates back on the scratch fleet everything released, and
// clears the dirty mark.
func (s *Searcher) giveBack() {
	if len(s.releasedOn) > 0 {
		// One batch, as releaseFreed.
		s.scratchFleet.Batch(s.giveBackEach)
	}
	s.dirty = false
}

// giveBackEach is giveBack's loop.
func (s *Searcher) giveBackEach() {
	for len(s.releasedOn) > 0 {
		n := s.releasedOn[len(s.releasedOn)-1]
		if g := s.released[n]; g > 0 {
			if err := s.scratchFleet.Allocate(n, int(g)); err != nil {
				panic("preempt: giving back the scratch fleet: " + err.Error())
			}
		}
		s.released[n] = 0
		s.releasedOn = s.releasedOn[:len(s.releasedOn)-1]
	}
}

// simulation is the search's model of the victims gone: the candidates
// taken, and per node and cell what they (and gone work) free.
type simulation struct {
	freed         []int32           // per node: GPUs freed by gone workloads and taken candidates
	touched       []topology.NodeID // nodes with freed GPUs, once each
	marked        []bool            // per node: in touched
	cellSlots     []int32           // per cell x eligible group: pods that would fit
	cellAt        []uint32          // per cell: the epoch its slots were read at
	cellsFitting  int               // cells whose slots hold the whole gang
	fitsUntouched bool              // some cell the search did not touch holds the gang
	quotaPicks    []int32           // the attempt's victims picked for quota alone
	taken         []int32           // candidates taken, in order
	victims       []int32           // the taken that are victims (see listVictims)
	victimBuf     []int32           // victims, when they are not all the taken
	upgradeBuf    []int32           // upgradeSurpluses' copy of the set
	upgradeTry    []int32           // upgradeFrom's set
	picked        []int32           // a cell's set before fill-back, for upgradeSurpluses
	best          []int32           // the best cell's set
}

// scratchBook records what the search released on the scratch fleet, to
// give it back.
type scratchBook struct {
	released   []int32 // per node: GPUs released on the scratch fleet
	releasedOn []topology.NodeID
}
