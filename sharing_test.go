package fleet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// shareConfig is a small mixed fleet: two 8-GPU H100 nodes that share
// GPUs by time-slicing, one MIG-partitioned H100 node and one A100 node,
// each with 64 cores and 512 GiB; a queue with quotas of GPUs and cpu
// for both models, and one with no quota of cpu.
func shareConfig() fleet.Config {
	res := map[string]int64{"cpu": 64000, "memory": 512 << 30}
	node := func(name, leaf, flavor string, mig bool) topology.NodeSpec {
		return topology.NodeSpec{Name: name, Path: []string{leaf}, GPUs: 8, Flavor: flavor, MIG: mig, Resources: res}
	}
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Spec{Levels: []string{"leaf", "node"}, Nodes: []topology.NodeSpec{
		node("h0", "l0", "H100", false), node("h1", "l0", "H100", false), node("m0", "l1", "H100", true), node("a0", "l1", "A100", false)}}
	cfg.Quota = quota.Spec{Flavors: []string{"H100", "A100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
		{Name: "team", Kind: quota.Queue, Quotas: []quota.FlavorQuota{
			{Flavor: "H100", Nominal: 16, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 96000}}},
			{Flavor: "A100", Nominal: 8, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 32000}}}}},
		{Name: "lean", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}}}}}
	return cfg
}

func sharedWork(id string, ps gang.PodSet) gang.Workload {
	if ps.Name == "" {
		ps.Name = "p"
	}
	return gang.Workload{ID: id, Queue: "team", Priority: 10, Shape: gang.Inference, Flavor: "H100", PodSets: []gang.PodSet{ps}}
}

// TestSharedWorkEndToEnd admits fractional, MIG, CPU-only and
// resource-requesting work, checks what quota and the nodes are charged,
// and that every way of ending (exit, kill after a drain, node loss)
// gives it all back.
func TestSharedWorkEndToEnd(t *testing.T) {
	cpu := []gang.Resource{{Name: "cpu", Amount: 4000}, {Name: "memory", Amount: 16 << 30}}
	for _, tc := range []struct {
		name      string
		ps        gang.PodSet
		milli     int64 // quota charge of GPUs, thousandths
		cpu       int64 // quota charge of cpu
		node      string
		shareGPU  bool // every pod holds a share of one GPU, all on the same GPU
		end       string
		wholeGPUs int
	}{
		{name: "half GPUs", ps: gang.PodSet{Count: 2, GPUShare: 500}, milli: 1000, node: "h0", shareGPU: true, end: "exit"},
		{name: "quarter GPUs with cpu", ps: gang.PodSet{Count: 4, GPUShare: 250, Resources: cpu}, milli: 1000, cpu: 16000, node: "h0", shareGPU: true, end: "kill"},
		{name: "MIG 1g.10gb", ps: gang.PodSet{Count: 3, MIG: "1g.10gb"}, milli: 3 * 143, node: "m0", end: "node lost"},
		{name: "MIG 1g.10gb carving a GPU", ps: gang.PodSet{Count: 7, MIG: "1g.10gb"}, milli: 1000, node: "m0", end: "exit"},
		{name: "MIG 4g.40gb and beside it nothing", ps: gang.PodSet{Count: 1, MIG: "4g.40gb"}, milli: 572, node: "m0", end: "exit"},
		{name: "CPU only", ps: gang.PodSet{Count: 2, Resources: cpu}, cpu: 8000, node: "h0", end: "exit"},
		{name: "whole GPUs with cpu", ps: gang.PodSet{Count: 1, GPUsPerPod: 2, Resources: cpu}, milli: 2000, cpu: 4000, node: "h0", end: "node lost", wholeGPUs: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fleet.New(shareConfig())
			require.NoError(t, err)
			w := sharedWork("w", tc.ps)
			require.NoError(t, s.Submit(t0, w))
			d := s.Schedule(t0)
			require.Len(t, d.Admit, 1)
			require.NoError(t, s.CheckInvariants())
			a := d.Admit[0]
			require.Len(t, a.Pods, tc.ps.Count)
			for _, p := range a.Pods {
				assert.Equal(t, tc.node, p.Node)
				assert.Equal(t, tc.ps.GPUShare, p.Share)
				assert.Equal(t, tc.ps.MIG, p.MIG)
				if tc.shareGPU {
					assert.Equal(t, a.Pods[0].GPU, p.GPU, "shares pack on one GPU")
				}
			}
			if tc.ps.MIG != "" {
				taken := map[[2]int]bool{}
				for _, p := range a.Pods {
					k := [2]int{p.GPU, p.Slice}
					assert.False(t, taken[k], "slice %v booked twice", k)
					taken[k] = true
				}
			}
			assert.Equal(t, tc.milli, s.UsageOf("team", "H100", ""))
			assert.Equal(t, tc.cpu, s.UsageOf("team", "H100", "cpu"))
			cores, milli := s.NodeResource(tc.node, "cpu")
			assert.Equal(t, int64(tc.ps.Count)*tc.ps.Resource("cpu"), cores)
			assert.Equal(t, int(tc.milli), milli)
			snap := s.Snapshot()
			require.Len(t, snap.Running, 1)
			assert.Equal(t, tc.milli, snap.Running[0].MilliGPUs)
			assert.Equal(t, tc.wholeGPUs, snap.Running[0].GPUs)

			now := t0.Add(time.Minute)
			switch tc.end {
			case "exit":
				require.NoError(t, s.Exited(now, "w", gang.ExitFinished))
			case "kill":
				_, err := s.RequestDrain(now, "w", time.Second)
				require.NoError(t, err)
				d := s.Schedule(now.Add(time.Minute))
				require.Len(t, d.Kill, 1)
				require.NoError(t, s.Exited(now.Add(time.Minute), "w", gang.ExitKilled))
			case "node lost":
				affected, err := s.SetNodeHealth(now, tc.node, topology.Down)
				require.NoError(t, err)
				assert.Equal(t, []string{"w"}, affected)
			}
			require.NoError(t, s.CheckInvariants())
			assert.Zero(t, s.UsageOf("team", "H100", ""))
			assert.Zero(t, s.UsageOf("team", "H100", "cpu"))
			cores, milli = s.NodeResource(tc.node, "cpu")
			assert.Zero(t, cores)
			assert.Zero(t, milli)
		})
	}
}

