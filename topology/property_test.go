package topology

import (
	"testing"

	"github.com/google/btree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// checkAggregates recounts every aggregate, histogram and index from the
// nodes alone and compares with the incremental state.
func checkAggregates(t require.TestingT, f *Fleet) {
	for n := range f.NumNodes() {
		require.True(t, f.nalloc[n] >= 0 && f.nalloc[n] <= f.ncap[n], "node %d alloc %d cap %d", n, f.nalloc[n], f.ncap[n])
	}
	R := len(f.rnames)
	for n := range f.NumNodes() {
		inUse := int32(0)
		var freeMask uint64
		for g := f.gbase[n]; g < f.gbase[n+1]; g++ {
			require.LessOrEqual(t, f.gused[g], uint16(MilliGPU), "GPU %d over-shared", g)
			if f.gwhole[g] {
				require.Equal(t, uint16(MilliGPU), f.gused[g], "GPU %d held whole", g)
			}
			if !f.gpuFree(int(g)) {
				inUse++
			} else if i := g - f.gbase[n]; i < 64 {
				freeMask |= 1 << i
			}
		}
		require.Equal(t, inUse, f.nalloc[n], "node %d GPUs in use", n)
		require.Equal(t, freeMask, f.FreeMask(NodeID(n)), "node %d whole-free GPUs", n)
		for r := range R {
			require.True(t, f.ralloc[n*R+r] >= 0 && f.ralloc[n*R+r] <= f.rcap[n*R+r], "node %d resource %d", n, r)
		}
	}
	for d := range DomainID(f.NumDomains()) {
		for s := range f.slots {
			var want aggregate
			wantRes := make([]int64, R)
			hist := make([]int32, f.maxGPUs+1)
			lo, hi := f.Nodes(d)
			for n := lo; n < hi; n++ {
				if s != f.allSlot && int(f.ngroup[n]) != s {
					continue
				}
				if f.slots == 1 || s == f.allSlot || int(f.ngroup[n]) == s {
					want.nodes++
					want.gpus += f.ncap[n]
					want.alloc += f.nalloc[n]
					want.milli += int64(f.MilliUsed(NodeID(n)))
					if f.nhealth[n] == Healthy {
						for r := range R {
							wantRes[r] += f.rcap[int(n)*R+r] - f.ralloc[int(n)*R+r]
						}
						free := f.ncap[n] - f.nalloc[n]
						want.healthyNodes++
						want.healthyGPUs += f.ncap[n]
						want.free += free
						hist[free]++
						if free == f.ncap[n] {
							want.freeNodes++
						} else if free > 0 {
							want.stranded += free
						}
					}
				}
			}
			require.Equal(t, want, f.agg[int(d)*f.slots+s], "domain %d slot %d", d, s)
			require.Equal(t, wantRes, f.rfree[(int(d)*f.slots+s)*R:(int(d)*f.slots+s+1)*R], "resources of domain %d slot %d", d, s)
			b := f.histBase(d, s)
			require.Equal(t, hist, f.hist[b:b+f.maxGPUs+1], "histogram of domain %d slot %d", d, s)
			require.Equal(t, want.healthyGPUs, want.free+allocHealthy(f, d, s), "free + allocated = capacity on healthy nodes")
		}
	}
	for l := 1; l < f.depth; l++ {
		for g := range f.groups {
			var wantNodes, wantGPUs []uint64
			lo, hi := f.DomainsAt(Level(l))
			for d := lo; d < hi; d++ {
				a := f.agg[int(d)*f.slots+f.slot(GroupID(g))]
				if a.nodes == 0 {
					continue
				}
				wantNodes = append(wantNodes, key(a.freeNodes, int32(d)))
				wantGPUs = append(wantGPUs, key(a.free, int32(d)))
			}
			require.ElementsMatch(t, wantNodes, items(f.byFreeNodes[l][g].Ascend), "level %d group %d by free nodes", l, g)
			require.ElementsMatch(t, wantGPUs, items(f.byFreeGPUs[l][g].Ascend), "level %d group %d by free GPUs", l, g)
		}
	}
	for g := range f.groups {
		var want []uint64
		for n := range f.NumNodes() {
			if int(f.ngroup[n]) == g && f.nhealth[n] == Healthy && f.ncap[n] > f.nalloc[n] {
				want = append(want, key(f.ncap[n]-f.nalloc[n], int32(n)))
			}
		}
		require.ElementsMatch(t, want, items(f.nodesByFree[g].Ascend), "nodes of group %d", g)
		var shared, mig []uint64
		for n := range NodeID(f.NumNodes()) {
			if int(f.ngroup[n]) != g {
				continue
			}
			for gi := f.gbase[n]; gi < f.gbase[n+1]; gi++ {
				if k, isMIG, ok := f.sharedKey(n, int(gi)); ok && isMIG {
					mig = append(mig, k)
				} else if ok {
					shared = append(shared, k)
				}
			}
		}
		require.ElementsMatch(t, shared, items(f.sharedByLeft[g].Ascend), "shared GPUs of group %d", g)
		require.ElementsMatch(t, mig, items(f.migByLeft[g].Ascend), "MIG GPUs of group %d", g)
	}
}

func allocHealthy(f *Fleet, d DomainID, s int) int32 {
	var a int32
	lo, hi := f.Nodes(d)
	for n := lo; n < hi; n++ {
		if (f.slots == 1 || s == f.allSlot || int(f.ngroup[n]) == s) && f.nhealth[n] == Healthy {
			a += f.nalloc[n]
		}
	}
	return a
}

func items(ascend func(btree.ItemIteratorG[uint64])) []uint64 {
	var out []uint64
	ascend(func(k uint64) bool { out = append(out, k); return true })
	return out
}

// genSpec draws a small random fleet: 1-4 levels, uneven fanouts, mixed
// GPU counts, flavors and pools.
func genSpec(t *rapid.T) Spec {
	depth := rapid.IntRange(1, 4).Draw(t, "depth")
	levels := []string{"a", "b", "c", "d"}[:depth]
	var nodes []NodeSpec
	var walk func(path []string, l int)
	walk = func(path []string, l int) {
		fan := rapid.IntRange(1, 3).Draw(t, "fanout")
		for i := range fan {
			name := levels[l] + string(rune('0'+len(nodes))) + "-" + string(rune('0'+i))
			for _, p := range path {
				name += p
			}
			if l == depth-1 {
				nodes = append(nodes, NodeSpec{
					Name:   "n" + name,
					Path:   append([]string(nil), path...),
					GPUs:   rapid.SampledFrom([]int{1, 4, 8}).Draw(t, "gpus"),
					Flavor: rapid.SampledFrom([]string{"H100", "H200"}).Draw(t, "flavor"),
					Pool:   rapid.SampledFrom([]string{"", "inference"}).Draw(t, "pool"),
				})
				nd := &nodes[len(nodes)-1]
				if rapid.Bool().Draw(t, "resources") {
					nd.Resources = map[string]int64{"cpu": int64(rapid.IntRange(0, 64).Draw(t, "cpu")) * 1000, "memory": 1 << 30}
				}
				if nd.Flavor == "H100" && rapid.IntRange(0, 2).Draw(t, "mig") == 0 {
					nd.MIG = true
				}
				continue
			}
			walk(append(path, name), l+1)
		}
	}
	walk(nil, 0)
	return Spec{Levels: levels, Nodes: nodes}
}

func TestPropertyAggregatesMatchRecount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f, err := New(genSpec(t))
		require.NoError(t, err)
		fleets := []*Fleet{f}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			i := rapid.IntRange(0, len(fleets)-1).Draw(t, "fleet")
			f := fleets[i]
			n := NodeID(rapid.IntRange(-1, f.NumNodes()).Draw(t, "node"))
			gpus := rapid.IntRange(-1, 9).Draw(t, "gpus")
			before := f.Clone()
			var err error
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); op {
			case 0:
				err = f.Allocate(n, gpus)
			case 1:
				err = f.Release(n, gpus)
			case 2:
				err = f.SetHealth(n, Health(rapid.IntRange(0, 2).Draw(t, "health")))
			case 3:
				fleets = append(fleets, f.Clone())
			}
			if err != nil {
				assertSameState(t, before, f)
			}
			for _, g := range fleets {
				checkAggregates(t, g)
			}
		}
	})
}

