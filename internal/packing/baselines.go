package packing

import (
	"math/rand/v2"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// choice is one feasible node for a pod and the claim it would make.
type choice struct {
	c     topology.Claim
	score float64 // remaining resources after it, as BestFit weighs them
}

// feasible lists every node that can take the one pod of w, with the
// tightest GPU on it for a share: a brute-force scan of the fleet.
func feasible(f *topology.Fleet, w *gang.Workload, out []choice) []choice {
	out = out[:0]
	ps := &w.PodSets[0]
	cpu, _ := f.Resource("cpu")
	mem, _ := f.Resource("memory")
	var need [2]int64
	need[0], need[1] = ps.Resource("cpu"), ps.Resource("memory")
	for n := range topology.NodeID(f.NumNodes()) {
		if _, ok := w.Accepts(f.GroupFlavor(f.NodeGroup(n))); !ok || f.Health(n) != topology.Healthy {
			continue
		}
		if f.ResourceFree(n, cpu) < need[0] || f.ResourceFree(n, mem) < need[1] {
			continue
		}
		c := topology.Claim{Node: n, GPU: -1}
		switch {
		case ps.GPUsPerPod > 0:
			free := f.FreeMask(n)
			for range ps.GPUsPerPod {
				if free == 0 {
					break
				}
				low := free & -free
				c.Whole |= low
				free &^= low
			}
			if f.Free(n) < ps.GPUsPerPod {
				continue
			}
		case ps.GPUShare > 0:
			best, bestLeft := -1, 0
			for i := range f.Capacity(n) {
				if f.GPUWhole(n, i) {
					continue
				}
				used, _ := f.GPUUsed(n, i)
				if left := gang.MilliGPU - used; left >= ps.GPUShare && (best < 0 || left < bestLeft) {
					best, bestLeft = i, left
				}
			}
			if best < 0 {
				continue
			}
			c.GPU, c.Share = best, ps.GPUShare
		}
		c.Resources = []topology.ResourceAmount{{Resource: cpu, Amount: need[0]}, {Resource: mem, Amount: need[1]}}
		gpuLeft := float64(f.Capacity(n)*gang.MilliGPU-f.MilliUsed(n)) - float64(w.MilliGPUs())
		score := (float64(f.ResourceFree(n, cpu)-need[0]) / float64(f.ResourceCapacity(n, cpu)))
		if f.Capacity(n) > 0 {
			score += gpuLeft / float64(f.Capacity(n)*gang.MilliGPU)
		}
		out = append(out, choice{c: c, score: score})
	}
	return out
}

type baseline struct {
	name string
	pick func(cs []choice) int
	buf  []choice
}

func (b *baseline) Name() string { return b.name }

func (b *baseline) Place(f *topology.Fleet, w *gang.Workload) bool {
	b.buf = feasible(f, w, b.buf)
	if len(b.buf) == 0 {
		return false
	}
	c := b.buf[b.pick(b.buf)].c
	if c.GPU < 0 {
		c.GPU = 0
	}
	if err := f.AllocateClaim(c); err != nil {
		panic(err)
	}
	return true
}

// NewFirstFit places each pod on the first node, in ID order, with room.
func NewFirstFit() Policy {
	return &baseline{name: "firstfit", pick: func([]choice) int { return 0 }}
}

// NewBestFit places each pod on the node left with the least resources:
// the sum of its free GPU and CPU shares after the pod, lowest ID on ties.
func NewBestFit() Policy {
	return &baseline{name: "bestfit", pick: func(cs []choice) int {
		best := 0
		for i, c := range cs {
			if c.score < cs[best].score {
				best = i
			}
		}
		return best
	}}
}

// NewRandom places each pod on a node drawn uniformly among those with
// room, from a seeded generator.
func NewRandom(seed uint64) Policy {
	r := rand.New(rand.NewPCG(seed, 1))
	return &baseline{name: "random", pick: func(cs []choice) int { return r.IntN(len(cs)) }}
}
