package fleet

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Work beyond whole GPUs of one model: pods that take a share of one GPU
// (GPUShare, in thousandths), a MIG slice, no GPU at all, or named
// resources (cpu, memory), and workloads that accept a set of GPU models.
// They are admitted by tryAdmitShared: quota is checked for every accepted
// model with every resource, placement picks the best fit across the
// models whose quota fits, and the workload is charged for the model it
// lands on, its MIG slices by the compute slices they take
// (topology.MIGProfile.ShareAt). It preempts by reclaimFor
// (reclaim_shared.go); a model set preempts on one model at a time, in
// its order of preference (preemptModels). Such work is not hot-swapped
// when a node fails.

// sharing reports whether e takes the path of work beyond whole GPUs of
// one model.
func (e *entry) sharing() bool { return e.w.Shared() || len(e.w.Flavors) > 1 }

// checkSharing refuses, whole, what e can never get: a MIG profile no
// accepted GPU model has (placement.ErrUnknownProfile), a resource no node
// has (placement.ErrUnknownResource), and, for one model, a resource its
// queue has no quota of or more shares or resources than the queue could
// reach with the tree idle (ErrNeverFits). Shares outside (0, 1000] and a
// minimum count above the count are refused by the workload's own
// validation.
func (s *Scheduler) checkSharing(op string, e *entry) error {
	if !e.sharing() {
		return nil
	}
	w := &e.w
	never := func(err error, format string, args ...any) error {
		return &Error{Op: op, Workload: w.ID, Detail: fmt.Sprintf(format, args...), Err: fmt.Errorf("%w: %w", ErrNeverFits, err)}
	}
	// Shares and resources add up: more than the queue could ever reach
	// never fits.
	if !accepted(op) && len(w.Flavors) < 2 {
		if _, milli := minimum(w); int64(ceilGPUs(milli)) > s.tree.Potential(e.queue, e.flavor) {
			need := ceilGPUs(milli)
			return &Error{Op: op, Workload: w.ID, Err: ErrNeverFits,
				Detail: fmt.Sprintf("needs %d GPUs of shares, queue %q can reach at most %d", need, w.Queue, s.tree.Potential(e.queue, e.flavor))}
		}
		if s.tree.SplitsResources(e.queue) {
			if err := s.neverFitsGroups(op, e); err != nil {
				return err
			}
		}
		for _, a := range s.specRequest(e).Resources {
			if s.tree.SplitsResources(e.queue) {
				break // charged in its group's flavors: neverFitsGroups
			}
			name := s.tree.ResourceName(a.Resource)
			if !s.tree.ServesResource(e.queue, e.flavor, a.Resource) {
				// As in Kueue: a resource the quotas cover that the queue's
				// flavor entry does not list is never admitted.
				return &Error{Op: op, Workload: w.ID, Err: ErrNeverFits,
					Detail: fmt.Sprintf("queue %q has no quota of %s for %s", w.Queue, name, w.Flavor)}
			}
			if p := s.tree.PotentialOf(e.queue, e.flavor, a.Resource); a.Value > p {
				return &Error{Op: op, Workload: w.ID, Err: ErrNeverFits,
					Detail: fmt.Sprintf("needs %d %s, queue %q can reach at most %d", a.Value, name, w.Queue, p)}
			}
		}
	}
	for i := range w.PodSets {
		ps := &w.PodSets[i]
		if ps.MIG != "" && !slices.ContainsFunc(s.acceptedNodes(w), func(n topology.NodeID) bool {
			_, ok := s.fleet.NodeMIGProfile(n, ps.MIG)
			return ok
		}) {
			return never(placement.ErrUnknownProfile, "pod set %q: no accepted GPU model has MIG profile %q", ps.Name, ps.MIG)
		}
		for _, r := range ps.Resources {
			if _, ok := s.fleet.Resource(r.Name); !ok {
				return never(placement.ErrUnknownResource, "pod set %q: no node has resource %q", ps.Name, r.Name)
			}
		}
	}
	return nil
}

