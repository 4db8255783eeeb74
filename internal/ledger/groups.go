package ledger

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
)

// Resource groups. A queue whose resource groups split its resources
// (quota.Tree.SplitsResources) charges each pod set's named resources in
// the flavor that pod set got in the resource's group, as Kueue records a
// flavor per pod set and resource; GPUs are charged in the record's
// Flavor, the GPU model it runs on. The flavors are chosen once, at
// admission, by quota.Tree.Assign on the usage of that moment, and kept
// with the record (Flavors): its charge is recounted from its pods with
// them, and a restored or adopted holder given them charges exactly what
// the first admission did. Work of whole GPUs only is charged its GPUs
// in its Flavor, as in any queue.

// PodSetRequests is what pods ask of quota per pod set of w, for
// quota.Tree.Assign: pod sets asking GPUs may use only flavor f, the
// model they run on; the others may use any flavor.
func (l *Ledger) PodSetRequests(w *gang.Workload, f quota.FlavorID, pods []placement.Pod) []quota.PodSetRequest {
	out := make([]quota.PodSetRequest, len(w.PodSets))
	for i := range pods {
		p := &pods[i]
		ps := &out[p.PodSet]
		ps.MilliGPUs += podMilli(l.fleet, p)
		for _, res := range p.Resources {
			id, ok := l.tree.Resource(res.Name)
			if !ok {
				continue
			}
			ps.Resources = addAmount(ps.Resources, id, res.Amount)
		}
	}
	for i := range out {
		if out[i].MilliGPUs > 0 {
			out[i].GPUFlavors = []quota.FlavorID{f}
		}
	}
	return out
}

// addAmount adds v of resource id to as, which lists each resource once.
func addAmount(as []quota.Amount, id quota.ResourceID, v int64) []quota.Amount {
	if j := slices.IndexFunc(as, func(x quota.Amount) bool { return x.Resource == id }); j >= 0 {
		as[j].Value += v
		return as
	}
	return append(as, quota.Amount{Resource: id, Value: v})
}

// splits reports whether r, charged req, is charged per pod set and
// resource: it asks named resources of a queue whose groups split them.
func (l *Ledger) splits(r *Record, req quota.Request) bool {
	return len(req.Resources) > 0 && (r.flavors != nil || l.tree.SplitsResources(r.Queue))
}

// chooseFlavors is Kueue's flavor assignment for r on pods, on the
// tree's usage now. A pod set the assigner gives no flavor in a group it
// asks of (an adopted holder its quota does not fit) is charged in the
// first of the group's flavors that serves the resource.
func (l *Ledger) chooseFlavors(r *Record, pods []placement.Pod) [][]quota.FlavorID {
	sets := l.PodSetRequests(r.W, r.Flavor, pods)
	a := l.tree.Assign(r.Queue, sets, l.assignOpts)
	out := make([][]quota.FlavorID, len(sets))
	for i, ps := range sets {
		out[i] = make([]quota.FlavorID, l.tree.NumResources())
		for j := range out[i] {
			out[i][j] = quota.NoFlavor
		}
		for _, x := range ps.Resources {
			g := l.tree.GroupOf(r.Queue, x.Resource)
			if g < 0 {
				continue // not served: charging it is refused
			}
			f := quota.NoFlavor
			if i < len(a.PodSets) {
				f = a.PodSets[i][g].Flavor
			}
			if f == quota.NoFlavor {
				for _, c := range l.tree.GroupFlavors(r.Queue, g) {
					if l.tree.ServesResource(r.Queue, c, x.Resource) {
						f = c
						break
					}
				}
			}
			out[i][x.Resource-1] = f
		}
	}
	return out
}

// chargesOf is what r is charged on pods with its flavors: GPUs in its
// Flavor, each named resource in the flavor its pod set got, summed per
// flavor and resource and ordered so.
func (l *Ledger) chargesOf(r *Record, pods []placement.Pod) []quota.Charge {
	var out []quota.Charge
	add := func(f quota.FlavorID, res quota.ResourceID, v int64) {
		if v == 0 {
			return
		}
		if i := slices.IndexFunc(out, func(c quota.Charge) bool { return c.Flavor == f && c.Resource == res }); i >= 0 {
			out[i].Value += v
			return
		}
		out = append(out, quota.Charge{Flavor: f, Resource: res, Value: v})
	}
	for i := range pods {
		p := &pods[i]
		add(r.Flavor, quota.GPU, podMilli(l.fleet, p))
		for _, res := range p.Resources {
			id, ok := l.tree.Resource(res.Name)
			if !ok {
				continue
			}
			f := r.flavors[p.PodSet][id-1]
			if f == quota.NoFlavor {
				f = r.Flavor // refused below unless its flavor serves it
			}
			add(f, id, res.Amount)
		}
	}
	slices.SortFunc(out, func(x, y quota.Charge) int {
		return cmp.Or(cmp.Compare(x.Flavor, y.Flavor), cmp.Compare(x.Resource, y.Resource))
	})
	return out
}

