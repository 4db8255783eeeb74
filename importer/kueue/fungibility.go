package kueue

import "github.com/fleetsched/fleet/quota"

// fungibility reads a ClusterQueue's spec.flavorFungibility. whenCanBorrow
// carries over: Borrow (v1beta2 calls it MayStopSearch) or TryNextFlavor.
// whenCanPreempt is noted, not modelled: fleet's workloads that accept
// several models preempt on them in order only once none fits without
// preemption, which Preempt and TryNextFlavor both come to.
func (b *treeBuilder) fungibility(o obj) quota.Fungibility {
	p := b.p
	var f quota.Fungibility
	switch v := p.str(o, "whenCanBorrow", "spec.flavorFungibility."); v {
	case "", "Borrow", "MayStopSearch":
	case "TryNextFlavor":
		f.WhenCanBorrow = quota.TryNextFlavor
	default:
		p.fail("spec.flavorFungibility.whenCanBorrow", ErrInvalid, "%q (Borrow, MayStopSearch or TryNextFlavor)", v)
	}
	p.leftovers("spec.flavorFungibility.", o)
	return f
}