// neverFitsGroups refuses what e can never get in a queue whose resource
// groups split its resources: a named resource no group covers, or a pod
// set asking more of one than any flavor of its group could reach with
// the tree idle (a pod set's amount lands in one flavor).
func (s *Scheduler) neverFitsGroups(op string, e *entry) error {
	w := &e.w
	for i := range w.PodSets {
		ps := &w.PodSets[i]
		for _, r := range ps.Resources {
			id, ok := s.tree.Resource(r.Name)
			if !ok {
				continue
			}
			g := s.tree.GroupOf(e.queue, id)
			if g < 0 {
				return &Error{Op: op, Workload: w.ID, Err: ErrNeverFits,
					Detail: fmt.Sprintf("queue %q has no resource group covering %s", w.Queue, r.Name)}
			}
			reach := int64(0)
			for _, f := range s.tree.GroupFlavors(e.queue, g) {
				if s.tree.ServesResource(e.queue, f, id) {
					reach = max(reach, s.tree.PotentialOf(e.queue, f, id))
				}
			}
			if need := int64(ps.Count) * r.Amount; need > reach {
				return &Error{Op: op, Workload: w.ID, Err: ErrNeverFits,
					Detail: fmt.Sprintf("pod set %q needs %d %s, queue %q can reach at most %d in one flavor",
						ps.Name, need, r.Name, w.Queue, reach)}
			}
		}
	}
	return nil
}

// flavorViews names the flavors of a holder's named resources per pod
// set (ledger.Record.Flavors), for RunningView.Flavors.
func (s *Scheduler) flavorViews(flavors [][]quota.FlavorID) []map[string]string {
	if flavors == nil {
		return nil
	}
	out := make([]map[string]string, len(flavors))
	for i, row := range flavors {
		out[i] = map[string]string{}
		for j, f := range row {
			if f != quota.NoFlavor {
				out[i][s.tree.ResourceName(quota.ResourceID(j+1))] = s.tree.FlavorName(f)
			}
		}
	}
	return out
}

// setFlavors gives tracked, pending e the flavors of its named resources
// a snapshot or an adoption names (RunningView.Flavors); none leaves the
// ledger to choose them on admission.
func (s *Scheduler) setFlavors(op string, e *entry, views []map[string]string) error {
	if views == nil {
		return nil
	}
	w := &e.w
	if len(views) != len(w.PodSets) {
		return refuse(op, w.ID, ErrInvalid, "flavors for %d pod sets, the workload has %d", len(views), len(w.PodSets))
	}
	flavors := make([][]quota.FlavorID, len(views))
	for i, m := range views {
		flavors[i] = make([]quota.FlavorID, s.tree.NumResources())
		for j := range flavors[i] {
			flavors[i][j] = quota.NoFlavor
		}
		for res, name := range m {
			r, ok := s.tree.Resource(res)
			if !ok {
				return refuse(op, w.ID, ErrInvalid, "pod set %q: resource %q has no quota", w.PodSets[i].Name, res)
			}
			f, ok := s.tree.Flavor(name)
			if !ok || !s.tree.ServesResource(e.queue, f, r) {
				return refuse(op, w.ID, ErrInvalid, "pod set %q: queue %q has no quota of %s in flavor %q",
					w.PodSets[i].Name, w.Queue, res, name)
			}
			flavors[i][r-1] = f
		}
	}
	if err := s.books.SetFlavors(w.ID, flavors); err != nil {
		panic("fleet: the ledger refused checked flavors: " + err.Error())
	}
	return nil
}

// acceptedNodes lists the nodes of the models and pools w accepts.
func (s *Scheduler) acceptedNodes(w *gang.Workload) []topology.NodeID {
	var out []topology.NodeID
	for n := range topology.NodeID(s.fleet.NumNodes()) {
		g := s.fleet.NodeGroup(n)
		if _, ok := w.Accepts(s.fleet.GroupFlavor(g)); ok && (len(w.Pools) == 0 || slices.Contains(w.Pools, s.fleet.GroupPool(g))) {
			out = append(out, n)
		}
	}
	return out
}

// specRequest is what e asks of quota before it is placed: GPUs in
// thousandths (MIG slices count once placed, by their compute slices)
// and every named resource the quota tree covers.
func (s *Scheduler) specRequest(e *entry) quota.Request {
	req := quota.Request{MilliGPUs: e.w.MilliGPUs()}
	for i := range e.w.PodSets {
		ps := &e.w.PodSets[i]
		for _, r := range ps.Resources {
			id, ok := s.tree.Resource(r.Name)
			if !ok {
				continue
			}
			j := slices.IndexFunc(req.Resources, func(x quota.Amount) bool { return x.Resource == id })
			if j < 0 {
				req.Resources = append(req.Resources, quota.Amount{Resource: id})
				j = len(req.Resources) - 1
			}
			req.Resources[j].Value += int64(ps.Count) * r.Amount
		}
	}
	return req
}

// fitsModel is the quota verdict on w, e's spec or a minimum of it,
// asking req (its specRequest) with its GPUs of model f, on tree t: in a
// queue whose resource groups split its resources, every named resource
// in the flavor Kueue's assigner gives it (quota.Tree.Assign), else every
// resource in f.
func (s *Scheduler) fitsModel(t *quota.Tree, e *entry, f quota.FlavorID, w *gang.Workload, req quota.Request) quota.Verdict {
	if len(req.Resources) == 0 || !t.SplitsResources(e.queue) {
		return t.FitsRequest(e.queue, f, req)
	}
	return s.assigned(t, e.queue, s.specSets(t, f, w))
}

