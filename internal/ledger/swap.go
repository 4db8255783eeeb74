package ledger

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// LostPod is a pod of a running gang whose node went down, waiting for a
// replacement node (hot-swap).
type LostPod struct {
	Pod   placement.Pod // as it was placed, on the lost node
	Since time.Time
}

// LosePods records that node n went down under a holder that survives
// the loss of a node: its pods there are lost, their GPUs released, and
// the gang keeps running (and keeps its quota) while it waits for a
// replacement. It returns the pods lost. It is refused, changing
// nothing, for a holder that did not declare it survives the loss of a
// node.
func (l *Ledger) LosePods(id string, n topology.NodeID, now time.Time) ([]LostPod, error) {
	l.version++
	r, ok := l.recs[id]
	if !ok || !r.State.HoldsGPUs() || !r.OnNode(n) {
		return nil, fmt.Errorf("ledger: %q has no pod on node %d", id, n)
	}
	if !r.W.Drain.SurvivesNodeLoss {
		return nil, fmt.Errorf("ledger: %q did not declare it survives the loss of a node", id)
	}
	var lost []LostPod
	kept := r.Assign.Pods[:0:0]
	for _, p := range r.Assign.Pods {
		if p.Node == n {
			lost = append(lost, LostPod{Pod: p, Since: now})
		} else {
			kept = append(kept, p)
		}
	}
	gpus := 0
	for _, x := range lost {
		gpus += x.Pod.GPUs
	}
	// A victim's GPUs promised on the lost node cannot pass to anyone.
	if r.Drain != nil {
		r.Drain.claims = slices.DeleteFunc(r.Drain.claims, func(c claim) bool { return c.node == n })
	}
	if err := l.release(n, gpus); err != nil {
		panic(fmt.Sprintf("ledger: GPUs of %q on a lost node: %v", id, err))
	}
	l.unlistPromised(r)
	l.listNodes(r, -1)
	r.Assign.Pods = kept
	r.Nodes = r.Assign.NodeGPUs()
	l.listNodes(r, 1)
	l.listPromised(r) // a promised victim is listed under the nodes it holds
	r.Assign.Span = l.span(r.Assign)
	r.Lost = append(r.Lost, lost...)
	l.degraded[id] = r
	l.indexUpdate(r)
	return lost, nil
}

// Replace places a lost pod of a holder on node n: its GPUs there are
// allocated now. It is refused when the pod is not lost or the GPUs are
// not free.
func (l *Ledger) Replace(id string, pod placement.Pod, n topology.NodeID) (placement.Pod, error) {
	l.version++
	r, ok := l.recs[id]
	if !ok || !r.State.HoldsGPUs() {
		return placement.Pod{}, fmt.Errorf("ledger: replace a pod of %q: not running", id)
	}
	i := slices.IndexFunc(r.Lost, func(x LostPod) bool { return x.Pod.PodSet == pod.PodSet && x.Pod.Index == pod.Index })
	if i < 0 {
		return placement.Pod{}, fmt.Errorf("ledger: replace pod %d/%d of %q: not lost", pod.PodSet, pod.Index, id)
	}
	if l.fleet.Health(n) != topology.Healthy {
		return placement.Pod{}, fmt.Errorf("ledger: replace a pod of %q on node %d: not healthy", id, n)
	}
	if err := l.allocate(n, pod.GPUs); err != nil {
		return placement.Pod{}, err
	}
	p := r.Lost[i].Pod
	p.Node, p.GPU, p.GPUMask = n, 0, 0
	r.Lost = slices.Delete(r.Lost, i, i+1)
	if len(r.Lost) == 0 {
		delete(l.degraded, id)
	}
	r.Assign.Pods = append(r.Assign.Pods, p)
	slices.SortFunc(r.Assign.Pods, func(a, b placement.Pod) int {
		if a.PodSet != b.PodSet {
			return a.PodSet - b.PodSet
		}
		return a.Index - b.Index
	})
	l.unlistPromised(r)
	l.listNodes(r, -1)
	r.Nodes = r.Assign.NodeGPUs()
	l.listNodes(r, 1)
	l.listPromised(r) // a promised victim is listed under the nodes it holds
	r.Assign.Span = l.span(r.Assign)
	l.indexUpdate(r)
	return p, nil
}

// span is the lowest level holding every pod of a (the node level for
// none).
func (l *Ledger) span(a placement.Assignment) topology.Level {
	nodes := make([]topology.NodeID, len(a.Pods))
	for i, p := range a.Pods {
		nodes[i] = p.Node
	}
	if len(nodes) == 0 {
		return topology.Level(l.fleet.Depth())
	}
	return l.fleet.Span(nodes)
}

// Degraded lists, in ID order, the holders waiting for replacement pods.
// It costs O(degraded), nothing when no gang waits.
func (l *Ledger) Degraded() []*Record {
	if len(l.degraded) == 0 {
		return nil
	}
	out := make([]*Record, 0, len(l.degraded))
	for _, r := range l.degraded {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Record) int { return compareString(a.W.ID, b.W.ID) })
	return out
}

// lostGPUs is the GPUs of a holder's pods waiting for replacement.
func (r *Record) lostGPUs() int {
	g := 0
	for _, x := range r.Lost {
		g += x.Pod.GPUs
	}
	return g
}

// DrainForSwap drains holder id, reason hot-swap, so that its GPUs can
// take a lost pod of gang b: b is its beneficiary, but nothing is
// promised (the replacement takes the GPUs when they are free), so the
// victim stays visible to searches as draining work. A holder already
// draining keeps its drain.
func (l *Ledger) DrainForSwap(id, b string, now, deadline time.Time) (*Record, error) {
	l.version++
	g, ok := l.recs[b]
	if !ok || len(g.Lost) == 0 || id == b {
		return nil, fmt.Errorf("ledger: drain %q for %q: no pod of it waits for a replacement", id, b)
	}
	if r, ok := l.recs[id]; ok && r.State == gang.Draining {
		return r, nil
	}
	r, err := l.DrainFor(id, now, deadline, gang.DrainHotSwap)
	if err != nil {
		return nil, err
	}
	r.Drain.Beneficiaries = []string{b}
	return r, nil
}

// SwapDraining is the GPUs of holders draining (reason hot-swap) for
// gang b's lost pods: O(the draining holders).
func (l *Ledger) SwapDraining(b string) int {
	g := 0
	for _, r := range l.draining {
		if r.Drain.Reason == gang.DrainHotSwap && slices.Contains(r.Drain.Beneficiaries, b) {
			for _, x := range r.Nodes {
				g += x.GPUs
			}
		}
	}
	return g
}
