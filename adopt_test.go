package fleet_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// spikeOverBatch fills the reference fleet's first spine with borrowed
// 8-GPU batch jobs and the rest with research, then submits inference
// replicas that must reclaim: the cycle drains batch and nominates its
// nodes for the replicas.
func spikeOverBatch(t *testing.T) (*fleet.Scheduler, map[string]gang.Workload, fleet.Decisions) {
	s := newRef(t)
	specs := map[string]gang.Workload{}
	for i := range 256 {
		node := fmt.Sprintf("node-%d-%d-%d", i/64, i/8%8, i%8)
		w := gang.Workload{ID: fmt.Sprintf("batch-%03d", i), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
			Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}},
			Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
		if i >= 88 { // research's 848 GPUs less what it lends
			w.ID, w.Queue, w.PriorityClass, w.Shape = fmt.Sprintf("research-%03d", i), "research", fleet.ClassReservedResearch, gang.Training
		}
		if i >= 88+106 {
			w.ID, w.Queue, w.PriorityClass, w.Shape = fmt.Sprintf("infer-%03d", i), "prod-inference", fleet.ClassProdInference, gang.Inference
			w.Drain = gang.DrainContract{}
		}
		require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0,
			Pods: []fleet.PodAssignment{{PodSet: "p", Node: node, GPUs: 8}}}))
		specs[w.ID] = w
	}
	now := t0.Add(time.Hour)
	for i := range 4 {
		w := replica(fmt.Sprintf("replica-%d", i), 8)
		require.NoError(t, s.Submit(now, w))
		specs[w.ID] = w
	}
	d := s.Schedule(now)
	require.NotEmpty(t, d.Drain, "the replicas reclaim borrowed batch")
	require.NotEmpty(t, d.Nominate, "and are nominated on its nodes")
	return s, specs, d
}

// A host that keeps no snapshot rebuilds from what it was told (the
// admissions it started, the drains it sent, the nominations it showed):
// the rebuilt scheduler keeps every deadline, drains nobody again, and
// starts each replica on its nominated nodes once its victims are gone.
func TestAdoptRestartKeepsDrainsAndNominations(t *testing.T) {
	s, specs, d := spikeOverBatch(t)
	now := t0.Add(time.Hour)
	snap := s.Snapshot()

	drains := map[string]fleet.Drain{}
	for _, x := range d.Drain {
		drains[x.ID] = x
	}
	r, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	later := now.Add(30 * time.Second)
	for _, v := range snap.Running {
		a := fleet.Adoption{Workload: specs[v.ID], Started: v.Started, Pods: v.Pods}
		if x, ok := drains[v.ID]; ok {
			a.Drain = &fleet.AdoptedDrain{Since: now, Deadline: x.Deadline, Reason: x.Reason,
				Beneficiaries: x.Beneficiaries, Live: x.Beneficiaries}
		}
		require.NoError(t, r.Adopt(later, a), v.ID)
	}
	for _, n := range d.Nominate {
		require.NoError(t, r.Adopt(later, fleet.Adoption{Workload: specs[n.ID], Submitted: now, Nominated: n.Pods}), n.ID)
	}
	require.NoError(t, r.CheckInvariants())

	d2 := r.Schedule(later)
	assert.Empty(t, d2.Drain, "no victim is drained again")
	assert.Empty(t, d2.Admit, "the replicas wait for their victims")
	for _, x := range d.Drain {
		ex, err := r.Explain(x.ID)
		require.NoError(t, err)
		assert.Equal(t, gang.Draining, ex.State, x.ID)
	}
	for _, x := range d.Drain {
		require.NoError(t, r.Exited(later, x.ID, gang.ExitDrained))
	}
	d3 := r.Schedule(later)
	require.Len(t, d3.Admit, len(d.Nominate), "every replica starts once its victims exited")
	want := map[string][]fleet.PodAssignment{}
	for _, n := range d.Nominate {
		want[n.ID] = n.Pods
	}
	for _, a := range d3.Admit {
		assert.Equal(t, want[a.ID], a.Pods, "%s starts where it was nominated", a.ID)
	}
	require.NoError(t, r.CheckInvariants())
}

