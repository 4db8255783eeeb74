package calendar

import (
	"time"

	"github.com/fleetsched/fleet/topology"
)

// Nodes in and out of service. The promise counts the GPUs of the nodes
// in service (not topology.Absent): a node a host takes out of service is
// a planned change, not a failure, so it may not break a promise the
// calendar made. A failure (Down) keeps its GPUs in the count and is
// answered with an Offer instead.

// RemoveNode takes node n out of the capacity the promise is checked
// against, from now on; call it before the fleet marks n absent. It is
// refused, leaving the Calendar unchanged, when n is inside a block of an
// approved booking that has not ended (an *Error wrapping ErrConflict
// naming the booking: an approved block is whole at its start unless a
// node fails; shorten or cancel the booking first), or when guarantees
// plus bookings would then exceed the capacity left at some instant (an
// *OverCommitError).
func (c *Calendar) RemoveNode(now time.Time, n topology.NodeID) error {
	var in *Booking
	c.all.Ascend(func(x slot) bool {
		if !x.b.End.After(now) {
			return true
		}
		for _, d := range x.b.domains {
			if lo, hi := c.fleet.Nodes(d); lo <= n && n < hi {
				in = x.b
				return false
			}
		}
		return true
	})
	if in != nil {
		return refuse("remove-node", in.ID, ErrConflict, "node %s is in its block until %s: shorten or cancel it first",
			c.fleet.NodeName(n), in.End.Format(time.RFC3339))
	}
	f, ok := c.tree.Flavor(c.fleet.GroupFlavor(c.fleet.NodeGroup(n)))
	if !ok {
		return nil // GPUs no quota covers promise nothing
	}
	gpus := int64(c.fleet.Capacity(n))
	c.capacity[f] -= gpus
	if e := c.overCommit(f, now, c.horizon(now), nil, ""); e != nil {
		c.capacity[f] += gpus
		return e
	}
	return nil
}

// AddNode counts node n, brought back into service, in the capacity the
// promise is checked against.
func (c *Calendar) AddNode(n topology.NodeID) {
	if f, ok := c.tree.Flavor(c.fleet.GroupFlavor(c.fleet.NodeGroup(n))); ok {
		c.capacity[f] += int64(c.fleet.Capacity(n))
	}
}