// TestSharedBadInput: shares outside (0, 1000], a MIG profile the
// accepted models lack, an unknown resource and a minimum above the count
// are refused with typed errors, and the scheduler is unchanged.
func TestSharedBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		ps   gang.PodSet
		mod  func(*gang.Workload)
		errs []error
	}{
		{name: "share above one GPU", ps: gang.PodSet{Count: 1, GPUShare: 1001}, errs: []error{fleet.ErrInvalid, gang.ErrBadShare}},
		{name: "negative share", ps: gang.PodSet{Count: 1, GPUShare: -5}, errs: []error{fleet.ErrInvalid, gang.ErrBadShare}},
		{name: "share beside whole GPUs", ps: gang.PodSet{Count: 1, GPUsPerPod: 1, GPUShare: 500}, errs: []error{fleet.ErrInvalid, gang.ErrBadShare}},
		{name: "unknown MIG profile", ps: gang.PodSet{Count: 1, MIG: "9g.99gb"}, errs: []error{fleet.ErrNeverFits, placement.ErrUnknownProfile}},
		{name: "MIG on a model without MIG nodes", ps: gang.PodSet{Count: 1, MIG: "1g.10gb"},
			mod: func(w *gang.Workload) { w.Flavor = "A100" }, errs: []error{fleet.ErrNeverFits, placement.ErrUnknownProfile}},
		{name: "unknown resource", ps: gang.PodSet{Count: 1, GPUShare: 100, Resources: []gang.Resource{{Name: "tpu", Amount: 1}}},
			errs: []error{fleet.ErrNeverFits, placement.ErrUnknownResource}},
		{name: "resource amount zero", ps: gang.PodSet{Count: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 0}}},
			errs: []error{fleet.ErrInvalid, gang.ErrBadResource}},
		{name: "shares beyond the queue's reach", ps: gang.PodSet{Count: 40, GPUShare: 500}, errs: []error{fleet.ErrNeverFits}},
		{name: "cores beyond the queue's reach", ps: gang.PodSet{Count: 13, Resources: []gang.Resource{{Name: "cpu", Amount: 8000}}}, errs: []error{fleet.ErrNeverFits}},
		{name: "a resource the queue has no quota of", ps: gang.PodSet{Count: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 1000}}},
			mod: func(w *gang.Workload) { w.Queue = "lean" }, errs: []error{fleet.ErrNeverFits}},
		{name: "min above count", ps: gang.PodSet{Count: 2, MinCount: 3, GPUShare: 500}, errs: []error{fleet.ErrInvalid, gang.ErrBadMinCount}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fleet.New(shareConfig())
			require.NoError(t, err)
			require.NoError(t, s.Submit(t0, sharedWork("ok", gang.PodSet{Count: 1, GPUShare: 300})))
			s.Schedule(t0)
			before := s.Snapshot()
			w := sharedWork("bad", tc.ps)
			if tc.mod != nil {
				tc.mod(&w)
			}
			err = s.Submit(t0, w)
			for _, e := range tc.errs {
				assert.ErrorIs(t, err, e)
			}
			var fe *fleet.Error
			assert.ErrorAs(t, err, &fe)
			assert.Equal(t, before, s.Snapshot(), "state unchanged")
		})
	}
}