// A victim the host drained past its deadline is asked to be killed at
// once after a rebuild, with its original deadline: the rebuild extends
// nothing.
func TestAdoptedDrainKeepsItsDeadline(t *testing.T) {
	s, specs, d := spikeOverBatch(t)
	x := d.Drain[0]
	r, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	late := x.Deadline.Add(time.Second)
	for _, v := range s.Snapshot().Running {
		a := fleet.Adoption{Workload: specs[v.ID], Started: v.Started, Pods: v.Pods}
		if v.ID == x.ID {
			a.Drain = &fleet.AdoptedDrain{Since: t0.Add(time.Hour), Deadline: x.Deadline, Reason: x.Reason}
		}
		require.NoError(t, r.Adopt(late, a))
	}
	d2 := r.Schedule(late)
	require.Len(t, d2.Kill, 1)
	assert.Equal(t, x.ID, d2.Kill[0].ID)
	assert.Equal(t, x.Deadline, d2.Kill[0].Deadline)
	assert.Equal(t, time.Second, d2.Kill[0].Overdue)
}

// A gang that survives node loss is adopted with its lost pod: the node
// may be back, cordoned, and hold other work, and the gang still waits
// for a replacement rather than being refused as "0 pods given".
func TestAdoptLostPodOfAGangThatSurvivesNodeLoss(t *testing.T) {
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	g := training("gang", 4, fleet.ClassReservedResearch, "research")
	g.Topology = gang.TopologyRequest{Required: "leaf"}
	g.Drain.SurvivesNodeLoss = true
	var pods []fleet.PodAssignment
	for i := 1; i < 4; i++ {
		pods = append(pods, fleet.PodAssignment{PodSet: "workers", Index: i, Node: fmt.Sprintf("node-0-0-%d", i), GPUs: 8})
	}
	lost := fleet.LostPodView{Pod: fleet.PodAssignment{PodSet: "workers", Index: 0, Node: "node-0-0-0", GPUs: 8}, Since: t0.Add(time.Minute)}
	now := t0.Add(2 * time.Minute)
	require.NoError(t, s.Adopt(now, fleet.Adoption{Workload: g, Started: t0, Pods: pods, Lost: []fleet.LostPodView{lost}}))
	small := gang.Workload{ID: "small", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}, Drain: gang.DrainContract{Preemptible: true}}
	require.NoError(t, s.Adopt(now, fleet.Adoption{Workload: small, Started: now,
		Pods: []fleet.PodAssignment{{PodSet: "p", Node: "node-0-0-0", GPUs: 8}}}))
	_, err = s.SetNodeHealth(now, "node-0-0-0", topology.Cordoned)
	require.NoError(t, err)
	require.NoError(t, s.CheckInvariants())
	d := s.Schedule(now)
	require.Len(t, d.Replace, 1, "the lost rank gets a node of its leaf")
	assert.Equal(t, "node-0-0-0", d.Replace[0].OldNode)
	assert.Equal(t, "node-0-0-4", d.Replace[0].NewNode)
	assert.Equal(t, time.Minute, d.Replace[0].Wait, "waiting since it was lost")
}

