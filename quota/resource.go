package quota

import "fmt"

// GPU quantities are kept in thousandths of a GPU, so that pods sharing a
// GPU are charged their share; the GPU-count API converts at its edge
// (usage rounded up, availability rounded down).
const milli int64 = 1000

// maxBase bounds every quantity of the flat state, in its stored unit.
const maxBase = MaxAmount * milli

func ceilGPUs(v int64) int64 {
	if v <= 0 {
		return v / milli
	}
	return (v + milli - 1) / milli
}

func scaleLimit(v, by int64) int64 {
	if v == noLimit {
		return noLimit
	}
	return v * by
}

func scaleLimitDown(v int64) int64 {
	if v == noLimit {
		return noLimit
	}
	return v / milli
}

// ResourceID names what a quota covers: GPUs, or a named resource of
// Spec.Resources (ID i+1 for Resources[i]).
type ResourceID int32

// GPU is the ResourceID of GPUs; their amounts in ResourceID-based calls
// are in thousandths of a GPU.
const GPU ResourceID = 0

func (s *shape) resolveResources(names []string) error {
	s.resourceID = make(map[string]ResourceID, len(names))
	for _, r := range names {
		switch _, dup := s.resourceID[r]; {
		case r == "":
			return &SpecError{Field: "resources", Detail: "empty resource name", Err: ErrInvalidName}
		case dup:
			return &SpecError{Field: "resources", Detail: fmt.Sprintf("resource %q twice", r), Err: ErrDuplicateResource}
		}
		s.resourceID[r] = ResourceID(len(s.resources) + 1)
		s.resources = append(s.resources, r)
		s.allResources = append(s.allResources, ResourceID(len(s.resources)))
	}
	s.cols = len(s.flavors) * (len(s.resources) + 1)
	return nil
}

// col is the column of (flavor, resource).
func (s *shape) col(f int, r ResourceID) FlavorID { return FlavorID(int(r)*len(s.flavors) + f) }

func (s *shape) split(c FlavorID) (f int, r ResourceID) {
	return int(c) % len(s.flavors), ResourceID(int(c) / len(s.flavors))
}

func (s *shape) resourceName(r ResourceID) string {
	if r == GPU {
		return "GPUs"
	}
	return s.resources[r-1]
}

// out converts a stored amount of column c to its public unit for
// messages: whole GPUs for GPU columns.
func (s *shape) out(c FlavorID, v int64) int64 {
	if _, r := s.split(c); r == GPU {
		return v / milli
	}
	return v
}

func (t *Tree) setCol(n NodeID, c FlavorID, nominal, bl, ll int64) {
	t.changes++
	x := t.at(n, c)
	t.nominal[x], t.borrow[x], t.lend[x], t.served[x] = nominal, bl, ll, true
	t.nominalSum[c] += nominal // each <= maxBase: the sum is checked once all are in
	if t.nominalSum[c] > maxBase {
		t.nominalSum[c] = maxBase + 1 // saturate: New refuses it
	}
}

// checkResourceQuotas applies the rules of a flavor entry's resources.
func checkResourceQuotas(node string, q FlavorQuota, s *shape) error {
	for i, rq := range q.Resources {
		if _, ok := s.resourceID[rq.Name]; !ok {
			return &SpecError{Node: node, Flavor: q.Flavor, Field: "resources", Detail: fmt.Sprintf("resource %q is not in the spec's resources", rq.Name), Err: ErrUnknownResource}
		}
		for _, o := range q.Resources[:i] {
			if o.Name == rq.Name {
				return &SpecError{Node: node, Flavor: q.Flavor, Field: "resources", Detail: fmt.Sprintf("resource %q twice", rq.Name), Err: ErrDuplicateResource}
			}
		}
		fq := FlavorQuota{Flavor: q.Flavor, Nominal: rq.Nominal, BorrowingLimit: rq.BorrowingLimit, LendingLimit: rq.LendingLimit}
		if err := checkQuota(node, fq, s.flavorID); err != nil {
			if e, ok := err.(*SpecError); ok {
				e.Field = "resources[" + rq.Name + "]." + e.Field
			}
			return err
		}
	}
	return nil
}