func TestPropertyRefusedAllocateMatchesCapacity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f, err := New(genSpec(t))
		require.NoError(t, err)
		n := NodeID(rapid.IntRange(0, f.NumNodes()-1).Draw(t, "node"))
		gpus := rapid.IntRange(1, 9).Draw(t, "gpus")
		err = f.Allocate(n, gpus)
		assert.Equal(t, gpus > f.Capacity(n), err != nil)
	})
}

// genClaim draws a claim on a random node, valid or not: whole GPUs, a
// share, a MIG slice or nothing, with random resources.
func genClaim(t *rapid.T, f *Fleet) Claim {
	c := Claim{Node: NodeID(rapid.IntRange(-1, f.NumNodes()).Draw(t, "cnode"))}
	cap := 8
	if c.Node >= 0 && int(c.Node) < f.NumNodes() {
		cap = f.Capacity(c.Node)
	}
	switch rapid.IntRange(0, 3).Draw(t, "kind") {
	case 0:
		c.Whole = uint64(rapid.IntRange(0, 1<<min(cap+1, 9)-1).Draw(t, "whole"))
	case 1:
		c.GPU = rapid.IntRange(-1, cap).Draw(t, "gpu")
		c.Share = rapid.SampledFrom([]int{-1, 0, 100, 250, 500, 700, 1000, 1001}).Draw(t, "share")
	case 2:
		c.GPU = rapid.IntRange(0, cap).Draw(t, "gpu")
		c.MIG = rapid.SampledFrom([]string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.5gb"}).Draw(t, "profile")
		c.Slice = rapid.IntRange(-1, 8).Draw(t, "slice")
	}
	if f.NumResources() > 0 && rapid.Bool().Draw(t, "withRes") {
		c.Resources = []ResourceAmount{{Resource: ResourceID(rapid.IntRange(0, f.NumResources()).Draw(t, "res")), Amount: int64(rapid.IntRange(-1, 20).Draw(t, "amount")) * 1000}}
	}
	return c
}

// Claims and releases in any order never double-book a GPU, a share or a
// slice, and every per-GPU figure, per-node resource and aggregate equals
// a recount from the claims that hold.
func TestPropertyClaimsNeverDoubleBook(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f, err := New(genSpec(t))
		require.NoError(t, err)
		var live []Claim
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			before := f.Clone()
			var err error
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				c := genClaim(t, f)
				if err = f.AllocateClaim(c); err == nil {
					live = append(live, c)
				}
			case 2:
				if len(live) > 0 {
					i := rapid.IntRange(0, len(live)-1).Draw(t, "release")
					require.NoError(t, f.ReleaseClaim(live[i]))
					live = append(live[:i], live[i+1:]...)
				}
			case 3:
				err = f.SetHealth(NodeID(rapid.IntRange(0, f.NumNodes()-1).Draw(t, "hnode")), Health(rapid.IntRange(0, 2).Draw(t, "health")))
			}
			if err != nil {
				assertSameState(t, before, f)
			}
			checkAggregates(t, f)
			recountClaims(t, f, live)
		}
		for _, c := range live {
			require.NoError(t, f.ReleaseClaim(c))
		}
		for g := range f.gused {
			require.True(t, f.gpuFree(g), "GPU %d free after every release", g)
		}
	})
}

