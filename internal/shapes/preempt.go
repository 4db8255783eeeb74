package shapes

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Victim is a victim-search state: a fleet, a quota tree with the usage
// of the running workloads, the running workloads themselves and the
// request the benchmark decides (Ask builds others from the same queue).
type Victim struct {
	Fleet   *topology.Fleet
	Tree    *quota.Tree
	Running []preempt.Running
	Request preempt.Request
	Queue   string // the requesting queue
}

// Fill is how running work fills each node of a victim shape.
type Fill uint8

const (
	// FillFull: one whole-node workload per node.
	FillFull Fill = iota
	// FillMixed: a random split of each node into 1-8 GPU workloads.
	FillMixed
	// FillSmall: one-GPU workloads, as many as the node has GPUs
	// (Kueue's quota fill: 8 per node).
	FillSmall
)

func (f Fill) String() string {
	switch f {
	case FillFull:
		return "full"
	case FillMixed:
		return "mixed"
	case FillSmall:
		return "small"
	}
	return fmt.Sprintf("Fill(%d)", uint8(f))
}

// Fills lists every fill, in the order benchmarks report them.
func Fills() []Fill { return []Fill{FillFull, FillMixed, FillSmall} }

// Ask returns a request of the shape's queue at priority 1000: pods x
// gpusPerPod, inside one domain of level required ("" for anywhere).
func (v *Victim) Ask(id string, pods, gpusPerPod int, required string) preempt.Request {
	return v.request(id, v.Queue, pods, gpusPerPod, required)
}

// View indexes Running (as they are now) and returns the view a search
// reads, with a scratch clone of the fleet.
func (v *Victim) View() preempt.View {
	x := preempt.NewIndex(v.Fleet, v.Tree)
	for _, r := range v.Running {
		if err := x.Add(r); err != nil {
			panic(fmt.Sprintf("shapes: %v", err))
		}
	}
	return preempt.View{Fleet: v.Fleet, Tree: v.Tree, Index: x, Scratch: v.Fleet.Clone()}
}

// VictimNow returns the time of every victim shape's decision.
func VictimNow() time.Time { return time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC) }

// Clear is the "full" shape: every node is full of preemptible batch work
// (per fill: one 8-GPU workload per node, a random split of the node into
// 1-8 GPU workloads, about 1,000 at 2,048 GPUs, or 8 one-GPU workloads) with random priority
// 0-99 and age up to 1 h, in queue "batch" (nominal half the fleet, so it
// borrows the other half from "research"). The request: 64 x 8 GPUs on
// one spine at priority 1000 in "research" (reclaimWithinCohort Any).
func Clear(gpus int, fill Fill, seed uint64) *Victim {
	f := NewFleet(gpus)
	c := int64(f.Stats(topology.Root, topology.AllGroups).GPUs)
	v := newVictim(f, []quota.NodeSpec{
		cohortSpec("all", 0),
		queueSpec("research", "all", c/2, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny}),
		queueSpec("batch", "all", c-c/2, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}),
	})
	r := rand.New(rand.NewPCG(seed, 0xc1ea))
	v.fill(r, 0, f.NumNodes(), "batch", fill)
	v.Queue = "research"
	v.Request = v.request("clear", "research", 64, 8, "spine")
	return v
}

// Reclaim is the "reclaim" shape: one cohort of 8 queues with an eighth of
// the fleet nominal each; queue 0 uses a quarter of the fleet (borrows an
// eighth), queues 1-6 use exactly their quota, queue 7 is idle. Each
// queue's work sits on its own contiguous nodes, filled per fill. The
// request: 8 x 8 GPUs in queue 7
// at priority 1000 (reclaimWithinCohort LowerPriority), no topology
// constraint: the victims must be queue 0's borrowed work.
func Reclaim(gpus int, fill Fill, seed uint64) *Victim {
	f := NewFleet(gpus)
	c := int64(f.Stats(topology.Root, topology.AllGroups).GPUs)
	specs := []quota.NodeSpec{cohortSpec("cohort", 0)}
	for i := range 8 {
		specs = append(specs, queueSpec(fmt.Sprintf("q%d", i), "cohort", c/8,
			quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimLowerPriority}))
	}
	v := newVictim(f, specs)
	r := rand.New(rand.NewPCG(seed, 0x7ec1))
	per := f.NumNodes() / 8
	v.fill(r, 0, 2*per, "q0", fill)
	for i := 1; i <= 6; i++ {
		v.fill(r, (i+1)*per, (i+2)*per, fmt.Sprintf("q%d", i), fill)
	}
	v.Queue = "q7"
	v.Request = v.request("reclaim", "q7", 8, 8, "")
	return v
}