// Resource returns the ID of a named resource the quotas cover.
func (t *Tree) Resource(name string) (ResourceID, bool) {
	r, ok := t.s.resourceID[name]
	return r, ok
}

// ResourceName returns the name of resource r ("GPUs" for GPU).
func (t *Tree) ResourceName(r ResourceID) string { return t.s.resourceName(r) }

// NumResources counts the named resources (GPUs not included).
func (t *Tree) NumResources() int { return len(t.s.resources) }

func (t *Tree) colOK(f FlavorID, r ResourceID) bool {
	return f >= 0 && int(f) < len(t.s.flavors) && r >= 0 && int(r) <= len(t.s.resources)
}

// NominalOf is Nominal for any resource r of flavor f, in its unit
// (thousandths of a GPU for GPU).
func (t *Tree) NominalOf(n NodeID, f FlavorID, r ResourceID) int64 {
	return t.nominal[t.at(n, t.s.col(int(f), r))]
}

// UsageOf is Usage for any resource r of flavor f, in its unit: Kueue's
// Usage, counted against the subtree quota (for a queue what its
// workloads hold, for a cohort what its children use above their own
// quotas).
func (t *Tree) UsageOf(n NodeID, f FlavorID, r ResourceID) int64 {
	return t.usage[t.at(n, t.s.col(int(f), r))]
}

// InUseOf is InUse for any resource r of flavor f, in its unit: the plain
// count of what every queue under n holds, whatever the quotas.
func (t *Tree) InUseOf(n NodeID, f FlavorID, r ResourceID) int64 {
	return t.inUse[t.at(n, t.s.col(int(f), r))]
}

// AvailableOf is Available for any resource r of flavor f, in its unit:
// how much more n could take now, borrowing as its limits allow.
func (t *Tree) AvailableOf(n NodeID, f FlavorID, r ResourceID) int64 {
	a, _, _, _ := t.rawAvailable(n, t.s.col(int(f), r))
	return max(0, a)
}

// PotentialOf is Potential for any resource of flavor f, in its unit
// (thousandths of a GPU for GPU): what n could take with the tree idle.
func (t *Tree) PotentialOf(n NodeID, f FlavorID, r ResourceID) int64 {
	return t.potential(n, t.s.col(int(f), r))
}

// ServesResource reports whether node n has a quota entry for resource r
// of flavor f.
func (t *Tree) ServesResource(n NodeID, f FlavorID, r ResourceID) bool {
	return t.served[t.at(n, t.s.col(int(f), r))]
}

// Amount is a quantity of one resource.
type Amount struct {
	Resource ResourceID // the resource
	Value    int64      // how much, in its unit
}

// Request is what one workload asks of one flavor: GPUs in thousandths
// (a share of 0.5 GPU is 500) and named resources. The Resources slice
// belongs to the caller; nothing keeps it.
type Request struct {
	MilliGPUs int64    // GPUs, in thousandths
	Resources []Amount // named resources, at most one entry each
}

func (req Request) each(fn func(r ResourceID, v int64) bool) {
	if req.MilliGPUs != 0 && !fn(GPU, req.MilliGPUs) {
		return
	}
	for _, a := range req.Resources {
		if !fn(a.Resource, a.Value) {
			return
		}
	}
}