// Adopt refuses, whole and changing nothing, what does not add up.
func TestAdoptRefusesWhatDoesNotAddUp(t *testing.T) {
	s, specs, d := spikeOverBatch(t)
	now := t0.Add(2 * time.Hour)
	victim := d.Drain[0]
	var pods []fleet.PodAssignment
	for _, v := range s.Snapshot().Running {
		if v.ID == victim.ID {
			pods = v.Pods
		}
	}
	r, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	held := []fleet.PodAssignment{{PodSet: "p", Node: "node-3-7-7", GPUs: 8}}
	require.NoError(t, r.Adopt(now, fleet.Adoption{Workload: specs["infer-255"], Started: t0, Pods: held}))
	before := r.Snapshot()
	spec := specs[victim.ID]
	elastic := spec
	elastic.PodSets = []gang.PodSet{{Name: "p", Count: 2, MinCount: 1, GPUsPerPod: 4}}
	cases := map[string]fleet.Adoption{
		"started in the future":      {Workload: spec, Started: now.Add(time.Second), Pods: pods},
		"submitted after it started": {Workload: spec, Submitted: t0.Add(time.Minute), Started: t0, Pods: pods},
		"drain deadline not after its start": {Workload: spec, Started: t0, Pods: pods,
			Drain: &fleet.AdoptedDrain{Since: t0.Add(time.Hour), Deadline: t0.Add(time.Hour), Reason: gang.DrainReclaim}},
		"drain before the run": {Workload: spec, Started: t0, Pods: pods,
			Drain: &fleet.AdoptedDrain{Since: t0.Add(-time.Hour), Deadline: t0.Add(time.Hour), Reason: gang.DrainReclaim}},
		"drain with no reason": {Workload: spec, Started: t0, Pods: pods,
			Drain: &fleet.AdoptedDrain{Since: t0, Deadline: t0.Add(time.Hour)}},
		"live beneficiary it was not drained for": {Workload: spec, Started: t0, Pods: pods,
			Drain: &fleet.AdoptedDrain{Since: t0, Deadline: t0.Add(time.Hour), Reason: gang.DrainReclaim, Live: []string{"x"}}},
		"kill asked before the deadline": {Workload: spec, Started: t0, Pods: pods,
			Drain: &fleet.AdoptedDrain{Since: t0, Deadline: t0.Add(time.Hour), Reason: gang.DrainReclaim, KillAsked: t0}},
		"a pending workload with pods":         {Workload: specs["replica-0"], Pods: pods},
		"a pending workload that drains":       {Workload: specs["replica-0"], Drain: &fleet.AdoptedDrain{Reason: gang.DrainReclaim}},
		"a running workload with a nomination": {Workload: spec, Started: t0, Pods: pods, Nominated: pods},
		"a nomination on GPUs held by others":  {Workload: specs["replica-0"], Nominated: []fleet.PodAssignment{{PodSet: "server", Node: "node-3-7-7", GPUs: 8}}},
		"a gang that does not survive node loss loses a pod": {Workload: spec, Started: t0,
			Lost: []fleet.LostPodView{{Pod: pods[0], Since: t0}}},
		"a workload that is not elastic gives up a pod": {Workload: spec, Started: t0,
			Shrinking: []fleet.ShrinkingPod{{Pod: pods[0], Drain: fleet.AdoptedDrain{Since: t0, Deadline: t0.Add(time.Hour), Reason: gang.DrainReclaim}}}},
		"a pod given up that it does not run": {Workload: elastic, Started: t0,
			Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: pods[0].Node, GPUs: 4}},
			Shrinking: []fleet.ShrinkingPod{{Pod: fleet.PodAssignment{PodSet: "p", Index: 0, Node: pods[0].Node, GPUs: 4},
				Drain: fleet.AdoptedDrain{Since: t0, Deadline: t0.Add(time.Hour), Reason: gang.DrainReclaim}}}},
		"a split pod whose workload still runs": {Workload: spec, Started: t0, Pods: pods, SplitOf: "infer-255",
			Drain: &fleet.AdoptedDrain{Since: t0, Deadline: t0.Add(time.Hour), Reason: gang.DrainReclaim}},
	}
	for name, a := range cases {
		t.Run(name, func(t *testing.T) {
			err := r.Adopt(now, a)
			require.Error(t, err)
			assert.ErrorIs(t, err, fleet.ErrInvalid)
			assert.Equal(t, before, r.Snapshot(), "a refused adoption changes nothing")
		})
	}
}

// oneLeaf is the reference config on one leaf of nodes 8-GPU nodes, with
// prod-inference's nominal quota and lending limit as given and no quota
// for research: batch can only borrow inference's.
func oneLeaf(nodes int, inference int64, lending quota.Limit) fleet.Config {
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"}, Fanout: []int{1, nodes},
		GPUsPerNode: 8, Flavor: "H100"})
	for i := range cfg.Quota.Nodes {
		switch n := &cfg.Quota.Nodes[i]; n.Name {
		case "prod-inference":
			n.Quotas[0].Nominal, n.Quotas[0].LendingLimit = inference, lending
		case "research":
			n.Quotas[0].Nominal = 0
		}
	}
	return cfg
}

