package ledger

import (
	"fmt"
	"slices"

	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// checkCharge compares what a holder is charged with a recount from its
// pods: every pod placed (none lost), or whole GPUs only for a gang
// waiting for replacement pods (which holds no claim).
func (l *Ledger) checkCharge(r *Record) error {
	want := l.requestOf(r.Assign)
	if len(r.Lost) > 0 {
		want = wholeRequest(r.GPUs())
	}
	if r.charged.MilliGPUs != want.MilliGPUs || !slices.Equal(r.charged.Resources, want.Resources) {
		return fmt.Errorf("%s: charged %+v, its pods recount %+v", r.W.ID, r.charged, want)
	}
	if r.charges == nil {
		return nil
	}
	if want := l.chargesOf(r, withLost(r.Assign.Pods, r.Lost)); !slices.Equal(r.charges, want) {
		return fmt.Errorf("%s: charged %+v per flavor, its pods and flavors recount %+v", r.W.ID, r.charges, want)
	}
	return nil
}

// checkClaims recounts every GPU's shares and MIG slices, every node's
// named resources and every queue's resource usage from the holders'
// pods, and compares them with the fleet, its mirror and the quota tree:
//
//   - no MIG slice is held twice, no GPU holds more than 1000
//     thousandths (shares, or slices at their compute slices' charge),
//     and no share or slice sits on a GPU held whole;
//   - per GPU, the fleet's thousandths and slices in use equal the
//     holders' shares and slices there, and a node's GPUs in use are its
//     GPUs held whole plus its partly used ones;
//   - per node and resource, the fleet's allocation equals the holders'
//     amounts, and the mirror agrees;
//   - per queue, flavor and named resource, quota usage equals what the
//     holders are charged.
//
// It is O(pods + GPUs + nodes x resources) and meant for tests.
func (l *Ledger) checkClaims() error {
	f := l.fleet
	type gpu struct {
		milli  int
		slices uint8
	}
	gpus := map[[2]int]*gpu{}
	res := map[[2]int]int64{}     // node, fleet resource -> amount
	charged := map[[3]int]int64{} // queue, flavor, quota resource -> amount
	holders := 0
	for _, r := range l.recs {
		if !r.State.HoldsGPUs() {
			continue
		}
		if r.HasClaims() {
			holders++
		}
		for _, c := range r.Charges() {
			if c.Resource != quota.GPU {
				charged[[3]int{int(r.Queue), int(c.Flavor), int(c.Resource)}] += c.Value
			}
		}
		for _, p := range r.Assign.Pods {
			c, ok, err := sharedClaim(f, p)
			if err != nil {
				return fmt.Errorf("%s: %v", r.W.ID, err)
			}
			if !ok {
				continue
			}
			for _, x := range c.Resources {
				res[[2]int{int(p.Node), int(x.Resource)}] += x.Amount
			}
			if p.Share == 0 && p.MIG == "" {
				continue
			}
			k := [2]int{int(p.Node), p.GPU}
			g := gpus[k]
			if g == nil {
				g = &gpu{}
				gpus[k] = g
			}
			if f.GPUWhole(p.Node, p.GPU) {
				return fmt.Errorf("%s: a share of GPU %d of %s, which is held whole", r.W.ID, p.GPU, f.NodeName(p.Node))
			}
			if p.MIG != "" {
				prof, ok := f.NodeMIGProfile(p.Node, p.MIG)
				if !ok {
					return fmt.Errorf("%s: MIG profile %s on %s, whose model lacks it", r.W.ID, p.MIG, f.NodeName(p.Node))
				}
				span := uint8(0xFF)
				if prof.Slices < topology.MIGSlices {
					span = uint8(1<<prof.Slices-1) << p.Slice
				}
				if g.slices&span != 0 {
					return fmt.Errorf("%s: MIG slices %#x of GPU %d of %s booked twice", r.W.ID, g.slices&span, p.GPU, f.NodeName(p.Node))
				}
				g.slices |= span
				g.milli += prof.ShareAt(p.Slice)
			} else {
				g.milli += p.Share
			}
			// Slices are charged by their compute slices, whose charges
			// add up to one GPU: thousandths bound MIG GPUs too.
			if g.milli > topology.MilliGPU {
				return fmt.Errorf("GPU %d of %s: %d thousandths booked", p.GPU, f.NodeName(p.Node), g.milli)
			}
		}
	}
	for n := range topology.NodeID(f.NumNodes()) {
		partly := 0
		for i := range f.Capacity(n) {
			milli, sl := f.GPUUsed(n, i)
			if f.GPUWhole(n, i) {
				continue
			}
			want := gpus[[2]int{int(n), i}]
			if want == nil {
				want = &gpu{}
			}
			if milli != want.milli || sl != want.slices {
				return fmt.Errorf("GPU %d of %s: %d thousandths and slices %#x in use, holders %d and %#x",
					i, f.NodeName(n), milli, sl, want.milli, want.slices)
			}
			if milli > 0 || sl != 0 {
				partly++
			}
		}
		if f.Allocated(n) != f.WholeHeld(n)+partly {
			return fmt.Errorf("node %s: %d GPUs in use, %d held whole and %d shared", f.NodeName(n), f.Allocated(n), f.WholeHeld(n), partly)
		}
		for r := range topology.ResourceID(f.NumResources()) {
			got, want := f.ResourceAllocated(n, r), res[[2]int{int(n), int(r)}]
			if got != want {
				return fmt.Errorf("node %s: %d %s allocated, holders %d", f.NodeName(n), got, f.ResourceName(r), want)
			}
			if m := l.scratch.ResourceAllocated(n, r); m != got {
				return fmt.Errorf("node %s: the mirror has %d %s allocated, the fleet %d", f.NodeName(n), m, f.ResourceName(r), got)
			}
		}
	}
	t := l.tree
	for q := range quota.NodeID(t.NumNodes()) {
		if !t.IsQueue(q) {
			continue
		}
		for fl := range quota.FlavorID(t.NumFlavors()) {
			for r := quota.ResourceID(1); int(r) <= t.NumResources(); r++ {
				if got, want := t.UsageOf(q, fl, r), charged[[3]int{int(q), int(fl), int(r)}]; got != want {
					return fmt.Errorf("queue %s flavor %s: usage %d of %s, holders %d", t.Name(q), t.FlavorName(fl), got, t.ResourceName(r), want)
				}
			}
		}
	}
	if holders != l.claimHolders {
		return fmt.Errorf("%d holders with claims counted, %d recounted", l.claimHolders, holders)
	}
	return nil
}
