package preempt_test

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// env is a small fleet, a quota tree and the running workloads on them,
// kept consistent: run allocates on the fleet and records usage.
type env struct {
	t       require.TestingT
	f       *topology.Fleet
	tree    *quota.Tree
	fl      quota.FlavorID
	running []preempt.Running
}

func newEnv(t require.TestingT, spines, leaves, nodes, gpus int, qnodes ...quota.NodeSpec) *env {
	f, err := topology.New(topology.Uniform(topology.UniformSpec{
		Levels: []string{"spine", "leaf", "node"}, Fanout: []int{spines, leaves, nodes},
		GPUsPerNode: gpus, Flavor: "H100"}))
	require.NoError(t, err)
	tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: qnodes})
	require.NoError(t, err)
	return &env{t: t, f: f, tree: tree, fl: 0}
}

func cohort(name, parent string, nominal int64) quota.NodeSpec {
	return quota.NodeSpec{Name: name, Parent: parent, Kind: quota.Cohort,
		Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: nominal}}}
}

func queue(name, parent string, nominal int64, rules quota.Rules) quota.NodeSpec {
	return quota.NodeSpec{Name: name, Parent: parent, Kind: quota.Queue, Preemption: rules,
		Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: nominal}}}
}

func (e *env) q(name string) quota.NodeID {
	id, ok := e.tree.Node(name)
	require.True(e.t, ok, name)
	return id
}

// run starts workload id in queue q at priority prio, holding gpus[i] GPUs
// on node nodes[i] (node indexes in fleet order), started age ago.
func (e *env) run(id, q string, prio int32, age time.Duration, nodes []int, gpus []int) *preempt.Running {
	var ng []placement.NodeGPUs
	total := 0
	for i, n := range nodes {
		require.NoError(e.t, e.f.Allocate(topology.NodeID(n), gpus[i]))
		ng = append(ng, placement.NodeGPUs{Node: topology.NodeID(n), GPUs: gpus[i]})
		total += gpus[i]
	}
	require.NoError(e.t, e.tree.AddUsage(e.q(q), e.fl, int64(total)))
	w := &gang.Workload{ID: id, Queue: q, Priority: prio, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: total}},
		Drain: gang.DrainContract{Preemptible: true}}
	e.running = append(e.running, preempt.Running{W: w, Queue: e.q(q), Flavor: e.fl, Nodes: ng,
		Started: t0.Add(-age), Preemptible: true})
	return &e.running[len(e.running)-1]
}

// view indexes the running workloads as they are now.
func (e *env) view() preempt.View {
	x := preempt.NewIndex(e.f, e.tree)
	for _, r := range e.running {
		require.NoError(e.t, x.Add(r))
	}
	return preempt.View{Fleet: e.f, Tree: e.tree, Index: x, Scratch: e.f.Clone()}
}

func (e *env) req(id, q string, prio int32, pods, gpusPerPod int, required string) preempt.Request {
	w := &gang.Workload{ID: id, Queue: q, Priority: prio,
		PodSets:  []gang.PodSet{{Name: "p", Count: pods, GPUsPerPod: gpusPerPod}},
		Topology: gang.TopologyRequest{Required: required}}
	return preempt.Request{W: w, Queue: e.q(q), Flavor: e.fl, Now: t0}
}

func ids(p preempt.Plan) []string {
	out := []string{}
	for _, v := range p.Victims {
		out = append(out, v.ID)
	}
	return out
}