// A victim drained only to free quota keeps counting it for a beneficiary
// that already started, until it exits: a rebuild by adoption must not
// hand that quota to anyone else meanwhile.
func TestAdoptKeepsQuotaPromisedToAStartedBeneficiary(t *testing.T) {
	cfg := oneLeaf(3, 8, quota.LimitOf(8))
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	filler := gang.Workload{ID: "filler", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}, Drain: gang.DrainContract{Preemptible: true}}
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: filler, Started: t0,
		Pods: []fleet.PodAssignment{{PodSet: "p", Node: "node-0-0", GPUs: 8}}}))
	now := t0.Add(time.Hour)
	// Its node cordoned, the filler's GPUs cannot be the replica's: the
	// replica goes to the free node, and the filler frees quota only.
	_, err = s.SetNodeHealth(now, "node-0-0", topology.Cordoned)
	require.NoError(t, err)
	require.NoError(t, s.Submit(now, replica("replica", 8)))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1, "the filler drains to give inference its quota back")
	d = s.Schedule(now)
	require.Len(t, d.Admit, 1, "the replica starts on the free node while the filler drains")
	rep := d.Admit[0]

	// Rebuild from what the host saw.
	r, err := fleet.New(cfg)
	require.NoError(t, err)
	x := s.Snapshot()
	for _, v := range x.Running {
		a := fleet.Adoption{Workload: filler, Started: v.Started, Pods: v.Pods}
		if v.ID == "replica" {
			a.Workload = replica("replica", 8)
		}
		if v.Drain != nil {
			a.Drain = &fleet.AdoptedDrain{Since: v.Drain.Since, Deadline: v.Drain.Deadline, Reason: v.Drain.Reason,
				Beneficiaries: v.Drain.Beneficiaries, Live: v.Drain.Live}
			assert.Equal(t, []string{"replica"}, v.Drain.Live, "the started replica still counts on the filler")
		}
		require.NoError(t, r.Adopt(now, a), v.ID)
	}
	_, err = r.SetNodeHealth(now, "node-0-0", topology.Cordoned)
	require.NoError(t, err)
	assert.Equal(t, rep.Pods, x.Running[slices.IndexFunc(x.Running, func(v fleet.RunningView) bool { return v.ID == "replica" })].Pods)
	more := filler
	more.ID = "more"
	var why []string
	for _, sc := range []*fleet.Scheduler{s, r} {
		require.NoError(t, sc.Submit(now, more))
		d := sc.Schedule(now.Add(time.Second))
		assert.Empty(t, d.Admit, "the filler's quota is promised to the replica until it exits")
		assert.Empty(t, d.Drain)
		x, err := sc.Explain("more")
		require.NoError(t, err)
		why = append(why, x.Message)
	}
	assert.Equal(t, why[0], why[1], "the rebuilt scheduler sees the filler as promised, as the one that never stopped")
	assert.Contains(t, why[1], "1 draining or claimed")
}

// An elastic workload gives up its highest-indexed pods first, in
// whatever order the host listed them when it adopted it.
func TestShrinkGivesUpTheHighestIndexWhateverTheAdoptionOrder(t *testing.T) {
	cfg := oneLeaf(2, 16, quota.LimitOf(16))
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	w := gang.Workload{ID: "elastic", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: 4, MinCount: 1, GPUsPerPod: 4}}, Drain: gang.DrainContract{Preemptible: true}}
	var pods []fleet.PodAssignment
	for _, i := range []int{3, 1, 2, 0} {
		pods = append(pods, fleet.PodAssignment{PodSet: "p", Index: i, Node: fmt.Sprintf("node-0-%d", i/2), GPUs: 4})
	}
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods}))
	now := t0.Add(time.Hour)
	require.NoError(t, s.Submit(now, replica("r", 4)))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1, "one pod makes room for the replica")
	assert.Equal(t, "elastic", d.Drain[0].Of)
	assert.Equal(t, 3, d.Drain[0].Pod.Index, "the highest index goes first")
}