// TestWholeGPUsNeverOnSharedGPUs: a whole-GPU pod takes only GPUs nobody
// uses; the GPU a share sits on is not one of them.
func TestWholeGPUsNeverOnSharedGPUs(t *testing.T) {
	// Two 2-GPU nodes, one cordoned: quota allows 4 GPUs, h0 has room.
	cfg := shareConfig()
	cfg.Topology.Nodes = cfg.Topology.Nodes[:2]
	cfg.Topology.Nodes[0].GPUs, cfg.Topology.Nodes[1].GPUs = 2, 2
	cfg.Quota = quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{{Name: "team", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 4}}}}}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	_, err = s.SetNodeHealth(t0, "h1", topology.Cordoned)
	require.NoError(t, err)
	require.NoError(t, s.Submit(t0, sharedWork("share", gang.PodSet{Count: 1, GPUShare: 100})))
	require.Len(t, s.Schedule(t0).Admit, 1)
	require.NoError(t, s.Submit(t0, sharedWork("two", gang.PodSet{Count: 1, GPUsPerPod: 2})))
	assert.Empty(t, s.Schedule(t0).Admit, "one GPU is shared: two whole GPUs do not fit")
	x, err := s.Explain("two")
	require.NoError(t, err)
	assert.Equal(t, fleet.WaitTopology, x.Waiting)
	require.NoError(t, s.Submit(t0, sharedWork("one", gang.PodSet{Count: 1, GPUsPerPod: 1})))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "one", d.Admit[0].ID)
	require.NoError(t, s.CheckInvariants())
	require.NoError(t, s.Exited(t0, "share", gang.ExitFinished))
	d = s.Schedule(t0)
	assert.Empty(t, d.Admit, "the freed GPU and the whole one's are two, but one is held")
	require.NoError(t, s.Exited(t0, "one", gang.ExitFinished))
	d = s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "two", d.Admit[0].ID)
	require.NoError(t, s.CheckInvariants())
}

// TestModelSets: a workload that accepts H100 or A100 lands where quota
// and room allow, and is charged for the model it landed on.
func TestModelSets(t *testing.T) {
	s, err := fleet.New(shareConfig())
	require.NoError(t, err)
	fill := sharedWork("fill", gang.PodSet{Count: 2, GPUsPerPod: 8})
	require.NoError(t, s.Submit(t0, fill)) // the H100 quota of 16, whole
	require.Len(t, s.Schedule(t0).Admit, 1)
	w := sharedWork("any", gang.PodSet{Count: 1, GPUsPerPod: 4})
	w.Flavor, w.Flavors = "", []string{"H100", "A100"}
	require.NoError(t, s.Submit(t0, w))
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "a0", d.Admit[0].Pods[0].Node)
	snap := s.Snapshot()
	for _, r := range snap.Running {
		if r.ID == "any" {
			assert.Equal(t, "A100", r.Flavor)
		}
	}
	assert.Equal(t, int64(4000), s.UsageOf("team", "A100", ""))
	assert.Equal(t, int64(16000), s.UsageOf("team", "H100", ""))
	require.NoError(t, s.CheckInvariants())

	// H100 quota is full and the A100 node is cordoned: 4 GPUs wait for
	// room on A100, the one model whose quota fits them, and Explain says
	// so with that model's verdict.
	_, err = s.SetNodeHealth(t0, "a0", topology.Cordoned)
	require.NoError(t, err)
	big := sharedWork("big", gang.PodSet{Count: 1, GPUsPerPod: 4})
	big.Flavor, big.Flavors = "", []string{"H100", "A100"}
	require.NoError(t, s.Submit(t0, big))
	assert.Empty(t, s.Schedule(t0).Admit)
	x, err := s.Explain("big")
	require.NoError(t, err)
	assert.Equal(t, fleet.WaitTopology, x.Waiting)
	require.NotNil(t, x.Quota)
	assert.True(t, x.Quota.Fits(), x.Message)
	require.NoError(t, s.Cancel(t0, "big"))
	_, err = s.SetNodeHealth(t0, "a0", topology.Healthy)
	require.NoError(t, err)

	// In preference order, the first model that fits wins even when a
	// later one fits better.
	require.NoError(t, s.Exited(t0, "fill", gang.ExitFinished))
	o := sharedWork("ordered", gang.PodSet{Count: 1, GPUsPerPod: 4})
	o.Flavor, o.Flavors, o.FlavorsInOrder = "", []string{"H100", "A100"}, true
	require.NoError(t, s.Submit(t0, o))
	d = s.Schedule(t0)
	require.Len(t, d.Admit, 1)
	assert.Contains(t, []string{"h0", "h1", "m0"}, d.Admit[0].Pods[0].Node)
	require.NoError(t, s.CheckInvariants())
}

