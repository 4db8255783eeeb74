package kueue

import "github.com/fleetsched/fleet/quota"

// fungibility reads a ClusterQueue's spec.flavorFungibility: whenCanBorrow
// (Borrow, v1beta2's MayStopSearch, or TryNextFlavor) and whenCanPreempt
// (TryNextFlavor, the default, or Preempt, v1beta2's MayStopSearch).
// preference is not modelled (fleet prefers borrowing over preemption,
// Kueue's default) and is noted.
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
	switch v := p.str(o, "whenCanPreempt", "spec.flavorFungibility."); v {
	case "", "TryNextFlavor":
	case "Preempt", "MayStopSearch":
		f.WhenCanPreempt = quota.Preempt
	default:
		p.fail("spec.flavorFungibility.whenCanPreempt", ErrInvalid, "%q (Preempt, MayStopSearch or TryNextFlavor)", v)
	}
	p.leftovers("spec.flavorFungibility.", o)
	return f
}
