package ledger

import (
	"fmt"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Elastic pod sets (gang.PodSet.MinCount < Count) run at any size from
// their minimum to their count. The ledger owns the running size: a
// record's Size says how many pods of each pod set it is charged for, and
// quota usage, allocations and the victim index follow it.
//
// A shrink splits pods off a running workload: each removed pod becomes a
// record of its own (a "split", named SplitID(parent, pod set, index)),
// holding that pod's GPUs and quota, which then drains under the ordinary
// drain contract (deadline, kill, claims for the beneficiary). The parent
// runs on at the smaller size. A grow adds pods back, up to the count.

// Size returns the pods of each pod set r is charged for: the running
// size of an admitted workload, the nominated size of a beneficiary, the
// spec's counts otherwise. The caller must not change it.
func (r *Record) Size() []int {
	if r.size != nil {
		return r.size
	}
	out := make([]int, len(r.W.PodSets))
	for i, ps := range r.W.PodSets {
		out[i] = ps.Count
	}
	return out
}

// sizedGPUs is the GPUs of r at its size.
func (r *Record) sizedGPUs() int {
	if r.size == nil {
		return r.W.GPUs()
	}
	g := 0
	for i, ps := range r.W.PodSets {
		g += r.size[i] * ps.GPUsPerPod
	}
	return g
}

// Shrunk reports whether r runs below the count of some pod set.
func (r *Record) Shrunk() bool {
	for i, ps := range r.W.PodSets {
		if r.size != nil && r.size[i] < ps.Count {
			return true
		}
	}
	return false
}

// Elastic reports whether some pod set of w may run below its count on
// whole GPUs, the pods a shrink or a grow handles.
func Elastic(w *gang.Workload) bool {
	for _, ps := range w.PodSets {
		if ps.Min() < ps.Count && elasticPodSet(ps) {
			return true
		}
	}
	return false
}

func elasticPodSet(ps gang.PodSet) bool {
	return ps.GPUsPerPod > 0 && !ps.Shared() && len(ps.Resources) == 0
}

// sizeOf returns the pods of each pod set in pods, and whether that is a
// size w may run at: each pod with its pod set's GPUs, between each pod
// set's minimum and count, and below the count only for elastic pod sets.
func SizeOf(w *gang.Workload, pods []placement.Pod) ([]int, bool) {
	size := make([]int, len(w.PodSets))
	for _, p := range pods {
		if p.PodSet < 0 || p.PodSet >= len(size) || p.GPUs != w.PodSets[p.PodSet].GPUsPerPod {
			return nil, false
		}
		size[p.PodSet]++
	}
	for i, ps := range w.PodSets {
		lo := ps.Count
		if elasticPodSet(ps) {
			lo = ps.Min()
		}
		if size[i] < lo || size[i] > ps.Count {
			return nil, false
		}
	}
	return size, true
}

// setSize sets r's size from the pods it will hold (lost pods included):
// nil when that is the spec's full size, so non-elastic work keeps none.
// The ledger keeps the records with a size apart, so that a cycle finds
// what may grow in O(those).
func (l *Ledger) setSize(r *Record, size []int) {
	r.size = nil
	l.sized.remove(r.W.ID)
	for i, ps := range r.W.PodSets {
		if size != nil && size[i] != ps.Count {
			r.size = size
			l.sized.add(r)
			return
		}
	}
}

// SplitID names the record a shrink splits pod index of pod set podSet
// off parent into.
func SplitID(parent, podSet string, index int) string {
	return fmt.Sprintf("%s#%s-%d", parent, podSet, index)
}

// Shrinkable lists the pods of a running workload's elastic pod sets, in
// the order it prefers to give them up (last pod set first, highest index
// first), and how many of each pod set it must keep: nothing while it
// drains, waits for a lost pod, or runs every elastic pod set at its
// minimum.
func (r *Record) Shrinkable() ([]placement.Pod, []int) {
	if r.State != gang.Admitted || len(r.Lost) > 0 || !Elastic(r.W) {
		return nil, nil
	}
	size := r.Size()
	keep := make([]int, len(r.W.PodSets))
	above := false
	for i, ps := range r.W.PodSets {
		if elasticPodSet(ps) {
			keep[i] = ps.Min()
			above = above || size[i] > ps.Min()
		}
	}
	if !above {
		return nil, nil
	}
	var out []placement.Pod
	for _, p := range r.Assign.Pods {
		if elasticPodSet(r.W.PodSets[p.PodSet]) {
			out = append(out, p)
		}
	}
	// Highest index first, whatever order the pods were placed, replaced
	// or adopted in: a host rebuilding the books lists them as it likes.
	slices.SortFunc(out, func(a, b placement.Pod) int {
		if a.PodSet != b.PodSet {
			return b.PodSet - a.PodSet
		}
		return b.Index - a.Index
	})
	return out, keep
}

// Split moves pod p of running workload parent into a new record for
// child, the spec the caller built for it (one pod set of one pod, as
// SplitID names it): the child holds that pod's GPUs and is charged its
// quota, the parent runs one pod smaller. The child is Admitted, ready
// to be drained as a victim. A parent waiting for a lost pod may be split
// too (an adoption rebuilds a workload that lost a node while giving up
// pods); its lost pods count toward its size and quota. Split is refused,
// changing nothing, when the parent is not admitted, does not run p, or
// would go below its pod set's minimum.
func (l *Ledger) Split(parent string, p placement.Pod, child *gang.Workload) (*Record, error) {
	l.version++
	r, ok := l.recs[parent]
	switch {
	case !ok || r.State != gang.Admitted:
		return nil, fmt.Errorf("ledger: shrink %q: not an admitted workload", parent)
	case r.HasClaims():
		return nil, fmt.Errorf("ledger: shrink %q: pods with GPU shares, MIG slices or named resources do not shrink", parent)
	case l.recs[child.ID] != nil:
		return nil, fmt.Errorf("ledger: shrink %q: %q already tracked", parent, child.ID)
	case len(child.PodSets) != 1 || child.PodSets[0].Count != 1 || child.GPUs() != p.GPUs:
		return nil, fmt.Errorf("ledger: shrink %q: the split spec is not one pod of %d GPUs", parent, p.GPUs)
	}
	i := slices.IndexFunc(r.Assign.Pods, func(x placement.Pod) bool { return x.PodSet == p.PodSet && x.Index == p.Index })
	if i < 0 || r.Assign.Pods[i].Node != p.Node || r.Assign.Pods[i].GPUs != p.GPUs {
		return nil, fmt.Errorf("ledger: shrink %q: it runs no pod %d/%d on node %d", parent, p.PodSet, p.Index, p.Node)
	}
	left := slices.Delete(slices.Clone(r.Assign.Pods), i, i+1)
	size, ok := SizeOf(r.W, withLost(left, r.Lost))
	if !ok {
		return nil, fmt.Errorf("ledger: shrink %q: below the minimum of pod set %d", parent, p.PodSet)
	}
	c := &Record{W: child, Queue: r.Queue, Flavor: r.Flavor, Policy: r.Policy, State: gang.Pending, Submitted: r.Submitted}
	l.recs[child.ID] = c
	child.Drain.LastCheckpoint = r.W.Drain.LastCheckpoint

	l.resize(r, left, size)

	pod := p
	pod.PodSet, pod.Index = 0, 0
	a := placement.Assignment{Workload: child.ID, Group: r.Assign.Group, Domain: r.Assign.Domain, Level: r.Assign.Level,
		Pods: []placement.Pod{pod}}
	a.Span = l.span(a)
	c.charged = l.requestOf(a) // the parent's charge moves with the pod
	l.hold(c, a, a.NodeGPUs(), r.Started)
	c.Borrowing = r.Borrowing
	c.splitOf = parent
	return c, nil
}

// withLost is pods and the lost pods, which count in a holder's size and
// quota though they hold no GPUs.
func withLost(pods []placement.Pod, lost []LostPod) []placement.Pod {
	if len(lost) == 0 {
		return pods
	}
	all := slices.Clone(pods)
	for _, x := range lost {
		all = append(all, x.Pod)
	}
	return all
}

// Unsplit folds a split that was never drained back into its parent, the
// undo of Split.
func (l *Ledger) Unsplit(child string, p placement.Pod) error {
	l.version++
	c, ok := l.recs[child]
	if !ok || c.State != gang.Admitted || c.splitOf == "" {
		return fmt.Errorf("ledger: unsplit %q: not an admitted split", child)
	}
	r, ok := l.recs[c.splitOf]
	if !ok || r.State != gang.Admitted {
		return fmt.Errorf("ledger: unsplit %q: its parent is not admitted", child)
	}
	l.holders.Delete(c)
	if c.HasClaims() {
		l.claimHolders--
	}
	l.listNodes(c, -1)
	l.indexRemove(c)
	delete(l.recs, child)

	pods := append(slices.Clone(r.Assign.Pods), p)
	sortPods(pods)
	size, _ := SizeOf(r.W, withLost(pods, r.Lost))
	l.resize(r, pods, size)
	return nil
}

// SplitOf names the workload a split record was cut from ("" for any
// other).
func (r *Record) SplitOf() string { return r.splitOf }

// RestoreSplit marks a restored holder as split off parent.
func (l *Ledger) RestoreSplit(id, parent string) {
	l.version++
	if r, ok := l.recs[id]; ok {
		r.splitOf = parent
	}
}

// Grow starts more pods of a running elastic workload: their GPUs are
// allocated and their quota charged, all or nothing. Each pod names its
// pod set, a free index (one the workload and its splits do not run) and
// a healthy node with the GPUs free.
func (l *Ledger) Grow(id string, pods []placement.Pod) error {
	l.version++
	r, ok := l.recs[id]
	if !ok || r.State != gang.Admitted || len(r.Lost) > 0 {
		return fmt.Errorf("ledger: grow %q: not an admitted workload", id)
	}
	all := slices.Clone(r.Assign.Pods)
	gpus := 0
	for _, p := range pods {
		if p.PodSet < 0 || p.PodSet >= len(r.W.PodSets) || p.Index < 0 || p.Index >= r.W.PodSets[p.PodSet].Count {
			return fmt.Errorf("ledger: grow %q: no pod %d/%d in its spec", id, p.PodSet, p.Index)
		}
		ps := r.W.PodSets[p.PodSet]
		if p.GPUs != ps.GPUsPerPod || !elasticPodSet(ps) {
			return fmt.Errorf("ledger: grow %q: pod %d/%d is not a whole-GPU pod of an elastic pod set", id, p.PodSet, p.Index)
		}
		if slices.ContainsFunc(all, func(x placement.Pod) bool { return x.PodSet == p.PodSet && x.Index == p.Index }) ||
			l.recs[SplitID(id, ps.Name, p.Index)] != nil {
			return fmt.Errorf("ledger: grow %q: pod %d/%d already runs", id, p.PodSet, p.Index)
		}
		all = append(all, p)
		gpus += p.GPUs
	}
	size, ok := SizeOf(r.W, all)
	if !ok {
		return fmt.Errorf("ledger: grow %q: beyond a pod set's count", id)
	}
	var done []placement.NodeGPUs
	undo := func() {
		for _, x := range done {
			mirror(l.release(x.Node, x.GPUs))
		}
	}
	for _, x := range (placement.Assignment{Pods: pods}).NodeGPUs() {
		if int(x.Node) < 0 || int(x.Node) >= l.fleet.NumNodes() || l.fleet.Health(x.Node) != topology.Healthy {
			undo()
			return fmt.Errorf("ledger: grow %q: node %d is not healthy", id, x.Node)
		}
		if err := l.allocate(x.Node, x.GPUs); err != nil {
			undo()
			return fmt.Errorf("ledger: grow %q: %w", id, err)
		}
		done = append(done, x)
	}
	if err := l.tree.AddUsage(r.Queue, r.Flavor, int64(gpus)); err != nil {
		undo()
		return fmt.Errorf("ledger: grow %q: %w", id, err)
	}
	sortPods(all)
	l.resize(r, all, size)
	return nil
}

// GrowIndex returns the lowest index of pod set ps that neither r nor a
// split of it runs, and false when every index does.
func (l *Ledger) GrowIndex(r *Record, ps int) (int, bool) {
	name := r.W.PodSets[ps].Name
	for i := range r.W.PodSets[ps].Count {
		if slices.ContainsFunc(r.Assign.Pods, func(x placement.Pod) bool { return x.PodSet == ps && x.Index == i }) ||
			l.recs[SplitID(r.W.ID, name, i)] != nil {
			continue
		}
		return i, true
	}
	return 0, false
}

// Shrunken lists, in ID order, the admitted workloads running below the
// count of some pod set: those a grow may add pods to.
func (l *Ledger) Shrunken() []*Record { return l.AppendShrunken(nil) }

// AppendShrunken appends what Shrunken lists to dst.
func (l *Ledger) AppendShrunken(dst []*Record) []*Record {
	for _, r := range l.sized {
		if r.State == gang.Admitted && len(r.Lost) == 0 {
			dst = append(dst, r)
		}
	}
	return dst
}

func sortPods(pods []placement.Pod) {
	slices.SortFunc(pods, func(a, b placement.Pod) int {
		if a.PodSet != b.PodSet {
			return a.PodSet - b.PodSet
		}
		return a.Index - b.Index
	})
}

// checkSize is CheckInvariants' part for elastic work: a holder's size
// counts its pods (lost ones included) and lies between each pod set's
// minimum and count; a split holds one pod and names its parent.
func (r *Record) checkSize() error {
	pods := slices.Clone(r.Assign.Pods)
	for _, x := range r.Lost {
		pods = append(pods, x.Pod)
	}
	size, ok := SizeOf(r.W, pods)
	if !ok {
		return fmt.Errorf("%s: runs %d pods, outside its pod sets' bounds", r.W.ID, len(pods))
	}
	if !slices.Equal(size, r.Size()) {
		return fmt.Errorf("%s: runs %v pods per pod set, its size says %v", r.W.ID, size, r.Size())
	}
	if r.splitOf != "" && len(pods) != 1 {
		return fmt.Errorf("%s: a split of %s with %d pods", r.W.ID, r.splitOf, len(pods))
	}
	return nil
}

// NumShrunk is how many workloads are charged below their full size
// (running, or nominated for their minimum).
func (l *Ledger) NumShrunk() int { return len(l.sized) }

// checkSized: the records kept apart for their size are exactly those
// charged below their spec's size.
func (l *Ledger) checkSized() error {
	if !l.sized.ordered() {
		return fmt.Errorf("the sized records are out of ID order")
	}
	for _, r := range l.sized {
		if id := r.W.ID; l.recs[id] != r || r.size == nil {
			return fmt.Errorf("%s: listed as sized, its size is %v", id, r.size)
		}
	}
	for id, r := range l.recs {
		if r.size != nil && l.sized.get(id) == nil {
			return fmt.Errorf("%s: sized %v, not listed", id, r.size)
		}
	}
	return nil
}

// resize makes pods, at size, the pods a running elastic workload holds:
// its nodes, span, quota charge, node lists and index entry follow.
func (l *Ledger) resize(r *Record, pods []placement.Pod, size []int) {
	l.unlistPromised(r)
	l.listNodes(r, -1)
	r.Assign.Pods = pods
	r.Nodes = r.Assign.NodeGPUs()
	r.Assign.Span = l.span(r.Assign)
	l.setSize(r, size)
	charged := r.Assign
	charged.Pods = withLost(pods, r.Lost) // lost pods keep their quota
	r.charged = l.requestOf(charged)
	l.listNodes(r, 1)
	l.listPromised(r)
	l.indexUpdate(r)
}