// TestSharedWorkSurvivesRestart: Snapshot and Restore, Adopt from what
// the host was told, and a journal replay keep shares, slices and
// resources where they were.
func TestSharedWorkSurvivesRestart(t *testing.T) {
	s, err := fleet.New(shareConfig())
	require.NoError(t, err)
	var journal bytes.Buffer
	j := fleet.NewJournal(s, &journal)
	cpu := []gang.Resource{{Name: "cpu", Amount: 2000}}
	work := []gang.Workload{
		sharedWork("half", gang.PodSet{Count: 3, GPUShare: 500, Resources: cpu}),
		sharedWork("mig", gang.PodSet{Count: 4, MIG: "2g.20gb"}),
		sharedWork("cpu", gang.PodSet{Count: 2, Resources: cpu}),
		sharedWork("whole", gang.PodSet{Count: 1, GPUsPerPod: 3}),
	}
	var admitted []fleet.Admission
	for i, w := range work {
		require.NoError(t, j.Submit(t0.Add(time.Duration(i)*time.Second), w))
		admitted = append(admitted, j.Schedule(t0.Add(time.Duration(i)*time.Second)).Admit...)
	}
	require.Len(t, admitted, len(work))
	require.NoError(t, j.Exited(t0.Add(time.Minute), "whole", gang.ExitFinished))
	j.Schedule(t0.Add(time.Minute))
	snap := s.Snapshot()

	r, err := fleet.Restore(shareConfig(), snap)
	require.NoError(t, err)
	require.NoError(t, r.CheckInvariants())
	assert.Equal(t, snap, r.Snapshot())

	a, err := fleet.New(shareConfig())
	require.NoError(t, err)
	for i, w := range work[:3] {
		require.NoError(t, a.Adopt(t0.Add(time.Minute), fleet.Adoption{Workload: w, Started: t0.Add(time.Duration(i) * time.Second), Pods: admitted[i].Pods}))
	}
	require.NoError(t, a.CheckInvariants())
	for _, res := range []string{"", "cpu"} {
		assert.Equal(t, s.UsageOf("team", "H100", res), a.UsageOf("team", "H100", res), "usage of %q", res)
	}
	for _, n := range []string{"h0", "h1", "m0"} {
		c1, m1 := s.NodeResource(n, "cpu")
		c2, m2 := a.NodeResource(n, "cpu")
		assert.Equal(t, [2]int64{c1, int64(m1)}, [2]int64{c2, int64(m2)}, "node %s", n)
	}
	// A host naming a slice the spec does not ask for is refused.
	bad := admitted[1].Pods
	bad[0].MIG = "1g.10gb"
	b, _ := fleet.New(shareConfig())
	assert.ErrorIs(t, b.Adopt(t0, fleet.Adoption{Workload: work[1], Started: t0, Pods: bad}), fleet.ErrInvalid)

	replayed, err := fleet.Replay(shareConfig(), bytes.NewReader(journal.Bytes()), nil)
	require.NoError(t, err)
	got, _ := json.Marshal(replayed.Snapshot())
	want, _ := json.Marshal(snap)
	assert.Equal(t, string(want), string(got))
}

