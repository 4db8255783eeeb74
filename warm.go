package fleet

import (
	"slices"
	"strings"
	"time"

	"github.com/fleetsched/fleet/topology"
)

// warmBook is what the host reported of model weights present on nodes.
// Placement reads it as a placement.Warm: one-pod workloads naming their
// model (gang.Workload.Model) go to warm nodes first, and the victim
// search frees warm nodes first for them.
type warmBook struct {
	byNode  map[topology.NodeID][]string // sorted, unique models
	byModel map[string][]topology.NodeID // sorted node IDs
}

func newWarmBook() *warmBook {
	return &warmBook{byNode: map[topology.NodeID][]string{}, byModel: map[string][]topology.NodeID{}}
}

// WarmNodes implements placement.Warm.
func (b *warmBook) WarmNodes(model string) []topology.NodeID { return b.byModel[model] }

// set replaces node n's models with models (sorted, unique).
func (b *warmBook) set(n topology.NodeID, models []string) {
	for _, m := range b.byNode[n] {
		ns := b.byModel[m]
		if i, ok := slices.BinarySearch(ns, n); ok {
			ns = slices.Delete(ns, i, i+1)
		}
		if len(ns) == 0 {
			delete(b.byModel, m)
		} else {
			b.byModel[m] = ns
		}
	}
	if len(models) == 0 {
		delete(b.byNode, n)
		return
	}
	b.byNode[n] = models
	for _, m := range models {
		ns := b.byModel[m]
		i, _ := slices.BinarySearch(ns, n)
		b.byModel[m] = slices.Insert(ns, i, n)
	}
}

// SetWarm reports the models whose weights are present on node (what a
// node agent or image cache sees), replacing what was reported for it
// before; an empty list clears it. Inference pods naming their model
// (gang.Workload.Model) are placed on such nodes when one has room, and a
// victim search for them frees such nodes first. The report is kept by
// Snapshot and Restore and recorded by a Journal. It is refused with
// ErrUnknownNode for an unknown node and ErrInvalid for an empty model
// name; duplicates count once.
func (s *Scheduler) SetWarm(now time.Time, node string, models []string) error {
	if err := s.tick("warm", now); err != nil {
		return err
	}
	n, ok := s.fleet.Node(node)
	if !ok {
		return refuse("warm", "", ErrUnknownNode, "%q", node)
	}
	for _, m := range models {
		if m == "" {
			return refuse("warm", "", ErrInvalid, "node %q: an empty model name", node)
		}
	}
	s.advance(now)
	s.warm.set(n, slices.Compact(slices.Sorted(slices.Values(models))))
	return nil
}

// Warm returns the models reported present on node, sorted; nil for a
// node with none or an unknown node.
func (s *Scheduler) Warm(node string) []string {
	n, ok := s.fleet.Node(node)
	if !ok {
		return nil
	}
	return slices.Clone(s.warm.byNode[n])
}

// warmViews lists the warm nodes for a Snapshot, by node name.
func (s *Scheduler) warmViews() []WarmNode {
	var out []WarmNode
	for n, ms := range s.warm.byNode {
		out = append(out, WarmNode{Node: s.fleet.NodeName(n), Models: slices.Clone(ms)})
	}
	slices.SortFunc(out, func(a, b WarmNode) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// restoreWarm brings back a snapshot's warm nodes.
func (s *Scheduler) restoreWarm(snap Snapshot) error {
	for _, v := range snap.Warm {
		n, ok := s.fleet.Node(v.Node)
		if !ok {
			return refuse("restore", "", ErrUnknownNode, "warm node %q", v.Node)
		}
		if slices.Contains(v.Models, "") {
			return refuse("restore", "", ErrInvalid, "warm node %q: an empty model name", v.Node)
		}
		s.warm.set(n, slices.Compact(slices.Sorted(slices.Values(v.Models))))
	}
	return nil
}

// WarmNode is one node's models with weights present, as SetWarm
// reported them.
type WarmNode struct {
	Node   string   // the node's name
	Models []string // the models whose weights it holds, in order
}

// SetWarm records and forwards Scheduler.SetWarm.
func (j *Journal) SetWarm(now time.Time, node string, models []string) error {
	return j.call(Call{Op: "warm", Time: now, Node: node, Models: slices.Clone(models)})
}