// specSets is what w's pod sets ask of quota before they are placed (as
// specRequest counts it), for quota.Tree.Assign: pod sets asking GPUs
// may use only model f.
func (s *Scheduler) specSets(t *quota.Tree, f quota.FlavorID, w *gang.Workload) []quota.PodSetRequest {
	sets := make([]quota.PodSetRequest, len(w.PodSets))
	for i := range w.PodSets {
		ps := &w.PodSets[i]
		sets[i].MilliGPUs = int64(ps.Count) * ps.MilliGPUsPerPod()
		if sets[i].MilliGPUs > 0 {
			sets[i].GPUFlavors = []quota.FlavorID{f}
		}
		for _, r := range ps.Resources {
			if id, ok := t.Resource(r.Name); ok {
				sets[i].Resources = append(sets[i].Resources, quota.Amount{Resource: id, Value: int64(ps.Count) * r.Amount})
			}
		}
	}
	return sets
}

// fitsSpec is fitsModel on e's own GPU model.
func (s *Scheduler) fitsSpec(t *quota.Tree, e *entry, w *gang.Workload, req quota.Request) quota.Verdict {
	return s.fitsModel(t, e, e.flavor, w, req)
}

// fitsPlaced is the quota verdict on e placed at a, on model f, on tree
// t: what the ledger would charge it (Ledger.RequestOf, per pod set in a
// queue whose resource groups split its resources).
func (s *Scheduler) fitsPlaced(t *quota.Tree, e *entry, f quota.FlavorID, a placement.Assignment) quota.Verdict {
	req := s.books.RequestOf(a)
	if len(req.Resources) == 0 || !t.SplitsResources(e.queue) {
		return t.FitsRequest(e.queue, f, req)
	}
	return s.assigned(t, e.queue, s.books.PodSetRequests(&e.w, f, a.Pods))
}

// assigned is the verdict on the flavors Kueue's assigner gives sets in
// queue q: the failing pod set's when one gets no flavor, else whether
// every flavor they land on fits (quota.Tree.FitsCharges).
func (s *Scheduler) assigned(t *quota.Tree, q quota.NodeID, sets []quota.PodSetRequest) quota.Verdict {
	a := t.Assign(q, sets, s.assignOptions())
	if a.Failed >= 0 || a.FailedGroup >= 0 {
		return a.Why
	}
	return t.FitsCharges(q, a.Charges)
}

// assignOptions are the scheduler's settings Kueue's flavor assigner reads.
func (s *Scheduler) assignOptions() quota.AssignOptions {
	return quota.AssignOptions{FairSharing: s.cfg.Policy.FairSharing}
}

// quotaModels returns the workload to place: e's own spec when quota fits
// for every model it accepts, a copy that accepts only the models whose
// quota fits otherwise (in e's order; with the queue's whenCanBorrow at
// TryNextFlavor, only those that fit within nominal quota when any does),
// or nil when none fits (e.wait then holds the first model's verdict).
func (s *Scheduler) quotaModels(e *entry) *gang.Workload {
	models := e.w.Flavors
	if len(models) == 0 {
		models = []string{e.w.Flavor}
	}
	req := s.specRequest(e)
	var fit, nominal []string
	asked := false
	for _, m := range models {
		f, ok := s.tree.Flavor(m)
		if !ok || !s.tree.Serves(e.queue, f) {
			continue
		}
		v := s.fitsQuota(func() quota.Verdict { return s.fitsModel(s.tree, e, f, &e.w, req) })
		// The verdict recorded is the first model's that fits, else the
		// first model's.
		if !asked || v.Fits() && len(fit) == 0 {
			e.wait.quota, asked = v, true
		}
		if v.Fits() {
			fit = append(fit, m)
		}
		if v.Mode == quota.FitsNominal {
			nominal = append(nominal, m)
		}
	}
	// Kueue's whenCanBorrow: TryNextFlavor keeps to the models that fit
	// within nominal quota while any does.
	if s.tree.Fungibility(e.queue).WhenCanBorrow == quota.TryNextFlavor && len(nominal) > 0 {
		fit = nominal
	}
	switch {
	case len(fit) == 0:
		return nil
	case len(fit) == len(models):
		return &e.w
	}
	w := e.w.Clone()
	w.Flavors, w.Flavor = fit, fit[0]
	return &w
}