// FitsRequest is Fits for every resource of req at once, as Kueue checks
// every resource of a flavor: it fits when each does; it borrows when any
// does (From and Height are those of the highest borrowing); when one
// does not fit, the verdict is that resource's, with Resource naming it and
// GPUs, Available and the Reason's amounts in its unit (thousandths of a
// GPU for GPU). A request with no amount fits within nominal. It costs
// O(resources x depth) and does not allocate.
func (t *Tree) FitsRequest(q NodeID, f FlavorID, req Request) Verdict {
	out := Verdict{Mode: FitsNominal, Queue: q, Flavor: f, From: q, request: true}
	if q < 0 || int(q) >= len(t.s.names) || t.s.kind[q] != Queue {
		return Verdict{Queue: q, Flavor: f, From: None, Reason: Reason{Kind: ReasonBadRequest, Node: None}}
	}
	out.queueName, out.fromName = t.s.names[q], t.s.names[q]
	if int(f) >= 0 && int(f) < len(t.s.flavors) {
		out.flavorName = t.s.flavors[f]
	}
	req.each(func(r ResourceID, v int64) bool {
		if !t.colOK(f, r) || v < 0 || v > maxBase {
			out = Verdict{Queue: q, Flavor: f, Resource: r, GPUs: v, From: None, Reason: Reason{Kind: ReasonBadRequest, Node: None, ShortBy: v}}
			return false
		}
		v1 := t.fitsCol(q, t.s.col(int(f), r), v)
		v1.Flavor, v1.Resource, v1.flavorName, v1.request = f, r, t.s.flavors[f], true
		if r != GPU {
			v1.resourceName = t.s.resources[r-1]
		}
		if !v1.Fits() {
			out = v1
			return false
		}
		if v1.Mode == FitsBorrowing && (out.Mode == FitsNominal || v1.Height > out.Height) {
			out.Mode, out.From, out.Height, out.fromName = FitsBorrowing, v1.From, v1.Height, v1.fromName
		}
		return true
	})
	return out
}

// AddRequest records that queue q now holds req of flavor f, all or
// nothing: it refuses, leaving the tree unchanged, what AddUsage refuses
// for any resource, and a resource the tree does not know
// (ErrUnknownResource). It does not allocate unless it refuses.
func (t *Tree) AddRequest(q NodeID, f FlavorID, req Request) error {
	return t.request(q, f, req, 1)
}

// RemoveRequest undoes AddRequest, all or nothing.
func (t *Tree) RemoveRequest(q NodeID, f FlavorID, req Request) error {
	return t.request(q, f, req, -1)
}

func (t *Tree) request(q NodeID, f FlavorID, req Request, sign int64) error {
	var err error
	req.each(func(r ResourceID, v int64) bool {
		if r < 0 || int(r) > len(t.s.resources) {
			err = &UsageError{Queue: q, Flavor: f, GPUs: v, Err: ErrUnknownResource, Detail: fmt.Sprintf("resource #%d", r)}
			return false
		}
		if err = t.checkUsage(q, f, 0); err != nil {
			return false
		}
		c := t.s.col(int(f), r)
		x := t.at(q, c)
		switch {
		case !t.served[x]:
			err = t.usageError(q, f, v, ErrFlavorNotServed, "queue %q has no quota of %s for %s", t.s.names[q], t.s.resourceName(r), t.s.flavors[f])
		case v < 0 || v > maxBase:
			err = t.usageError(q, f, v, ErrNegativeAmount, "%d %s", v, t.s.resourceName(r))
		case sign > 0 && v > maxBase-t.inUseSum[c]:
			err = t.usageError(q, f, v, ErrAmountTooLarge, "usage of %s would exceed its bound", t.s.resourceName(r))
		case sign < 0 && v > t.usage[x]:
			err = t.usageError(q, f, v, ErrUsageUnderflow, "queue %q holds %d of %s, cannot release %d", t.s.names[q], t.usage[x], t.s.resourceName(r), v)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	// A request may list a resource twice: check the totals too.
	for i, a := range req.Resources {
		sum := a.Value
		for _, b := range req.Resources[i+1:] {
			if b.Resource == a.Resource {
				sum += b.Value
			}
		}
		if x := t.at(q, t.s.col(int(f), a.Resource)); sign < 0 && sum > t.usage[x] {
			return t.usageError(q, f, sum, ErrUsageUnderflow, "queue %q holds %d of %s, cannot release %d", t.s.names[q], t.usage[x], t.s.resourceName(a.Resource), sum)
		}
	}
	req.each(func(r ResourceID, v int64) bool {
		t.shift(q, t.s.col(int(f), r), sign*v)
		return true
	})
	return nil
}

// String is "GPU" for GPU and resource#N for another resource (Tree.ResourceName gives its name).
func (r ResourceID) String() string {
	if r == GPU {
		return "GPU"
	}
	return fmt.Sprintf("resource#%d", int(r))
}
