package ledger

import (
	"github.com/fleetsched/fleet/placement"
)

// Crossings counts, per leaf, the holders that span more than one leaf
// (placement.Crossings, kept with the holders' node lists): a placer reads
// it as Options.Uplinks, metrics per leaf. The ledger keeps it up to date;
// callers only read it.
func (l *Ledger) Crossings() *placement.Crossings {
	if l.crossings == nil {
		l.crossings = placement.NewCrossings(l.fleet)
	}
	return l.crossings
}

// countCrossing files r's nodes in the crossings (sign 1) or takes them
// out (sign -1), beside listNodes.
func (l *Ledger) countCrossing(r *Record, sign int) {
	c := l.Crossings()
	if sign > 0 {
		c.AddNodes(l.fleet, r.Nodes)
		return
	}
	if err := c.RemoveNodes(l.fleet, r.Nodes); err != nil {
		panic("ledger: crossings of " + r.W.ID + " lost: " + err.Error())
	}
}
