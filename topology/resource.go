package topology

import (
	"maps"
	"slices"
)

// ResourceID names one of the fleet's named resources (cpu, memory, any
// extended resource) by a small integer: 0..NumResources()-1 in name order.
type ResourceID int32

// MaxResource bounds one node's capacity of a named resource, so that sums
// over any fleet stay far inside int64.
const MaxResource int64 = 1 << 50

// buildGPUs lays out the per-GPU state and the named resources of the nn
// nodes, whose groups are known.
func (f *Fleet) buildGPUs(nn int) {
	f.gbase = make([]int32, nn+1)
	f.nmig = make([]int8, nn)
	names := map[string]bool{}
	for n := range nn {
		ns := f.spec.Nodes[f.nspec[n]]
		f.gbase[n+1] = f.gbase[n] + f.ncap[n]
		f.nmig[n] = -1
		if ns.MIG {
			i := slices.IndexFunc(f.migModels, func(m migModel) bool { return m.flavor == ns.Flavor })
			if i < 0 {
				i = len(f.migModels)
				f.migModels = append(f.migModels, migModel{flavor: ns.Flavor, profiles: MIGProfiles(ns.Flavor)})
			}
			f.nmig[n] = int8(i)
		}
		for r := range ns.Resources {
			names[r] = true
		}
	}
	total := int(f.gbase[nn])
	f.gnode = make([]NodeID, total)
	for n := range nn {
		for g := f.gbase[n]; g < f.gbase[n+1]; g++ {
			f.gnode[g] = NodeID(n)
		}
	}
	f.gused = make([]uint16, total)
	f.gmig = make([]uint8, total)
	f.gwhole = make([]bool, total)
	f.nfree = make([]uint64, nn)
	for n := range nn {
		f.nfree[n] = lowBits(int(f.ncap[n]))
	}
	f.rnames = slices.Sorted(maps.Keys(names))
	f.rindex = make(map[string]ResourceID, len(f.rnames))
	for i, r := range f.rnames {
		f.rindex[r] = ResourceID(i)
	}
	R := len(f.rnames)
	f.rcap = make([]int64, nn*R)
	f.ralloc = make([]int64, nn*R)
	for n := range nn {
		for r, v := range f.spec.Nodes[f.nspec[n]].Resources {
			f.rcap[n*R+int(f.rindex[r])] = v
		}
	}
}

// NumResources is the number of named resources any node has.
func (f *Fleet) NumResources() int { return len(f.rnames) }

// Resource looks a named resource up.
func (f *Fleet) Resource(name string) (ResourceID, bool) {
	r, ok := f.rindex[name]
	return r, ok
}

// ResourceName is the name of resource r.
func (f *Fleet) ResourceName(r ResourceID) string { return f.rnames[r] }

// ResourceCapacity is node n's capacity of resource r.
func (f *Fleet) ResourceCapacity(n NodeID, r ResourceID) int64 {
	return f.rcap[int(n)*len(f.rnames)+int(r)]
}

// ResourceAllocated is the amount of resource r held on node n.
func (f *Fleet) ResourceAllocated(n NodeID, r ResourceID) int64 {
	return f.ralloc[int(n)*len(f.rnames)+int(r)]
}

// ResourceFree is the unallocated amount of resource r on node n, whatever
// its health.
func (f *Fleet) ResourceFree(n NodeID, r ResourceID) int64 {
	x := int(n)*len(f.rnames) + int(r)
	return f.rcap[x] - f.ralloc[x]
}

// FreeResource is the free amount of resource r on the healthy nodes of
// group g below domain d, in O(1).
func (f *Fleet) FreeResource(d DomainID, g GroupID, r ResourceID) int64 {
	return f.rfree[(int(d)*f.slots+f.slot(g))*len(f.rnames)+int(r)]
}

// MilliAllocated is the thousandths of GPU in use below domain d in group
// g (shares, MIG slices and whole GPUs, on nodes of any health), in O(1).
func (f *Fleet) MilliAllocated(d DomainID, g GroupID) int64 {
	return f.agg[int(d)*f.slots+f.slot(g)].milli
}
