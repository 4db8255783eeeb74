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

// reclaimConfig is one node of gpus H100s (MIG-partitioned or not) with
// 64 cores, in a cohort where prod-inference is guaranteed all of it
// (GPUs and cores) and batch, guaranteed nothing, borrows it.
func reclaimConfig(gpus int, mig bool) fleet.Config {
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Spec{Levels: []string{"leaf", "node"}, Nodes: []topology.NodeSpec{
		{Name: "n0", Path: []string{"l0"}, GPUs: gpus, Flavor: "H100", MIG: mig, Resources: map[string]int64{"cpu": 64000}}}}
	cfg.Quota.Resources = []string{"cpu"}
	cfg.Quota.Nodes = []quota.NodeSpec{
		{Name: "fleet", Kind: quota.Cohort},
		{Name: "prod-inference", Parent: "fleet", Kind: quota.Queue,
			Quotas:     []quota.FlavorQuota{{Flavor: "H100", Nominal: int64(gpus), Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 64000}}}},
			Preemption: quota.Rules{WithinQueue: quota.WithinQueueLowerPriority, ReclaimWithinCohort: quota.ReclaimAny}},
		{Name: "batch", Parent: "fleet", Kind: quota.Queue,
			Quotas:     []quota.FlavorQuota{{Flavor: "H100", Nominal: 0, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 0}}}},
			Preemption: quota.Rules{WithinQueue: quota.WithinQueueLowerPriority}},
	}
	return cfg
}

// TestReclaimSharedWork: a queue under its nominal quota gets its GPUs,
// slices and cores back from borrowers holding shares, MIG slices, cores
// or whole GPUs, whatever it asks for itself: the fewest victims whose
// exit makes the request fit drain under the contract (deadline, then
// kill), named with their beneficiary but nominating nothing; it waits
// for them without draining more, and is admitted once they have exited.
func TestReclaimSharedWork(t *testing.T) {
	cpu := func(m int64) []gang.Resource { return []gang.Resource{{Name: "cpu", Amount: m}} }
	for _, tc := range []struct {
		name    string
		gpus    int
		mig     bool
		fillers []gang.PodSet // each a batch workload, admitted in order
		ask     gang.PodSet
		victims int
	}{
		{name: "a whole GPU from shares", gpus: 4,
			fillers: repeatSets(4, gang.PodSet{Count: 2, GPUShare: 500}),
			ask:     gang.PodSet{Count: 1, GPUsPerPod: 1}, victims: 1},
		{name: "a share from whole GPUs", gpus: 4,
			fillers: repeatSets(4, gang.PodSet{Count: 1, GPUsPerPod: 1}),
			ask:     gang.PodSet{Count: 1, GPUShare: 500}, victims: 1},
		{name: "a half share from quarter shares", gpus: 2,
			fillers: repeatSets(8, gang.PodSet{Count: 1, GPUShare: 250}),
			ask:     gang.PodSet{Count: 1, GPUShare: 500}, victims: 2},
		{name: "a MIG slice from slices", gpus: 1, mig: true,
			fillers: repeatSets(6, gang.PodSet{Count: 1, MIG: "1g.10gb"}),
			ask:     gang.PodSet{Count: 1, MIG: "2g.20gb"}, victims: 2},
		{name: "cores from CPU-only work", gpus: 2,
			fillers: repeatSets(4, gang.PodSet{Count: 1, Resources: cpu(16000)}),
			ask:     gang.PodSet{Count: 1, Resources: cpu(24000)}, victims: 2},
		{name: "four whole GPUs from whole GPUs and shares", gpus: 4,
			fillers: append(repeatSets(2, gang.PodSet{Count: 1, GPUsPerPod: 1}), repeatSets(2, gang.PodSet{Count: 2, GPUShare: 500})...),
			ask:     gang.PodSet{Count: 1, GPUsPerPod: 4}, victims: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fleet.New(reclaimConfig(tc.gpus, tc.mig))
			require.NoError(t, err)
			for i, ps := range tc.fillers {
				ps.Name = "p"
				require.NoError(t, s.Submit(t0, gang.Workload{ID: fmt.Sprintf("b%d", i), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
					Shape: gang.Batch, PodSets: []gang.PodSet{ps}, Drain: gang.DrainContract{Preemptible: true}}))
				require.Len(t, s.Schedule(t0).Admit, 1, "filler %d", i)
			}
			now := t0.Add(10 * time.Minute)
			tc.ask.Name = "p"
			require.NoError(t, s.Submit(now, gang.Workload{ID: "inf", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
				Shape: gang.Inference, PodSets: []gang.PodSet{tc.ask}}))
			d := s.Schedule(now)
			require.Empty(t, d.Admit)
			require.Len(t, d.Drain, tc.victims)
			var victims []string
			for _, x := range d.Drain {
				assert.Equal(t, gang.DrainReclaim, x.Reason)
				assert.Equal(t, []string{"inf"}, x.Beneficiaries)
				assert.Equal(t, now.Add(fleet.DefaultGrace), x.Deadline)
				victims = append(victims, x.ID)
			}
			slices.Sort(victims)
			require.NoError(t, s.CheckInvariants())
			snap := s.Snapshot()
			require.Len(t, snap.Pending, 1)
			assert.Equal(t, victims, snap.Pending[0].Reclaiming)
			assert.False(t, snap.Pending[0].Nominated)
			x, err := s.Explain("inf")
			require.NoError(t, err)
			assert.Equal(t, fleet.WaitVictims, x.Waiting)

			// Waiting for them, it drains nobody else; a restart keeps
			// the drains it waits for; at the deadline the host kills.
			s, err = fleet.Restore(reclaimConfig(tc.gpus, tc.mig), s.Snapshot())
			require.NoError(t, err)
			d = s.Schedule(now.Add(time.Minute))
			assert.Empty(t, d.Drain)
			assert.Empty(t, d.Admit)
			late := now.Add(fleet.DefaultGrace)
			d = s.Schedule(late)
			assert.Empty(t, d.Drain)
			require.Len(t, d.Kill, tc.victims)
			for _, k := range d.Kill {
				require.NoError(t, s.Exited(late, k.ID, gang.ExitKilled))
			}
			d = s.Schedule(late.Add(time.Second))
			require.Len(t, d.Admit, 1)
			assert.Equal(t, "inf", d.Admit[0].ID)
			assert.Empty(t, d.Drain)
			require.NoError(t, s.CheckInvariants())
		})
	}
}

