package quota

import (
	"fmt"
	"slices"
)

// ResourceGroup is one of a node's resource groups, as in a Kueue
// ClusterQueue's (or Cohort's) spec.resourceGroups: the resources it
// covers and the flavors that provide them, in the order a workload tries
// them. Every pod set gets one flavor per group for all the group's
// resources it asks for; different groups may give it different flavors
// (GPUs of an H100 flavor, cpu and memory of a "default" flavor).
type ResourceGroup struct {
	// GPUs says whether the group covers GPUs. At most one group of a
	// node covers them; its flavors are GPU models, which decide the
	// nodes a pod set runs on.
	GPUs bool `json:"gpus,omitempty"`
	// Resources names the other resources it covers, each in
	// Spec.Resources and in one group of the node at most.
	Resources []string `json:"resources,omitempty"`
	// Flavors lists the group's flavors in the order they are tried; each
	// has an entry in the node's Quotas and belongs to one group only.
	Flavors []string `json:"flavors"`
}

// group is a ResourceGroup resolved to IDs.
type group struct {
	gpus      bool
	resources []ResourceID // named resources only, in spec order
	flavors   []FlavorID
}

func (g group) covers(r ResourceID) bool {
	if r == GPU {
		return g.gpus
	}
	return slices.Contains(g.resources, r)
}

// resolveGroups checks a node's resource groups and resolves them. A node
// without groups has one implicit group: GPUs and every named resource,
// its Quotas' flavors in order, which is how a Tree charged every flavor
// before groups existed (nil is returned for it).
func resolveGroups(n NodeSpec, s *shape) ([]group, error) {
	if len(n.ResourceGroups) == 0 {
		return nil, nil
	}
	bad := func(i int, flavor, field, format string, args ...any) error {
		return &SpecError{Node: n.Name, Flavor: flavor, Field: fmt.Sprintf("resourceGroups[%d]%s", i, field),
			Detail: fmt.Sprintf(format, args...), Err: ErrResourceGroup}
	}
	quotaOf := make(map[string]*FlavorQuota, len(n.Quotas))
	for i := range n.Quotas {
		quotaOf[n.Quotas[i].Flavor] = &n.Quotas[i]
	}
	out := make([]group, 0, len(n.ResourceGroups))
	resGroup := map[ResourceID]int{}
	flvGroup := map[string]int{}
	for i, rg := range n.ResourceGroups {
		g := group{gpus: rg.GPUs}
		if rg.GPUs {
			if j, dup := resGroup[GPU]; dup {
				return nil, bad(i, "", ".gpus", "GPUs are covered by group %d already", j)
			}
			resGroup[GPU] = i
		}
		for _, name := range rg.Resources {
			r, ok := s.resourceID[name]
			if !ok {
				return nil, bad(i, "", ".resources", "resource %q is not in the spec's resources", name)
			}
			if j, dup := resGroup[r]; dup {
				return nil, bad(i, "", ".resources", "resource %q is covered by group %d already", name, j)
			}
			resGroup[r] = i
			g.resources = append(g.resources, r)
		}
		if !g.gpus && len(g.resources) == 0 {
			return nil, bad(i, "", "", "a group covers GPUs or at least one resource")
		}
		if len(rg.Flavors) == 0 {
			return nil, bad(i, "", ".flavors", "a group lists at least one flavor")
		}
		for _, f := range rg.Flavors {
			q, ok := quotaOf[f]
			if !ok {
				return nil, bad(i, f, ".flavors", "the node's quotas have no entry for it")
			}
			if j, dup := flvGroup[f]; dup {
				return nil, bad(i, f, ".flavors", "the flavor is in group %d already", j)
			}
			flvGroup[f] = i
			if !g.gpus && (q.Nominal != 0 || !q.BorrowingLimit.IsZero() || !q.LendingLimit.IsZero()) {
				return nil, bad(i, f, ".flavors", "the group does not cover GPUs, so the flavor's entry gives them no quota")
			}
			for _, rq := range q.Resources {
				if !g.covers(s.resourceID[rq.Name]) {
					return nil, bad(i, f, ".flavors", "the flavor's entry has quota of %q, which the group does not cover", rq.Name)
				}
			}
			g.flavors = append(g.flavors, s.flavorID[f])
		}
		out = append(out, g)
	}
	for _, q := range n.Quotas {
		if _, ok := flvGroup[q.Flavor]; !ok {
			return nil, &SpecError{Node: n.Name, Flavor: q.Flavor, Field: "resourceGroups",
				Detail: "the flavor has quota but is in no resource group", Err: ErrResourceGroup}
		}
	}
	return out, nil
}

