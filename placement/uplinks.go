package placement

import (
	"fmt"
	"slices"

	"github.com/fleetsched/fleet/topology"
)

// Crossings counts, per leaf (a domain of the level just above the
// nodes), the gangs that span more than one leaf and have a pod under it:
// how many gangs share that leaf's uplinks. It implements Uplinks, so a
// scheduler that keeps one up to date (Add on apply, Remove on release)
// passes it to placement as Options.Uplinks, and metrics read it per leaf.
// It is not safe for concurrent use.
type Crossings struct {
	lo, hi topology.DomainID // the leaves
	n      []int32           // gangs crossing leaf lo+i
	seen   []topology.DomainID
}

// NewCrossings returns empty counts for the leaves of f; on a fleet with
// no level between the fleet and its nodes there are no leaves to count.
func NewCrossings(f *topology.Fleet) *Crossings {
	c := &Crossings{}
	if f.Depth() > 1 {
		c.lo, c.hi = f.DomainsAt(topology.Level(f.Depth() - 1))
		c.n = make([]int32, c.hi-c.lo)
	}
	return c
}

// CountCrossings counts the cross-leaf gangs among as on f's leaves.
func CountCrossings(f *topology.Fleet, as []Assignment) *Crossings {
	c := NewCrossings(f)
	for _, a := range as {
		c.Add(f, a)
	}
	return c
}

// leaves gathers the distinct leaves of a's pods, in ID order, in c.seen.
func (c *Crossings) leaves(f *topology.Fleet, a Assignment) []topology.DomainID {
	c.seen = c.seen[:0]
	if len(c.n) == 0 {
		return c.seen
	}
	l := topology.Level(f.Depth() - 1)
	for _, p := range a.Pods {
		c.seen = append(c.seen, f.DomainOf(p.Node, l))
	}
	slices.Sort(c.seen)
	c.seen = slices.Compact(c.seen)
	return c.seen
}

// Add counts assignment a on every leaf it uses when it uses more than
// one, and reports whether it did.
func (c *Crossings) Add(f *topology.Fleet, a Assignment) bool {
	ls := c.leaves(f, a)
	if len(ls) < 2 {
		return false
	}
	for _, d := range ls {
		c.n[d-c.lo]++
	}
	return true
}

// Remove undoes Add for assignment a. It changes nothing and returns an
// error when a crosses a leaf no counted gang crosses (a was not added).
func (c *Crossings) Remove(f *topology.Fleet, a Assignment) error {
	ls := c.leaves(f, a)
	if len(ls) < 2 {
		return nil
	}
	for _, d := range ls {
		if c.n[d-c.lo] == 0 {
			return fmt.Errorf("placement: workload %q crosses %s, which no counted gang crosses", a.Workload, f.DomainName(d))
		}
	}
	for _, d := range ls {
		c.n[d-c.lo]--
	}
	return nil
}

// Crossing is the number of counted cross-leaf gangs with a pod under
// leaf; 0 for any domain that is not a leaf.
func (c *Crossings) Crossing(leaf topology.DomainID) int {
	if leaf < c.lo || leaf >= c.hi {
		return 0
	}
	return int(c.n[leaf-c.lo])
}

// Leaves returns the range of leaf domains counted: lo, lo+1, ..., hi-1.
func (c *Crossings) Leaves() (lo, hi topology.DomainID) { return c.lo, c.hi }

// leavesOfNodes gathers the distinct leaves of nodes, in ID order, in
// c.seen.
func (c *Crossings) leavesOfNodes(f *topology.Fleet, nodes []NodeGPUs) []topology.DomainID {
	c.seen = c.seen[:0]
	if len(c.n) == 0 {
		return c.seen
	}
	l := topology.Level(f.Depth() - 1)
	for _, x := range nodes {
		c.seen = append(c.seen, f.DomainOf(x.Node, l))
	}
	slices.Sort(c.seen)
	c.seen = slices.Compact(c.seen)
	return c.seen
}

// AddNodes counts a gang holding GPUs on nodes (a scheduler's record of
// it, as Assignment.NodeGPUs gives it) on every leaf it uses when it uses
// more than one, and reports whether it did.
func (c *Crossings) AddNodes(f *topology.Fleet, nodes []NodeGPUs) bool {
	ls := c.leavesOfNodes(f, nodes)
	if len(ls) < 2 {
		return false
	}
	for _, d := range ls {
		c.n[d-c.lo]++
	}
	return true
}

// RemoveNodes undoes AddNodes. It changes nothing and returns an error
// when the gang crosses a leaf no counted gang crosses.
func (c *Crossings) RemoveNodes(f *topology.Fleet, nodes []NodeGPUs) error {
	ls := c.leavesOfNodes(f, nodes)
	if len(ls) < 2 {
		return nil
	}
	for _, d := range ls {
		if c.n[d-c.lo] == 0 {
			return fmt.Errorf("placement: a gang crosses %s, which no counted gang crosses", f.DomainName(d))
		}
	}
	for _, d := range ls {
		c.n[d-c.lo]--
	}
	return nil
}