// tryAdmitShared admits e (see sharing) now if quota and a placement
// allow, and records the verdicts in e.wait otherwise.
func (s *Scheduler) tryAdmitShared(now time.Time, e *entry, d *Decisions) admitResult {
	w := s.quotaModels(e)
	if w == nil {
		e.wait.reason = WaitQuota
		return notAdmitted
	}
	a, err := s.placer.Place(s.fleet, w)
	if err != nil {
		e.wait.reason = WaitTopology
		var nf *placement.NoFit
		if _, xerr := s.explainer.Place(s.fleet, w); errors.As(xerr, &nf) {
			c := *nf
			e.wait.noFit = &c
		}
		return notAdmitted
	}
	a = a.Clone()
	booked := s.holdsAgainst(now, e)
	held := booked
	if s.barredFromReservation(now, e) {
		held = s.withReserve(booked)
	}
	if s.touches(a, held) {
		b, err := s.placer.PlaceAvoiding(s.fleet, w, held...)
		if err != nil && len(held) > len(booked) && e.priority > s.reserve.priority {
			// A domain reserved for a blocked gang admits work of higher
			// priority than the gang when it fits nowhere else.
			b, err = a, nil
			if s.touches(a, booked) {
				b, err = s.placer.PlaceAvoiding(s.fleet, w, booked...)
			}
		}
		if err != nil {
			e.wait.reason = WaitBooking
			if s.reserve != nil && s.touches(a, []topology.DomainID{s.reserve.domain}) {
				e.wait.reason, e.wait.behind = WaitReservation, s.reserve.id
			}
			return notAdmitted
		}
		a = b.Clone()
	}
	// Charged for the model it landed on, MIG slices at their share there.
	model := s.fleet.GroupFlavor(a.Group)
	f, ok := s.tree.Flavor(model)
	if !ok || !s.tree.Serves(e.queue, f) {
		panic(fmt.Sprintf("fleet: %s placed on model %q its queue does not serve", e.w.ID, model))
	}
	v := s.fitsQuota(func() quota.Verdict { return s.fitsPlaced(s.tree, e, f, a) })
	e.wait.quota = v
	if !v.Fits() {
		e.wait.reason = WaitQuota
		return notAdmitted
	}
	if err := s.books.SetFlavor(e.w.ID, f); err != nil {
		panic("fleet: the ledger refused the model of a pending workload: " + err.Error())
	}
	e.flavor, e.w.Flavor = f, model
	if err := s.books.Admit(e.w.ID, a, now); err != nil {
		panic(fmt.Sprintf("fleet: admitting a fresh placement: %v", err))
	}
	s.dequeue(e)
	s.admitted(now, e, d)
	return admitted
}

// podView is how the host sees one placed pod: its node and whole GPUs,
// and the GPU of its share or MIG slice.
func (s *Scheduler) podView(e *entry, p placement.Pod) PodAssignment {
	v := PodAssignment{PodSet: e.w.PodSets[p.PodSet].Name, Index: p.Index, Node: s.fleet.NodeName(p.Node), GPUs: p.GPUs}
	ps := &e.w.PodSets[p.PodSet]
	switch {
	case ps.MIG != "":
		v.GPU, v.MIG, v.Slice = p.GPU, p.MIG, p.Slice
	case ps.GPUShare > 0:
		v.GPU, v.Share = p.GPU, p.Share
	}
	return v
}

// hostPod turns a pod the host names (Adopt, Restore) into a placed pod,
// checked against its pod set: whole GPUs, the share or the MIG profile
// of the spec (a slice's share is its charge at its slice on the node's
// model), and
// the spec's resources.
func (s *Scheduler) hostPod(ps *gang.PodSet, p PodAssignment, n topology.NodeID) (placement.Pod, bool) {
	pod := placement.Pod{Index: p.Index, Node: n, GPUs: p.GPUs, Resources: ps.Resources}
	switch {
	case p.GPUs != ps.GPUsPerPod:
		return pod, false
	case ps.MIG != "":
		prof, ok := s.fleet.NodeMIGProfile(n, ps.MIG)
		if !ok || p.MIG != ps.MIG || p.Share != 0 || p.GPU < 0 || p.GPU >= s.fleet.Capacity(n) {
			return pod, false
		}
		pod.GPU, pod.MIG, pod.Slice, pod.Share = p.GPU, p.MIG, p.Slice, prof.ShareAt(p.Slice)
	case ps.GPUShare > 0:
		if p.Share != ps.GPUShare || p.MIG != "" || p.GPU < 0 || p.GPU >= s.fleet.Capacity(n) {
			return pod, false
		}
		pod.GPU, pod.Share = p.GPU, p.Share
	default:
		if p.GPU != 0 || p.Share != 0 || p.MIG != "" || p.Slice != 0 {
			return pod, false
		}
	}
	return pod, true
}