// BorrowPreempt is the reclaim shape with every queue allowed to preempt
// while it borrows (borrowWithinCohort LowerPriority, no threshold), and
// the request from queue 1, which uses exactly its nominal quota: 8 x 8
// GPUs at priority 1000 that it can only borrow, so the victims must be
// queue 0's borrowed work, taken while the preemptor borrows.
func BorrowPreempt(gpus int, fill Fill, seed uint64) *Victim {
	v := Reclaim(gpus, fill, seed)
	specs := v.Tree.Spec()
	for i := range specs.Nodes {
		if specs.Nodes[i].Kind == quota.Queue {
			specs.Nodes[i].Preemption.BorrowWithinCohort = quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority}
		}
	}
	t, err := quota.New(specs)
	if err != nil {
		panic(fmt.Sprintf("shapes: %v", err))
	}
	for _, r := range v.Running {
		if err := t.AddUsage(r.Queue, r.Flavor, int64(r.W.GPUs())); err != nil {
			panic(fmt.Sprintf("shapes: %v", err))
		}
	}
	v.Tree = t
	v.Queue = "q1"
	v.Request = v.request("borrow", "q1", 8, 8, "")
	return v
}

// Spike is inference returning to its guarantee: "inference" is promised
// 1,200 of every 2,048 GPUs but uses about 500, "training" uses its 848,
// and "batch" (nominal 0) borrows the rest; the fleet is full. The
// request: 100 GPUs of inference (25 pods x 4 GPUs) at priority 1000,
// reclaimWithinCohort Any.
func Spike(gpus int, fill Fill, seed uint64) *Victim {
	f := NewFleet(gpus)
	c := int64(f.Stats(topology.Root, topology.AllGroups).GPUs)
	inf, tr := c*1200/2048, c*848/2048
	v := newVictim(f, []quota.NodeSpec{
		cohortSpec("fleet", 0),
		queueSpec("inference", "fleet", inf, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny}),
		queueSpec("training", "fleet", tr, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}),
		queueSpec("batch", "fleet", c-inf-tr, quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}),
	})
	r := rand.New(rand.NewPCG(seed, 0x5b1e))
	n := f.NumNodes()
	infNodes, trNodes := n*500/2048, int(tr)/8
	v.fill(r, 0, infNodes, "inference", fill)
	v.fill(r, infNodes, infNodes+trNodes, "training", fill)
	v.fill(r, infNodes+trNodes, n, "batch", fill)
	v.Queue = "inference"
	v.Request = v.request("spike", "inference", 25, 4, "")
	return v
}

func cohortSpec(name string, nominal int64) quota.NodeSpec {
	return quota.NodeSpec{Name: name, Kind: quota.Cohort,
		Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: nominal}}}
}

func queueSpec(name, parent string, nominal int64, rules quota.Rules) quota.NodeSpec {
	return quota.NodeSpec{Name: name, Parent: parent, Kind: quota.Queue, Preemption: rules,
		Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: nominal}}}
}

func newVictim(f *topology.Fleet, specs []quota.NodeSpec) *Victim {
	t, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: specs})
	if err != nil {
		panic(fmt.Sprintf("shapes: %v", err))
	}
	return &Victim{Fleet: f, Tree: t}
}

// fill puts work of queue q on nodes [lo, hi) as fill says.
func (v *Victim) fill(r *rand.Rand, lo, hi int, q string, fill Fill) {
	qid, _ := v.Tree.Node(q)
	for n := topology.NodeID(lo); n < topology.NodeID(hi); n++ {
		left := v.Fleet.Capacity(n)
		for left > 0 {
			g := left
			switch fill {
			case FillMixed:
				g = 1 + r.IntN(left)
			case FillSmall:
				g = 1
			}
			left -= g
			id := fmt.Sprintf("%s-%d-%d", q, n, left)
			w := &gang.Workload{ID: id, Queue: q, Priority: int32(r.IntN(100)), Shape: gang.Batch,
				PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: g}},
				Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
			started := VictimNow().Add(-time.Duration(r.Int64N(int64(time.Hour))))
			if err := v.Fleet.Allocate(n, g); err != nil {
				panic(err)
			}
			if err := v.Tree.AddUsage(qid, 0, int64(g)); err != nil {
				panic(err)
			}
			v.Running = append(v.Running, preempt.Running{W: w, Queue: qid, Flavor: 0,
				Nodes: []placement.NodeGPUs{{Node: n, GPUs: g}}, Started: started, Preemptible: true})
		}
	}
}

func (v *Victim) request(id, q string, pods, gpusPerPod int, required string) preempt.Request {
	qid, _ := v.Tree.Node(q)
	w := &gang.Workload{ID: id, Queue: q, Priority: 1000, Shape: gang.Training,
		PodSets:  []gang.PodSet{{Name: "p", Count: pods, GPUsPerPod: gpusPerPod}},
		Topology: gang.TopologyRequest{Required: required}}
	return preempt.Request{W: w, Queue: qid, Flavor: 0, Now: VictimNow()}
}