// groupsOf returns node n's resource groups, the implicit one included.
// The result is shared: read it, never write to it.
func (t *Tree) groupsOf(n NodeID) []group {
	if g := t.groups.declared[n]; g != nil {
		return g
	}
	return t.groups.implicit[n : n+1]
}

// groupSet is every node's resource groups: those it declares (nil: none)
// and its implicit group, used when it declares none.
type groupSet struct {
	declared [][]group
	implicit []group
}

// ownGroups gives t a copy of its groups to edit, which its clones do not
// share.
func (t *Tree) ownGroups() {
	t.groups = &groupSet{declared: slices.Clone(t.groups.declared), implicit: slices.Clone(t.groups.implicit)}
}

// implicitGroup is node n's implicit group: GPUs and every named
// resource, the flavors of its quotas in order (t.order[n], which is
// never written in place).
func (t *Tree) implicitGroup(n NodeID) group {
	return group{gpus: true, resources: t.s.allResources, flavors: t.order[n]}
}

// refreshImplicit rebuilds node n's implicit group after its flavors
// changed, in a copy of the groups that t's clones do not share.
func (t *Tree) refreshImplicit(n NodeID) {
	t.ownGroups()
	t.groups.implicit[n] = t.implicitGroup(n)
}

// HasResourceGroups reports whether node n declares resource groups; a
// node without has one implicit group that covers everything.
func (t *Tree) HasResourceGroups(n NodeID) bool { return t.groups.declared[n] != nil }

// SplitsResources reports whether node n's resource groups charge some
// resources in other flavors than its GPUs, or leave one uncovered: more
// than one group, or one that does not cover GPUs and every named
// resource. A node without declared groups, or with one covering
// everything, charges a workload every resource in one flavor.
func (t *Tree) SplitsResources(n NodeID) bool {
	g := t.groups.declared[n]
	if g == nil {
		return false
	}
	if len(g) > 1 || !g[0].gpus {
		return true
	}
	for r := ResourceID(1); int(r) <= len(t.s.resources); r++ {
		if !g[0].covers(r) {
			return true
		}
	}
	return false
}

// NumGroups counts node n's resource groups (1 without declared groups).
func (t *Tree) NumGroups(n NodeID) int { return len(t.groupsOf(n)) }

// GroupFlavors returns the flavors of node n's resource group g, in the
// order they are tried. The caller owns the returned slice.
func (t *Tree) GroupFlavors(n NodeID, g int) []FlavorID {
	return slices.Clone(t.groupsOf(n)[g].flavors)
}

// GroupCovers reports whether node n's resource group g covers resource r.
func (t *Tree) GroupCovers(n NodeID, g int, r ResourceID) bool { return t.groupsOf(n)[g].covers(r) }

// GroupOf returns the index of node n's group that covers resource r, or
// -1 when none does.
func (t *Tree) GroupOf(n NodeID, r ResourceID) int {
	for i, g := range t.groupsOf(n) {
		if g.covers(r) {
			return i
		}
	}
	return -1
}

// groupSpecs turns node n's resolved groups back into specs.
func (t *Tree) groupSpecs(n NodeID) []ResourceGroup {
	gs := t.groups.declared[n]
	if gs == nil {
		return nil
	}
	out := make([]ResourceGroup, len(gs))
	for i, g := range gs {
		rg := ResourceGroup{GPUs: g.gpus}
		for _, r := range g.resources {
			rg.Resources = append(rg.Resources, t.s.resources[r-1])
		}
		for _, f := range g.flavors {
			rg.Flavors = append(rg.Flavors, t.s.flavors[f])
		}
		out[i] = rg
	}
	return out
}
