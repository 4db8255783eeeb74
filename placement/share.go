package placement

import (
	"fmt"
	"math/bits"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// resolveSharing checks what a pod set asks beyond whole GPUs against the
// fleet, records its resources by ID, and refuses with a CauseInvalid
// NoFit what no node of the fleet can ever give: a share outside
// (0, 1000], more than one GPU form, a MIG profile no accepted MIG node's
// model has, a resource amount that is not positive (ErrBadAmount), a
// resource listed twice or unknown.
func (p *Placer) resolveSharing(ps gang.PodSet) *NoFit {
	w, f := p.w, p.f
	invalid := func(detail string, err error) *NoFit {
		return &NoFit{Workload: w.ID, Cause: CauseInvalid, Required: w.Topology.Required,
			Preferred: w.Topology.Preferred, Pods: w.Pods(), NeedGPUs: w.GPUs(), Detail: detail, Err: err}
	}
	if ps.GPUShare < 0 || ps.GPUShare > topology.MilliGPU {
		return invalid("pod set "+ps.Name+": a GPU share is 1 to 1000 thousandths", ErrBadShare)
	}
	forms := 0
	for _, set := range [...]bool{ps.GPUsPerPod > 0, ps.GPUShare > 0, ps.MIG != ""} {
		if set {
			forms++
		}
	}
	if forms > 1 {
		return invalid("pod set "+ps.Name+": a pod asks for whole GPUs, a share or a MIG slice, not several", ErrBadShare)
	}
	if ps.MinCount < 0 || ps.MinCount > ps.Count {
		return invalid("pod set "+ps.Name+": minCount above count", ErrBadRequest)
	}
	if ps.MIG != "" {
		found := false
		for n := range topology.NodeID(f.NumNodes()) {
			if _, ok := w.Accepts(f.GroupFlavor(f.NodeGroup(n))); ok {
				if _, ok := f.NodeMIGProfile(n, ps.MIG); ok {
					found = true
					break
				}
			}
		}
		if !found {
			return invalid("pod set "+ps.Name+": no accepted GPU model has MIG profile "+ps.MIG, ErrUnknownProfile)
		}
	}
	for i, r := range ps.Resources {
		if r.Amount <= 0 {
			return invalid(fmt.Sprintf("pod set %s: resource %s amount %d: amounts are positive", ps.Name, r.Name, r.Amount), ErrBadAmount)
		}
		for _, q := range ps.Resources[:i] {
			if q.Name == r.Name {
				return invalid("pod set "+ps.Name+": resource "+r.Name+" listed twice", ErrBadRequest)
			}
		}
		id, ok := f.Resource(r.Name)
		if !ok {
			return invalid("pod set "+ps.Name+": no node has resource "+r.Name, ErrUnknownResource)
		}
		p.res = append(p.res, topology.ResourceAmount{Resource: id, Amount: r.Amount})
	}
	return nil
}

// sharedCap counts the pods of the current pod set node n can take, GPU
// by GPU and resource by resource.
func (p *Placer) sharedCap(n topology.NodeID) int {
	f := p.f
	const unbounded = 1 << 30
	c := unbounded
	switch {
	case p.k > 0:
		c = f.Free(n) / p.k
	case p.mig != "":
		prof, ok := f.NodeMIGProfile(n, p.mig)
		if !ok {
			return 0
		}
		c = f.SlicesThatFit(n, prof)
	case p.share > 0:
		c = f.SharesThatFit(n, p.share)
	}
	for _, r := range p.cur {
		c = min(c, int(min(f.ResourceFree(n, r.Resource)/r.Amount, unbounded)))
	}
	return c
}

// nodeState is one node's GPUs as this placement sees them: the fleet's
// state less the pods already chosen there and not yet on the fleet. It
// serves pods of a share, a MIG slice or no GPU; whole-GPU pods read the
// node's whole-free GPUs alone (see Placer.wholeFree).
type nodeState struct {
	n     topology.NodeID
	gpus  int
	free  uint64    // whole-free GPUs (first 64)
	left  [64]int16 // thousandths left per GPU, -1 when held whole
	slots [64]uint8 // occupied MIG slices per GPU
	named bool      // GPUs <= 64: pods name their GPUs
}

func (p *Placer) loadNode(st *nodeState, n topology.NodeID) {
	f := p.f
	st.n, st.gpus = n, f.Capacity(n)
	st.named = st.gpus <= 64
	if !st.named {
		return
	}
	st.free = f.FreeMask(n)
	for i := range st.gpus {
		used, sl := f.GPUUsed(n, i)
		st.left[i], st.slots[i] = int16(topology.MilliGPU-used), sl
		if f.GPUWhole(n, i) {
			st.left[i] = -1
		}
	}
	// Pods of this trial not yet on the fleet: all of them unless earlier
	// pod sets were put on it for the trial.
	if p.touched[n] != p.trialID {
		return
	}
	for i := p.mark; i < len(p.pods); i++ {
		q := &p.pods[i] // by pointer: a Pod is too large to copy per step
		if q.Node != n || p.mutating && q.PodSet != p.ps {
			continue
		}
		st.free &^= q.GPUMask
		for m := q.GPUMask; m != 0; m &= m - 1 {
			st.left[bits.TrailingZeros64(m)] = -1
		}
		switch {
		case q.MIG != "":
			prof, _ := f.NodeMIGProfile(n, q.MIG)
			st.slots[q.GPU] |= span(prof, q.Slice)
			st.left[q.GPU] -= int16(q.Share)
			st.free &^= 1 << q.GPU
		case q.Share > 0:
			st.left[q.GPU] -= int16(q.Share)
			st.free &^= 1 << q.GPU
		}
	}
}

func span(prof topology.MIGProfile, start int) uint8 {
	if prof.Slices >= topology.MIGSlices {
		return 0xFF
	}
	return uint8(1<<prof.Slices-1) << start
}

// take chooses the GPU of one pod that takes no whole GPU and records it:
// for a share or a slice, gpu when it is >= 0, else the GPU left tightest
// by it (the fewest thousandths or free slices that still hold it),
// lowest index on ties. Whole-GPU pods go by Placer.emitWhole.
func (st *nodeState) take(pod *Pod, p *Placer, gpu int) bool {
	if !st.named {
		return false // only whole GPUs are counted there
	}
	switch {
	case p.mig != "":
		prof, ok := p.f.NodeMIGProfile(st.n, p.mig)
		if !ok {
			return false
		}
		best, bestFree, bestStart := -1, 0, 0
		for i := range st.gpus {
			if st.left[i] < 0 || gpu >= 0 && i != gpu {
				continue
			}
			s, ok := topology.MIGStart(st.slots[i], prof)
			if !ok {
				continue
			}
			if fr := topology.MIGSlices - bits.OnesCount8(st.slots[i]); best < 0 || fr < bestFree {
				best, bestFree, bestStart = i, fr, s
			}
		}
		if best < 0 {
			return false
		}
		st.slots[best] |= span(prof, bestStart)
		share := prof.ShareAt(bestStart)
		st.left[best] -= int16(share)
		st.free &^= 1 << best
		pod.GPU, pod.MIG, pod.Slice, pod.Share = best, prof.Name, bestStart, share
	case p.share > 0:
		best := -1
		for i := range st.gpus {
			if int(st.left[i]) < p.share || gpu >= 0 && i != gpu {
				continue
			}
			if best < 0 || st.left[i] < st.left[best] {
				best = i
			}
		}
		if best < 0 {
			return false
		}
		st.left[best] -= int16(p.share)
		st.free &^= 1 << best
		pod.GPU, pod.Share = best, p.share
	}
	return true
}

// trial puts a pod of an earlier pod set on the fleet (take) or takes it
// off again, for the trial of a gang of several pod sets.
func (p *Placer) trial(pod Pod, take bool) {
	var err error
	if pod.counted() {
		if take {
			err = p.f.Allocate(pod.Node, pod.GPUs)
		} else {
			err = p.f.Release(pod.Node, pod.GPUs)
		}
	} else {
		var c topology.Claim
		c, p.claim, err = pod.claim(p.f, p.claim)
		if err == nil {
			if take {
				err = p.f.AllocateClaim(c)
			} else {
				err = p.f.ReleaseClaim(c)
			}
		}
	}
	if err != nil {
		panic("placement: trial claim refused: " + err.Error())
	}
}