// TestPreemptionFreesOnlyWholeGPUs: a whole-GPU beneficiary is given
// only GPUs its victims hold whole; a GPU a share sits on is never
// counted free, so a plan that would need it is not made.
func TestPreemptionFreesOnlyWholeGPUs(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Spec{Levels: []string{"leaf", "node"}, Nodes: []topology.NodeSpec{
		{Name: "n0", Path: []string{"l0"}, GPUs: 4, Flavor: "H100"},
		{Name: "n1", Path: []string{"l0"}, GPUs: 4, Flavor: "H100"}}}
	cfg.Quota.Nodes[1].Quotas[0].Nominal, cfg.Quota.Nodes[1].Quotas[0].LendingLimit = 8, quota.Limit{}
	cfg.Quota.Nodes[2].Quotas[0].Nominal = 0
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	_, err = s.SetNodeHealth(t0, "n1", topology.Cordoned)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, s.Submit(t0, gang.Workload{ID: fmt.Sprintf("b%d", i), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
			Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}, Drain: gang.DrainContract{Preemptible: true}}))
	}
	inference := func(id string, ps gang.PodSet) gang.Workload {
		ps.Name = "p"
		return gang.Workload{ID: id, Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference, PodSets: []gang.PodSet{ps}}
	}
	require.NoError(t, s.Submit(t0, inference("half", gang.PodSet{Count: 1, GPUShare: 500})))
	require.Len(t, s.Schedule(t0).Admit, 4)

	now := t0.Add(10 * time.Minute)
	require.NoError(t, s.Submit(now, inference("four", gang.PodSet{Count: 1, GPUsPerPod: 4})))
	d := s.Schedule(now)
	assert.Empty(t, d.Drain, "three victims free three whole GPUs: four cannot be had on n0")
	assert.Empty(t, d.Admit)
	require.NoError(t, s.CheckInvariants())
	require.NoError(t, s.Cancel(now, "four"))

	require.NoError(t, s.Submit(now, inference("three", gang.PodSet{Count: 1, GPUsPerPod: 3})))
	d = s.Schedule(now)
	require.Len(t, d.Drain, 3)
	require.NoError(t, s.CheckInvariants())
	for _, x := range d.Drain {
		require.NoError(t, s.Exited(now, x.ID, gang.ExitDrained))
	}
	d = s.Schedule(now.Add(time.Second))
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "three", d.Admit[0].ID)
	require.NoError(t, s.CheckInvariants())
}

// TestSharedQuotaExplained: work waiting for quota of cores or of GPU
// shares is told so in the resource's own unit.
func TestSharedQuotaExplained(t *testing.T) {
	s, err := fleet.New(shareConfig())
	require.NoError(t, err)
	cores := func(n int64) []gang.Resource { return []gang.Resource{{Name: "cpu", Amount: n}} }
	require.NoError(t, s.Submit(t0, sharedWork("cores", gang.PodSet{Count: 8, Resources: cores(8000)})))
	require.NoError(t, s.Submit(t0, sharedWork("whole", gang.PodSet{Count: 3, GPUsPerPod: 5})))
	require.NoError(t, s.Submit(t0, sharedWork("share", gang.PodSet{Count: 1, GPUShare: 600})))
	require.Len(t, s.Schedule(t0).Admit, 3)
	require.NoError(t, s.Submit(t0, sharedWork("more-cores", gang.PodSet{Count: 6, Resources: cores(8000)})))
	require.NoError(t, s.Submit(t0, sharedWork("more-share", gang.PodSet{Count: 1, GPUShare: 600})))
	assert.Empty(t, s.Schedule(t0).Admit)
	for id, want := range map[string]string{
		"more-cores": `queue "team": 48000 cpu of H100 do not fit, 32000 available`,
		"more-share": `queue "team": 0.6 H100 GPUs do not fit, 0.4 available`,
	} {
		x, err := s.Explain(id)
		require.NoError(t, err)
		assert.Equal(t, fleet.WaitQuota, x.Waiting)
		assert.Contains(t, x.Message, want)
	}
	require.NoError(t, s.CheckInvariants())
}