// TestReclaimSharedRespectsRules: shares are reclaimed only as whole
// GPUs are: never from work of a higher priority in the same queue, nor
// from a queue within its own nominal quota, nor from work that does not
// checkpoint, nor before its minimum runtime.
func TestReclaimSharedRespectsRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filler gang.Workload
		at     time.Duration
	}{
		{name: "higher priority of its own queue", filler: gang.Workload{Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
			Drain: gang.DrainContract{Preemptible: true}}, at: 10 * time.Minute},
		{name: "does not checkpoint", filler: gang.Workload{Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch}, at: 10 * time.Minute},
		{name: "within its minimum runtime", filler: gang.Workload{Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
			Drain: gang.DrainContract{Preemptible: true}}, at: 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fleet.New(reclaimConfig(2, false))
			require.NoError(t, err)
			for i := range 4 {
				w := tc.filler
				w.ID, w.Shape = fmt.Sprintf("b%d", i), gang.Batch
				w.PodSets = []gang.PodSet{{Name: "p", Count: 1, GPUShare: 500}}
				require.NoError(t, s.Submit(t0, w))
			}
			require.Len(t, s.Schedule(t0).Admit, 4)
			now := t0.Add(tc.at)
			require.NoError(t, s.Submit(now, gang.Workload{ID: "inf", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
				Priority: 0, Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}))
			d := s.Schedule(now)
			assert.Empty(t, d.Drain)
			assert.Empty(t, d.Admit)
			require.NoError(t, s.CheckInvariants())
		})
	}
}

func repeatSets(n int, ps gang.PodSet) []gang.PodSet {
	out := make([]gang.PodSet, n)
	for i := range out {
		out[i] = ps
	}
	return out
}

// TestReclaimSharedWithinQueue: a request with shares preempts
// lower-priority work of its own queue (withinQueue), even while its
// queue borrows, and the victims drain with the in-queue reason.
func TestReclaimSharedWithinQueue(t *testing.T) {
	s, err := fleet.New(reclaimConfig(2, false))
	require.NoError(t, err)
	for i := range 2 {
		require.NoError(t, s.Submit(t0, gang.Workload{ID: fmt.Sprintf("b%d", i), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
			Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}, Drain: gang.DrainContract{Preemptible: true}}))
	}
	require.Len(t, s.Schedule(t0).Admit, 2)
	now := t0.Add(10 * time.Minute)
	require.NoError(t, s.Submit(now, gang.Workload{ID: "eval", Queue: "batch", PriorityClass: fleet.ClassReservedResearch,
		Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUShare: 250}}}))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1)
	assert.Equal(t, gang.DrainInQueue, d.Drain[0].Reason)
	assert.Equal(t, []string{"eval"}, d.Drain[0].Beneficiaries)
	require.NoError(t, s.Exited(now, d.Drain[0].ID, gang.ExitDrained))
	d = s.Schedule(now.Add(time.Second))
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "eval", d.Admit[0].ID)
	assert.True(t, d.Admit[0].Borrowing)
	require.NoError(t, s.CheckInvariants())
}

