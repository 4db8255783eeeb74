package ledger

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// What a holder takes beyond whole GPUs. Whole GPUs are interchangeable
// in the books: the fleet and its mirror count them per node (so that
// nominations can pass a victim's GPUs to a beneficiary by count), while
// a pod's share of one GPU, its MIG slice and its named resources are
// topology claims on the very GPU, slice and node placement chose. A
// holder's claims are taken with its whole GPUs and returned when it
// ends, whatever ends it (exit, kill, drain, node loss): nominations never
// claim them.

// sharedClaim is the claim of pod p beyond its whole GPUs, and false when
// it holds whole GPUs only.
func sharedClaim(f *topology.Fleet, p placement.Pod) (topology.Claim, bool, error) {
	if p.Share == 0 && p.MIG == "" && len(p.Resources) == 0 {
		return topology.Claim{}, false, nil
	}
	c := topology.Claim{Node: p.Node, GPU: p.GPU, MIG: p.MIG, Slice: p.Slice}
	if p.MIG == "" {
		c.Share = p.Share
	}
	if len(p.Resources) > 0 {
		c.Resources = make([]topology.ResourceAmount, len(p.Resources))
		for i, r := range p.Resources {
			id, ok := f.Resource(r.Name)
			if !ok {
				return c, true, &topology.NodeError{Node: f.NodeName(p.Node), Detail: "resource " + r.Name, Err: topology.ErrUnknownResource}
			}
			c.Resources[i] = topology.ResourceAmount{Resource: id, Amount: r.Amount}
		}
	}
	return c, true, nil
}

// hasClaims reports whether any pod of a holds a share, a slice or a
// named resource. It does not allocate.
func hasClaims(a placement.Assignment) bool {
	for i := range a.Pods {
		if p := &a.Pods[i]; p.Share != 0 || p.MIG != "" || len(p.Resources) > 0 {
			return true
		}
	}
	return false
}

// HasClaims reports whether the holder's pods hold shares of GPUs, MIG
// slices or named resources (its spec may ask for them, or its
// assignment holds them).
func (r *Record) HasClaims() bool { return r.W.Shared() || hasClaims(r.Assign) }

// claim takes (take) or returns the claims of pods on fleet f, all or
// nothing: on a refusal the claims already changed are put back.
func claimPods(f *topology.Fleet, pods []placement.Pod, take bool) error {
	for i, p := range pods {
		c, ok, err := sharedClaim(f, p)
		if ok && err == nil {
			if take {
				err = f.AllocateClaim(c)
			} else {
				err = f.ReleaseClaim(c)
			}
		}
		if err != nil {
			if uerr := claimPods(f, pods[:i], !take); uerr != nil {
				panic("ledger: undoing claims: " + uerr.Error())
			}
			return err
		}
	}
	for i, p := range pods {
		if i == 0 || pods[i-1].Node != p.Node {
			canon(f, p.Node)
		}
	}
	return nil
}

// place applies (take) or unapplies an assignment on the fleet and its
// mirror: first the claims (shares, slices, resources), then the whole
// GPUs per node by count, all or nothing.
func (l *Ledger) place(a placement.Assignment, nodes []placement.NodeGPUs, take bool) error {
	if !hasClaims(a) {
		return l.placeWhole(a, nodes, take)
	}
	var moved []move
	if take {
		moved = clearNamed(l.fleet, a.Pods)
	}
	if err := claimPods(l.fleet, a.Pods, take); err != nil {
		recanon(l.fleet, moved)
		return err
	}
	if err := l.placeWhole(a, nodes, take); err != nil {
		if uerr := claimPods(l.fleet, a.Pods, !take); uerr != nil {
			panic("ledger: undoing claims: " + uerr.Error())
		}
		recanon(l.fleet, moved)
		return err
	}
	// The mirror counts the same whole GPUs per node, but a search that
	// released and took them back may hold them at other indexes.
	if take {
		clearNamed(l.scratch, a.Pods)
	}
	mirror(claimPods(l.scratch, a.Pods, take))
	return nil
}

// move is a whole GPU held by count moved from one index of a node to
// another.
type move struct {
	node     topology.NodeID
	from, to int
}

