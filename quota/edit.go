package quota

import (
	"fmt"
	"slices"
)

// setSettings records node n's weight, preemption rules and queueing
// strategy from its spec.
func (t *Tree) setSettings(n NodeID, spec NodeSpec) {
	t.changes++
	t.weight[n], t.weightSet[n] = 1, false
	if spec.Weight != nil {
		t.weight[n], t.weightSet[n] = *spec.Weight, true
	}
	r := spec.Preemption
	if th := r.BorrowWithinCohort.MaxPriorityThreshold; th != nil {
		v := *th // the caller keeps its pointer; the tree keeps its own value
		r.BorrowWithinCohort.MaxPriorityThreshold = &v
	}
	t.rules[n] = r
	t.strategy[n] = spec.QueueingStrategy
	t.fungibility[n] = spec.FlavorFungibility
}

// SetNode replaces, as one edit, the settings of the cohort or queue
// named spec.Name: its quota of every flavor (nominal, borrowing and
// lending limits, resources), its resource groups, its fair-sharing
// weight, and for a queue its preemption rules, queueing strategy and
// flavor fungibility. spec is the node as Spec()
// lists it, edited; Parent and Kind must be the node's own.
//
// The edit is checked whole by New's rules (a *SpecError) before anything
// changes, and refused, leaving the tree unchanged, when it names an
// unknown node (ErrUnknownNode), changes the parent or kind
// (ErrShapeChange), or leaves out a flavor or resource the node serves
// (ErrFlavorRemoved: set its nominal quota to 0 instead; a queue's
// workloads are charged for its flavors). Flavors it adds start to be
// served.
//
// Usage is kept, as with SetQuota: a queue left above its new quota
// becomes a borrower, whose excess is reclaimable by preemption; nothing
// is evicted by the edit itself.
func (t *Tree) SetNode(spec NodeSpec) error {
	n, ok := t.s.nodeID[spec.Name]
	if !ok {
		return &SpecError{Node: spec.Name, Field: "name", Err: ErrUnknownNode}
	}
	parent := ""
	if p := t.s.parent[n]; p != None {
		parent = t.s.names[p]
	}
	switch {
	case spec.Parent != parent:
		return &SpecError{Node: spec.Name, Field: "parent", Detail: fmt.Sprintf("parent %q, the tree has %q", spec.Parent, parent), Err: ErrShapeChange}
	case spec.Kind != t.s.kind[n]:
		return &SpecError{Node: spec.Name, Field: "kind", Detail: fmt.Sprintf("kind %v, the tree has %v", spec.Kind, t.s.kind[n]), Err: ErrShapeChange}
	}
	if err := checkNode(spec, t.s); err != nil {
		return err
	}
	listed := make([]FlavorID, 0, len(spec.Quotas))
	for _, q := range spec.Quotas {
		listed = append(listed, t.s.flavorID[q.Flavor]) // checkNode knows every flavor
	}
	for _, f := range t.order[n] {
		i := slices.Index(listed, f)
		if i < 0 {
			return &SpecError{Node: spec.Name, Flavor: t.s.flavors[f], Field: "quotas", Detail: "set its nominal to 0 instead", Err: ErrFlavorRemoved}
		}
		for r := range ResourceID(len(t.s.resources)) {
			if !t.served[t.at(n, t.s.col(int(f), r+1))] {
				continue
			}
			name := t.s.resources[r]
			if !slices.ContainsFunc(spec.Quotas[i].Resources, func(rq ResourceQuota) bool { return rq.Name == name }) {
				return &SpecError{Node: spec.Name, Flavor: t.s.flavors[f], Field: "quotas.resources",
					Detail: fmt.Sprintf("resource %q: set its nominal to 0 instead", name), Err: ErrFlavorRemoved}
			}
		}
	}
	// SetQuota checks the rest (roots' limits, sums); a clone takes the
	// edits, so a refusal of its last flavor leaves t as it was.
	c := t.Clone()
	gs, _ := resolveGroups(spec, t.s) // checkNode refused bad ones
	c.ownGroups()
	c.groups.declared[n] = nil // SetQuota adds flavors to the implicit group
	for _, q := range spec.Quotas {
		if err := c.SetQuota(n, q); err != nil {
			return err
		}
	}
	c.order[n] = listed
	c.groups.declared[n] = gs
	c.refreshImplicit(n)
	c.setSettings(n, spec)
	c.copyInto(t)
	return nil
}