func recountClaims(t *rapid.T, f *Fleet, live []Claim) {
	R := f.NumResources()
	used := make([]int, len(f.gused))
	mig := make([]uint8, len(f.gused))
	whole := make([]bool, len(f.gused))
	res := make([]int64, len(f.ralloc))
	for _, c := range live {
		base := int(f.gbase[c.Node])
		for i := range 64 {
			if c.Whole&(1<<i) != 0 {
				g := base + i
				require.False(t, whole[g] || used[g] > 0 || mig[g] != 0, "GPU %d double-booked", g)
				whole[g], used[g] = true, MilliGPU
				if f.MIG(c.Node) {
					mig[g] = migFull
				}
			}
		}
		switch {
		case c.MIG != "":
			p, ok := f.NodeMIGProfile(c.Node, c.MIG)
			require.True(t, ok)
			g := base + c.GPU
			span := migSpan(p, c.Slice)
			require.False(t, whole[g] || mig[g]&span != 0, "slice of GPU %d double-booked", g)
			mig[g] |= span
			used[g] += p.ShareAt(c.Slice)
			require.LessOrEqual(t, used[g], MilliGPU, "GPU %d over-carved", g)
		case c.Share > 0:
			g := base + c.GPU
			require.False(t, whole[g], "GPU %d shared and whole", g)
			used[g] += c.Share
			require.LessOrEqual(t, used[g], MilliGPU, "GPU %d over-shared", g)
		}
		for _, r := range c.Resources {
			res[int(c.Node)*R+int(r.Resource)] += r.Amount
		}
	}
	for g := range used {
		require.Equal(t, used[g], int(f.gused[g]), "GPU %d thousandths", g)
		require.Equal(t, mig[g], f.gmig[g], "GPU %d slices", g)
		require.Equal(t, whole[g], f.gwhole[g], "GPU %d whole", g)
	}
	require.Equal(t, res, f.ralloc, "resources per node")
}
