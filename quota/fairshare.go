package quota

import (
	"cmp"
	"math"
)

// Share is a node's dominant resource share in Kueue's fair sharing
// (KEP-1714), with the inputs kept so callers can explain it. GPUs are one
// resource whose flavors are summed, as Kueue sums the flavors of one
// resource.
type Share struct {
	// Borrowed is the sum over flavors of usage (plus the request, for
	// DominantShareWith) above the node's subtree quota.
	Borrowed int64
	// Lendable is the sum over flavors of what the parent's tree could lend
	// the node if it were idle (Kueue's calculateLendable).
	Lendable int64
	Weight   float64
}

// Borrowing reports whether the node uses more than its subtree quota.
func (s Share) Borrowing() bool { return s.Borrowed > 0 }

// Value is Kueue's precise weighted share, in thousandths: 0 when not
// borrowing or when the tree lends nothing, +Inf for a weight-0 borrower,
// else Borrowed*1000/Lendable/Weight.
func (s Share) Value() float64 {
	switch {
	case s.Borrowed > 0 && s.Weight == 0:
		return math.Inf(1)
	case s.Borrowed <= 0 || s.Lendable <= 0:
		return 0
	}
	return s.ratio() / s.Weight
}

func (s Share) ratio() float64 {
	if s.Borrowed <= 0 || s.Lendable <= 0 {
		return 0
	}
	return float64(s.Borrowed) * 1000 / float64(s.Lendable)
}

// Rounded is the integer Kueue reports as weightedShare: Value rounded up,
// and math.MaxInt64 for a weight-0 borrower.
func (s Share) Rounded() int64 {
	if s.Borrowed > 0 && s.Weight == 0 {
		return math.MaxInt64
	}
	return int64(math.Ceil(s.Value()))
}

// Compare orders shares as Kueue's CompareDRS: lower first. Lower means
// admit first; higher means preempt first. Weight-0 borrowers come after
// everyone else and among themselves by unweighted ratio. Equal shares
// compare 0: the caller ends with its own ID tie-break.
func (s Share) Compare(o Share) int {
	sz, oz := s.Borrowed > 0 && s.Weight == 0, o.Borrowed > 0 && o.Weight == 0
	switch {
	case sz && oz:
		return cmp.Compare(s.ratio(), o.ratio())
	case sz:
		return 1
	case oz:
		return -1
	}
	return cmp.Compare(s.Value(), o.Value())
}

// DominantShare returns node n's current share. A root has share 0: there
// is nobody to borrow from. Cost O(flavors x depth); no allocation.
func (t *Tree) DominantShare(n NodeID) Share {
	return t.share(n, -1, 0)
}

// DominantShareWith returns n's share as if gpus more GPUs of flavor f were
// added to its usage: the value Kueue's admission tournament and
// fair-sharing preemption compare for an incoming workload.
func (t *Tree) DominantShareWith(n NodeID, f FlavorID, gpus int64) Share {
	return t.share(n, f, gpus)
}

func (t *Tree) share(n NodeID, extraF FlavorID, extra int64) Share {
	s := Share{Weight: t.weight[n]}
	p := t.s.parent[n]
	if p == None {
		return s
	}
	for f := FlavorID(0); int(f) < len(t.s.flavors); f++ {
		x := t.at(n, f)
		u := t.usage[x]
		if f == extraF {
			u += extra * milli
		}
		s.Borrowed += max(0, u-t.subtree[x])
	}
	s.Borrowed = ceilGPUs(s.Borrowed)
	if s.Borrowed == 0 {
		return s
	}
	for f := FlavorID(0); int(f) < len(t.s.flavors); f++ {
		s.Lendable += t.Potential(p, f)
	}
	return s
}
