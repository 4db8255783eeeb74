package ledger

import "github.com/fleetsched/fleet/quota"

// SetQuotaNode replaces one cohort's or queue's settings in the live quota
// tree (see quota.Tree.SetNode). The edit is tried on a copy first, and
// check (nil: none) sees that copy: a refusal by either leaves the tree
// unchanged. Usage stays charged as it is: a queue left above its new
// quota borrows, and its excess is reclaimable like any borrowed quota.
func (l *Ledger) SetQuotaNode(spec quota.NodeSpec, check func(*quota.Tree) error) error {
	l.version++
	c := l.tree.Clone()
	if err := c.SetNode(spec); err != nil {
		return err
	}
	if check != nil {
		if err := check(c); err != nil {
			return err
		}
	}
	c.CopyTo(l.tree)
	return nil
}