// A nomination adopted with the ready time Decisions.Nominate gave keeps
// it, whichever of its victims have exited since; without one it is ready
// by the deadlines of the victims still draining. A ready time before
// such a deadline is moved to it: capacity cannot be back earlier.
func TestAdoptedNominationKeepsItsReadyTime(t *testing.T) {
	s, specs, d := spikeOverBatch(t)
	now := t0.Add(time.Hour)
	snap := s.Snapshot()
	ready := map[string]time.Time{}
	for _, p := range snap.Pending {
		if p.Nomination != nil {
			ready[p.ID] = p.Nomination.ReadyBy
		}
	}
	for _, n := range d.Nominate {
		require.Equal(t, ready[n.ID], n.ReadyBy, "%s: the decision gives the nomination's ready time", n.ID)
	}

	later := now.Add(30 * time.Second)
	adopt := func(readyBy func(fleet.Nomination) time.Time) *fleet.Scheduler {
		r, err := fleet.New(fleet.ReferenceConfig())
		require.NoError(t, err)
		for _, v := range snap.Running {
			a := fleet.Adoption{Workload: specs[v.ID], Started: v.Started, Pods: v.Pods}
			if v.Drain != nil {
				a.Drain = &fleet.AdoptedDrain{Since: v.Drain.Since, Deadline: v.Drain.Deadline, Reason: v.Drain.Reason,
					Beneficiaries: v.Drain.Beneficiaries, Live: v.Drain.Live}
			}
			require.NoError(t, r.Adopt(later, a), v.ID)
		}
		for _, n := range d.Nominate {
			require.NoError(t, r.Adopt(later, fleet.Adoption{Workload: specs[n.ID], Submitted: now,
				Nominated: n.Pods, NominatedReadyBy: readyBy(n)}), n.ID)
		}
		require.NoError(t, r.CheckInvariants())
		return r
	}
	readyOf := func(r *fleet.Scheduler) map[string]time.Time {
		got := map[string]time.Time{}
		for _, p := range r.Snapshot().Pending {
			if p.Nomination != nil {
				got[p.ID] = p.Nomination.ReadyBy
			}
		}
		return got
	}

	kept := func(n fleet.Nomination) time.Time { return n.ReadyBy.Add(time.Hour) }
	for id, at := range readyOf(adopt(kept)) {
		assert.Equal(t, ready[id].Add(time.Hour), at, "%s keeps the ready time the host kept", id)
	}
	for id, at := range readyOf(adopt(func(fleet.Nomination) time.Time { return time.Time{} })) {
		assert.Equal(t, ready[id], at, "%s: derived from its victims' deadlines", id)
	}
	early := func(fleet.Nomination) time.Time { return later }
	for id, at := range readyOf(adopt(early)) {
		assert.Equal(t, ready[id], at, "%s: not before its victims' deadlines", id)
		assert.True(t, at.After(later), id)
	}
}

// A pod an elastic workload gives up, adopted with a drain that names a
// beneficiary the host never adopts again, stops counting for it at the
// next cycle, as a whole workload's adopted drain does: it drains as an
// ordinary victim.
func TestAdoptedShrinkingPodForgetsABeneficiaryNeverAdopted(t *testing.T) {
	s, err := fleet.New(oneLeaf(2, 16, quota.LimitOf(16)))
	require.NoError(t, err)
	w := gang.Workload{ID: "elastic", Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: 4, MinCount: 1, GPUsPerPod: 4}}, Drain: gang.DrainContract{Preemptible: true}}
	var pods []fleet.PodAssignment
	for i := range 3 {
		pods = append(pods, fleet.PodAssignment{PodSet: "p", Index: i, Node: fmt.Sprintf("node-0-%d", i/2), GPUs: 4})
	}
	given := fleet.ShrinkingPod{Pod: fleet.PodAssignment{PodSet: "p", Index: 3, Node: "node-0-1", GPUs: 4},
		Drain: fleet.AdoptedDrain{Since: t0, Deadline: t0.Add(time.Hour), Reason: gang.DrainReclaim,
			Beneficiaries: []string{"gone"}, Live: []string{"gone"}}}
	require.NoError(t, s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: pods, Shrinking: []fleet.ShrinkingPod{given}}))
	live := func() []string {
		for _, v := range s.Snapshot().Running {
			if v.SplitOf == "elastic" && v.Drain != nil {
				return v.Drain.Live
			}
		}
		t.Fatal("the pod given up is not draining")
		return nil
	}
	assert.Equal(t, []string{"gone"}, live(), "as adopted")
	s.Schedule(t0.Add(time.Minute))
	assert.Empty(t, live(), "nobody adopted counts on it")
	require.NoError(t, s.CheckInvariants())
}