// clearNamed frees the GPUs that pods name for a share or a slice but
// that some holder's whole GPUs, counted per node, happen to occupy:
// whole GPUs are interchangeable in the books, so each moves to a
// whole-free GPU of its node that no pod names. This is what lets work
// be adopted or restored in any order. It returns the moves, for undo.
func clearNamed(f *topology.Fleet, pods []placement.Pod) []move {
	var moved []move
	for i := range pods {
		p := &pods[i]
		if p.Share == 0 && p.MIG == "" || p.GPU < 0 || p.GPU >= min(f.Capacity(p.Node), 64) || !f.GPUWhole(p.Node, p.GPU) {
			continue
		}
		named := uint64(0)
		for j := range pods {
			if q := &pods[j]; q.Node == p.Node && (q.Share != 0 || q.MIG != "") && q.GPU >= 0 && q.GPU < 64 {
				named |= 1 << q.GPU
			}
		}
		spare := f.FreeMask(p.Node) &^ named
		if spare == 0 {
			continue // the claim is refused as it stands
		}
		m := move{node: p.Node, from: p.GPU, to: bits.TrailingZeros64(spare)}
		moveWhole(f, m)
		moved = append(moved, m)
	}
	return moved
}

func moveWhole(f *topology.Fleet, m move) {
	if err := f.AllocateClaim(topology.Claim{Node: m.node, Whole: 1 << m.to}); err != nil {
		panic("ledger: moving a whole GPU: " + err.Error())
	}
	if err := f.ReleaseClaim(topology.Claim{Node: m.node, Whole: 1 << m.from}); err != nil {
		panic("ledger: moving a whole GPU: " + err.Error())
	}
}

// recanon puts the nodes of moves made before a refused change back in
// canonical order (see canon): their state is what it was, and so are the
// indexes of their whole GPUs.
func recanon(f *topology.Fleet, moved []move) {
	for _, m := range moved {
		canon(f, m.node)
	}
}

// placeWhole writes the whole GPUs of nodes on the fleet and its mirror,
// checked first so that a refusal changes nothing.
func (l *Ledger) placeWhole(a placement.Assignment, nodes []placement.NodeGPUs, take bool) error {
	for _, x := range nodes {
		if err := l.checkWhole(x, take); err != nil {
			return err
		}
	}
	for _, x := range nodes {
		if err := l.count(x.Node, x.GPUs, take); err != nil {
			panic("ledger: whole GPUs checked free were refused: " + err.Error())
		}
	}
	return nil
}

func (l *Ledger) checkWhole(x placement.NodeGPUs, take bool) error {
	f := l.fleet
	switch {
	case x.Node < 0 || int(x.Node) >= f.NumNodes():
		return &topology.NodeError{Node: fmt.Sprintf("#%d", x.Node), Err: topology.ErrUnknownNode}
	case x.GPUs <= 0:
		return &topology.NodeError{Node: f.NodeName(x.Node), Requested: x.GPUs, Err: topology.ErrBadAmount}
	case take && f.Health(x.Node).Gone():
		return &topology.NodeError{Node: f.NodeName(x.Node), Err: topology.ErrNodeDown}
	case take && x.GPUs > f.Free(x.Node):
		return &topology.NodeError{Node: f.NodeName(x.Node), Requested: x.GPUs, Available: f.Free(x.Node), Err: topology.ErrOverAlloc}
	case !take && x.GPUs > f.WholeHeld(x.Node):
		return &topology.NodeError{Node: f.NodeName(x.Node), Requested: x.GPUs, Available: f.WholeHeld(x.Node), Err: topology.ErrOverRelease}
	}
	return nil
}

// releaseClaims returns a leaving holder's claims on the fleet and its
// mirror; they cannot be refused while the books are right.
func (l *Ledger) releaseClaims(r *Record) {
	if !hasClaims(r.Assign) {
		return
	}
	if err := claimPods(l.fleet, r.Assign.Pods, false); err != nil {
		panic(fmt.Sprintf("ledger: claims of %q lost: %v", r.W.ID, err))
	}
	mirror(claimPods(l.scratch, r.Assign.Pods, false))
}