// chargeTree adds r's charge to t, or takes it off: its charges per
// flavor when it has them, else charged in its Flavor.
func (r *Record) chargeTree(t *quota.Tree, take bool) error {
	switch {
	case r.charges != nil && take:
		return t.AddCharges(r.Queue, r.charges)
	case r.charges != nil:
		return t.RemoveCharges(r.Queue, r.charges)
	case take:
		return t.AddRequest(r.Queue, r.Flavor, r.charged)
	}
	return t.RemoveRequest(r.Queue, r.Flavor, r.charged)
}

// ChargeTo adds the holder's charge to t, a copy of the ledger's tree,
// or takes it off (take false): a what-if search's view of it gone.
func (r *Record) ChargeTo(t *quota.Tree, take bool) error { return r.chargeTree(t, take) }

// Charges is what the holder is charged per flavor and resource: its
// charges in a queue whose groups split its resources, else its charge in
// its Flavor.
func (r *Record) Charges() []quota.Charge {
	if r.charges != nil {
		return slices.Clone(r.charges)
	}
	var out []quota.Charge
	if r.charged.MilliGPUs > 0 {
		out = append(out, quota.Charge{Flavor: r.Flavor, Resource: quota.GPU, Value: r.charged.MilliGPUs})
	}
	for _, a := range r.charged.Resources {
		out = append(out, quota.Charge{Flavor: r.Flavor, Resource: a.Resource, Value: a.Value})
	}
	return out
}

// Flavors is the flavor each pod set's named resources are charged in,
// per pod set and named resource (index: its ResourceID - 1), quota.NoFlavor
// where it asks none; nil when every resource is charged in its Flavor.
// The caller owns the result.
func (r *Record) Flavors() [][]quota.FlavorID {
	if r.flavors == nil {
		return nil
	}
	out := make([][]quota.FlavorID, len(r.flavors))
	for i := range r.flavors {
		out[i] = slices.Clone(r.flavors[i])
	}
	return out
}

// SetFlavors gives a pending workload the flavors its named resources
// are charged in once admitted (a restored or adopted holder's, see
// Flavors), instead of choosing them on admission.
func (l *Ledger) SetFlavors(id string, flavors [][]quota.FlavorID) error {
	l.version++
	r, ok := l.recs[id]
	if !ok || r.State != gang.Pending {
		return fmt.Errorf("ledger: set the flavors of %q: not a pending workload", id)
	}
	if len(flavors) != len(r.W.PodSets) {
		return fmt.Errorf("ledger: set the flavors of %q: %d pod sets, not %d", id, len(flavors), len(r.W.PodSets))
	}
	out := make([][]quota.FlavorID, len(flavors))
	for i, row := range flavors {
		out[i] = make([]quota.FlavorID, l.tree.NumResources())
		for j := range out[i] {
			out[i][j] = quota.NoFlavor
			if j < len(row) {
				out[i][j] = row[j]
			}
		}
		for j, f := range row {
			switch {
			case j >= len(out[i]) && f != quota.NoFlavor:
				return fmt.Errorf("ledger: set the flavors of %q: resource #%d unknown", id, j+1)
			case f != quota.NoFlavor && (f < 0 || int(f) >= l.tree.NumFlavors()):
				return fmt.Errorf("ledger: set the flavors of %q: flavor #%d unknown", id, f)
			}
		}
	}
	r.flavors = out
	return nil
}

// borrowsNow reports whether r's queue uses more than its nominal quota
// of what r is charged: GPUs of its Flavor, or a resource of a flavor it
// is charged in.
func (l *Ledger) borrowsNow(r *Record) bool {
	if l.tree.Borrowed(r.Queue, r.Flavor) > 0 {
		return true
	}
	for _, c := range r.charges {
		if c.Resource != quota.GPU && l.tree.UsageOf(r.Queue, c.Flavor, c.Resource) > l.tree.NominalOf(r.Queue, c.Flavor, c.Resource) {
			return true
		}
	}
	return false
}
