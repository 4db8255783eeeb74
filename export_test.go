package fleet

import "github.com/fleetsched/fleet/quota"

// CheckInvariants lets the external tests check the ledger after every
// step.
func (s *Scheduler) CheckInvariants() error { return s.books.CheckInvariants() }

// UsageOf is a queue's quota usage of one resource of a flavor ("" for
// GPUs, in thousandths), for tests of resource accounting.
func (s *Scheduler) UsageOf(queue, flavor, resource string) int64 {
	q, _ := s.tree.Node(queue)
	f, _ := s.tree.Flavor(flavor)
	r := quota.GPU
	if resource != "" {
		r, _ = s.tree.Resource(resource)
	}
	return s.tree.UsageOf(q, f, r)
}

// NodeResource is a node's allocated amount of a named resource and its
// thousandths of GPU in use.
func (s *Scheduler) NodeResource(node, resource string) (amount int64, milliGPUs int) {
	n, _ := s.fleet.Node(node)
	if r, ok := s.fleet.Resource(resource); ok {
		amount = s.fleet.ResourceAllocated(n, r)
	}
	return amount, s.fleet.MilliUsed(n)
}