// TestModelSetsFungibility: with whenCanBorrow Borrow (Kueue's default) a
// model set takes the best fit even when its quota there is borrowed;
// with TryNextFlavor it keeps to a model it fits within nominal quota.
func TestModelSetsFungibility(t *testing.T) {
	for _, tc := range []struct {
		when quota.WhenCanBorrow
		node string
	}{{quota.Borrow, "h0"}, {quota.TryNextFlavor, "a0"}} {
		t.Run(tc.when.String(), func(t *testing.T) {
			// "team" has no H100 quota of its own (it borrows "other"'s)
			// and 8 A100 GPUs. h0 holds 4 GPUs of "other"'s work, so a
			// 4-GPU pod fits it tighter than the empty a0.
			cfg := shareConfig()
			cfg.Quota.Nodes = []quota.NodeSpec{
				{Name: "all", Kind: quota.Cohort},
				{Name: "team", Parent: "all", Kind: quota.Queue, FlavorFungibility: quota.Fungibility{WhenCanBorrow: tc.when},
					Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}, {Flavor: "A100", Nominal: 8}}},
				{Name: "other", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 24}}},
			}
			s, err := fleet.New(cfg)
			require.NoError(t, err)
			for _, n := range []string{"h1", "m0"} {
				_, err := s.SetNodeHealth(t0, n, topology.Cordoned)
				require.NoError(t, err)
			}
			o := sharedWork("o", gang.PodSet{Count: 1, GPUsPerPod: 4})
			o.Queue = "other"
			require.NoError(t, s.Submit(t0, o))
			require.Len(t, s.Schedule(t0).Admit, 1)
			w := sharedWork("any", gang.PodSet{Count: 1, GPUsPerPod: 4})
			w.Flavor, w.Flavors = "", []string{"H100", "A100"}
			require.NoError(t, s.Submit(t0, w))
			d := s.Schedule(t0)
			require.Len(t, d.Admit, 1)
			assert.Equal(t, tc.node, d.Admit[0].Pods[0].Node)
			assert.Equal(t, tc.when == quota.Borrow, d.Admit[0].Borrowing)
			require.NoError(t, s.CheckInvariants())
		})
	}
}

// TestSharedJournalReplaysByteForByte records a random run of shared,
// MIG, CPU-only, whole-GPU and model-set work with exits and node
// failures, and replays it: the decisions must be byte-identical.
func TestSharedJournalReplaysByteForByte(t *testing.T) {
	s, err := fleet.New(shareConfig())
	require.NoError(t, err)
	var journal, recorded bytes.Buffer
	j := fleet.NewJournal(s, &journal)
	enc := json.NewEncoder(&recorded)
	r := rand.New(rand.NewPCG(5, 6))
	now := t0
	var running []string
	shared := 0
	for i := range 600 {
		now = now.Add(time.Duration(r.IntN(60)) * time.Second)
		switch op := r.IntN(10); {
		case op < 5:
			ps := gang.PodSet{Count: 1 + r.IntN(3)}
			switch r.IntN(5) {
			case 0:
				ps.GPUShare = []int{100, 250, 500, 750}[r.IntN(4)]
			case 1:
				ps.MIG = []string{"1g.10gb", "2g.20gb", "3g.40gb"}[r.IntN(3)]
			case 2:
				ps.Resources = []gang.Resource{{Name: "cpu", Amount: int64(1+r.IntN(8)) * 1000}}
			default:
				ps.GPUsPerPod = 1 + r.IntN(4)
			}
			w := sharedWork(fmt.Sprintf("w%d", i), ps)
			if ps.GPUsPerPod > 0 && r.IntN(2) == 0 {
				w.Flavor, w.Flavors = "", []string{"H100", "A100"}
			}
			_ = j.Submit(now, w)
		case op < 7 && len(running) > 0:
			k := r.IntN(len(running))
			_ = j.Exited(now, running[k], gang.ExitFinished)
			running = append(running[:k], running[k+1:]...)
		case op == 7:
			affected, _ := j.SetNodeHealth(now, []string{"h0", "h1", "m0", "a0"}[r.IntN(4)], topology.Health(r.IntN(3)))
			for _, id := range affected {
				if k := slices.Index(running, id); k >= 0 {
					running = append(running[:k], running[k+1:]...)
				}
			}
		default:
			d := j.Schedule(now)
			require.NoError(t, j.Err())
			require.NoError(t, enc.Encode(d))
			for _, a := range d.Admit {
				running = append(running, a.ID)
				if a.Pods[0].Share > 0 || a.Pods[0].MIG != "" {
					shared++
				}
			}
		}
		require.NoError(t, s.CheckInvariants())
	}
	assert.Positive(t, shared, "no shared work ran")
	var replayed bytes.Buffer
	enc2 := json.NewEncoder(&replayed)
	_, err = fleet.Replay(shareConfig(), bytes.NewReader(journal.Bytes()), func(d fleet.Decisions) {
		require.NoError(t, enc2.Encode(d))
	})
	require.NoError(t, err)
	assert.Equal(t, recorded.String(), replayed.String())
}