// requestOf is what a holder on a is charged in quota: its GPUs in
// thousandths (whole GPUs, shares, and MIG slices by the compute slices
// they take on the model they landed on, so that one GPU's slices are
// never charged more than the GPU) and every named resource the quota
// tree covers, summed over its pods. Resources the tree does not name are
// not limited by quota. It does not allocate for work that asks for whole
// GPUs only.
func (l *Ledger) requestOf(a placement.Assignment) quota.Request {
	var req quota.Request
	for i := range a.Pods {
		req.MilliGPUs += podMilli(l.fleet, &a.Pods[i])
	}
	for i := range a.Pods {
		for _, res := range a.Pods[i].Resources {
			id, ok := l.tree.Resource(res.Name)
			if !ok {
				continue
			}
			req.Resources = addAmount(req.Resources, id, res.Amount)
		}
	}
	slices.SortFunc(req.Resources, func(x, y quota.Amount) int { return int(x.Resource) - int(y.Resource) })
	return req
}

// podMilli is what pod p is charged of GPUs, in thousandths. A MIG
// slice is charged what the fleet books on its GPU for it
// (topology.MIGProfile.ShareAt), whatever share the pod carries.
func podMilli(f *topology.Fleet, p *placement.Pod) int64 {
	if p.MIG == "" {
		return p.MilliGPUs()
	}
	m := int64(p.GPUs) * topology.MilliGPU
	if prof, ok := f.NodeMIGProfile(p.Node, p.MIG); ok {
		return m + int64(prof.ShareAt(p.Slice))
	}
	return m + int64(p.Share)
}

// RequestOf is what a workload placed on a is charged in quota (see
// Admit), for a caller that checks quota before admitting.
func (l *Ledger) RequestOf(a placement.Assignment) quota.Request { return l.requestOf(a) }

// Charged is what the holder (or beneficiary) is charged in quota now.
func (r *Record) Charged() quota.Request {
	c := r.charged
	c.Resources = slices.Clone(c.Resources)
	return c
}

// wholeRequest is the charge of a workload of whole GPUs only.
func wholeRequest(gpus int) quota.Request { return quota.Request{MilliGPUs: int64(gpus) * 1000} }

// SetFlavor changes the flavor a pending workload without a nomination
// is charged for: a workload that accepts several GPU models is charged
// for the one it lands on.
func (l *Ledger) SetFlavor(id string, f quota.FlavorID) error {
	l.version++
	r, ok := l.recs[id]
	switch {
	case !ok || r.State != gang.Pending || l.noms[id] != nil:
		return fmt.Errorf("ledger: set the flavor of %q: not a pending workload without a nomination", id)
	case f < 0 || int(f) >= l.tree.NumFlavors() || !l.tree.Serves(r.Queue, f):
		return fmt.Errorf("ledger: set the flavor of %q: its queue does not serve flavor %d", id, f)
	}
	r.Flavor = f
	return nil
}

// podNodes lists, in order and once each, the nodes of r's pods.
func (r *Record) podNodes() []topology.NodeID {
	out := make([]topology.NodeID, 0, len(r.Assign.Pods))
	for i := range r.Assign.Pods {
		out = append(out, r.Assign.Pods[i].Node)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// canon puts the whole GPUs held by count on node n on its lowest GPUs
// that carry no share or slice. Which indexes they sit on is history (a
// restart, or the order in which holders came and went, puts them
// elsewhere), not state: kept canonical, the GPU a share or a slice is
// given depends on the node's state alone, so a restored scheduler names
// the same GPUs as one that never stopped.
func canon(f *topology.Fleet, n topology.NodeID) {
	var free, whole uint64
	for i := range min(f.Capacity(n), 64) {
		switch used, sl := f.GPUUsed(n, i); {
		case f.GPUWhole(n, i):
			whole |= 1 << i
		case used == 0 && sl == 0:
			free |= 1 << i
		}
	}
	want, all := uint64(0), free|whole
	for range bits.OnesCount64(whole) {
		b := all & -all
		want |= b
		all &^= b
	}
	for from, to := whole&^want, want&^whole; from != 0; from, to = from&(from-1), to&(to-1) {
		moveWhole(f, move{node: n, from: bits.TrailingZeros64(from), to: bits.TrailingZeros64(to)})
	}
}
