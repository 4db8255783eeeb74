package quota_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/quota"
)

// benchTree builds a tree whose levels fan out as given (the last number is
// queues per cohort), with two flavors. Every queue is guaranteed 8 GPUs of
// each flavor and lends them all; every cohort holds a pool of 8. The first
// queue is idle and every other queue uses 7 GPUs, so the tree is about 85%
// used and a request beyond the first queue's quota borrows from the root.
func benchTree(b *testing.B, fanout ...int) (*quota.Tree, quota.NodeID) {
	b.Helper()
	flavors := []string{"H100", "H200"}
	pool := []quota.FlavorQuota{q("H100", 8), q("H200", 8)}
	spec := quota.Spec{Flavors: flavors, Nodes: []quota.NodeSpec{cohort("root", "")}}
	level := []string{"root"}
	for d, n := range fanout {
		var next []string
		for _, p := range level {
			for i := range n {
				name := fmt.Sprintf("%s.%d", p, i)
				if d == len(fanout)-1 {
					spec.Nodes = append(spec.Nodes, queue(name, p, q("H100", 8), qb("H200", 8, 512)))
				} else {
					spec.Nodes = append(spec.Nodes, cohort(name, p, pool...))
				}
				next = append(next, name)
			}
		}
		level = next
	}
	tree, err := quota.New(spec)
	if err != nil {
		b.Fatal(err)
	}
	for _, qid := range tree.Queues()[1:] {
		for f := range quota.FlavorID(2) {
			if err := tree.AddUsage(qid, f, 7); err != nil {
				b.Fatal(err)
			}
		}
	}
	return tree, tree.Queues()[0]
}

// rootBorrow returns the smallest request of queue q that fits only by
// borrowing from the root, so that Fits and usage changes walk every level.
func rootBorrow(b *testing.B, tree *quota.Tree, q quota.NodeID, f quota.FlavorID) int64 {
	b.Helper()
	for gpus := int64(1); ; gpus++ {
		v := tree.Fits(q, f, gpus)
		if !v.Fits() {
			b.Fatalf("setup: no request borrows from the root: %v", v)
		}
		if v.From == 0 {
			return gpus
		}
	}
}

// runTimed runs op b.N times, timing each call, and reports the p99.
func runTimed(b *testing.B, op func()) {
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range lat {
		start := time.Now()
		op()
		lat[i] = time.Since(start)
	}
	b.StopTimer()
	benchlat.ReportP99(b, lat)
}

type benchShape struct {
	name   string
	fanout []int
}

// benchShapes: 100 queues at two depths, to show cost grows with depth.
func benchShapes() []benchShape {
	return []benchShape{
		{"queues=100/flavors=2/depth=3", []int{10, 10}},
		{"queues=100/flavors=2/depth=5", []int{2, 2, 5, 5}},
	}
}

func BenchmarkFits(b *testing.B) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			tree, q0 := benchTree(b, s.fanout...)
			h200, _ := tree.Flavor("H200")
			gpus := rootBorrow(b, tree, q0, h200)
			runTimed(b, func() {
				if !tree.Fits(q0, h200, gpus).Fits() {
					b.Fatal("does not fit")
				}
			})
		})
	}
}

func BenchmarkAddRemoveUsage(b *testing.B) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			tree, q0 := benchTree(b, s.fanout...)
			h200, _ := tree.Flavor("H200")
			gpus := rootBorrow(b, tree, q0, h200)
			runTimed(b, func() {
				if tree.AddUsage(q0, h200, gpus) != nil || tree.RemoveUsage(q0, h200, gpus) != nil {
					b.Fatal("usage refused")
				}
			})
		})
	}
}

func BenchmarkDominantShare(b *testing.B) {
	tree, _ := benchTree(b, 10, 10)
	busy := tree.Queues()[1]
	h200, _ := tree.Flavor("H200")
	if err := tree.AddUsage(busy, h200, 20); err != nil {
		b.Fatal(err)
	}
	runTimed(b, func() {
		if !tree.DominantShare(busy).Borrowing() {
			b.Fatal("not borrowing")
		}
	})
}

func BenchmarkClone(b *testing.B) {
	tree, _ := benchTree(b, 10, 10)
	scratch := tree.Clone()
	b.Run("queues=100/flavors=2/clone", func(b *testing.B) {
		runTimed(b, func() { _ = tree.Clone() })
	})
	b.Run("queues=100/flavors=2/copyto", func(b *testing.B) {
		runTimed(b, func() { tree.CopyTo(scratch) })
	})
}

// BenchmarkAssign is the flavor assigner on the bench trees: one pod set
// of GPUs in the implicit group, a request that borrows from the root in
// H200 and borrows in H100 too, and whenCanBorrow TryNextFlavor, so the
// search weighs both flavors.
func BenchmarkAssign(b *testing.B) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			tree, q0 := benchTree(b, s.fanout...)
			h200, _ := tree.Flavor("H200")
			gpus := rootBorrow(b, tree, q0, h200)
			var n quota.NodeSpec
			for _, x := range tree.Spec().Nodes {
				if x.Name == tree.Name(q0) {
					n = x
				}
			}
			n.FlavorFungibility.WhenCanBorrow = quota.TryNextFlavor
			if err := tree.SetNode(n); err != nil {
				b.Fatal(err)
			}
			sets := []quota.PodSetRequest{{MilliGPUs: gpus * 1000}}
			runTimed(b, func() {
				if a := tree.Assign(q0, sets, quota.AssignOptions{}); a.Mode != quota.AssignFit || !a.Borrowing() {
					b.Fatalf("assigned %+v", a.PodSets[0][0])
				}
			})
		})
	}
}