// TestReclaimSharedCountsPromisedVictimsGone: victims already draining for
// a nomination are gone for a reclaim search, as for the index search:
// their quota is released (their beneficiary is charged already) and
// their GPUs no nomination claims are free. Counting them twice, a queue
// within its nominal quota found its cohort full whatever it evicted and
// drained nothing for work with shares, slices or cores.
func TestReclaimSharedCountsPromisedVictimsGone(t *testing.T) {
	cfg := reclaimConfig(8, false)
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	for i := range 2 {
		require.NoError(t, s.Submit(t0, gang.Workload{ID: fmt.Sprintf("b%d", i), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
			Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 4}}, Drain: gang.DrainContract{Preemptible: true}}))
		require.Len(t, s.Schedule(t0).Admit, 1, "filler %d", i)
	}
	// A whole-GPU replica takes one borrower's GPUs by a nomination.
	now := t0.Add(10 * time.Minute)
	require.NoError(t, s.Submit(now, gang.Workload{ID: "r0", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
		Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 4}}}))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1)
	promised := d.Drain[0].ID
	snap := s.Snapshot()
	require.Len(t, snap.Pending, 1)
	require.True(t, snap.Pending[0].Nominated)

	// Inference then asks for one GPU with cores: 5 of its 8 GPUs. The
	// cohort is charged both the nomination and its draining victim, yet
	// the victim is gone for the search: the other borrower drains for it.
	now = now.Add(time.Minute)
	require.NoError(t, s.Submit(now, gang.Workload{ID: "inf", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
		Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 1,
			Resources: []gang.Resource{{Name: "cpu", Amount: 2000}}}}}))
	d = s.Schedule(now)
	require.Len(t, d.Drain, 1)
	other := d.Drain[0].ID
	assert.NotEqual(t, promised, other)
	assert.Equal(t, []string{"inf"}, d.Drain[0].Beneficiaries)
	require.NoError(t, s.CheckInvariants())
	x, err := s.Explain("inf")
	require.NoError(t, err)
	assert.Equal(t, fleet.WaitVictims, x.Waiting, x.Message)
	for _, p := range s.Snapshot().Pending {
		if p.ID == "inf" {
			assert.Equal(t, []string{other}, p.Reclaiming)
		}
	}

	// Once both victims have exited, both are admitted.
	later := now.Add(time.Minute)
	require.NoError(t, s.Exited(later, promised, gang.ExitDrained))
	require.NoError(t, s.Exited(later, other, gang.ExitDrained))
	d = s.Schedule(later)
	var admitted []string
	for _, a := range d.Admit {
		admitted = append(admitted, a.ID)
	}
	slices.Sort(admitted)
	assert.Equal(t, []string{"inf", "r0"}, admitted)
	require.NoError(t, s.CheckInvariants())
}

// TestReclaimSharedLeavesAQueueAtItsNominal: a queue that uses exactly its
// nominal cores does not borrow, and its work is not another queue's to
// reclaim, though it is of the lowest priority and started last: the
// cores come from the queue that borrows them.
func TestReclaimSharedLeavesAQueueAtItsNominal(t *testing.T) {
	cfg := reclaimConfig(2, false)
	cores := func(name string, m int64) quota.NodeSpec {
		return quota.NodeSpec{Name: name, Parent: "fleet", Kind: quota.Queue,
			Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: m}}}}}
	}
	cfg.Quota.Nodes[1].Quotas[0].Resources[0].Nominal = 32000
	cfg.Quota.Nodes[2] = cores("batch", 16000)
	cfg.Quota.Nodes = append(cfg.Quota.Nodes, cores("other", 16000))
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	submit := func(at time.Time, id, queue, class string) {
		require.NoError(t, s.Submit(at, gang.Workload{ID: id, Queue: queue, PriorityClass: class, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 16000}}}},
			Drain:   gang.DrainContract{Preemptible: true}}))
		require.Len(t, s.Schedule(at).Admit, 1, id)
	}
	for i := range 3 {
		submit(t0.Add(time.Duration(i)*time.Second), fmt.Sprintf("o%d", i), "other", fleet.ClassReservedResearch)
	}
	submit(t0.Add(3*time.Second), "b", "batch", fleet.ClassPreemptibleBatch)

	now := t0.Add(10 * time.Minute)
	require.NoError(t, s.Submit(now, gang.Workload{ID: "inf", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
		Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "p", Count: 1, Resources: []gang.Resource{{Name: "cpu", Amount: 16000}}}}}))
	d := s.Schedule(now)
	require.Len(t, d.Drain, 1)
	assert.Equal(t, "o2", d.Drain[0].ID, "the borrower's latest, not batch's")
	assert.Equal(t, gang.DrainReclaim, d.Drain[0].Reason)
	require.NoError(t, s.CheckInvariants())
}
