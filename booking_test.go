package fleet_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// A booking's life on the reference fleet: propose a spine for research,
// approve it; open-ended work is kept off the spine; at the start minus
// the grace everything else there is drained so the spine is whole at the
// start; the booking's gang then starts inside it, and idle GPUs of the
// spine are lent to preemptible work only.
func TestBookingKeepsItsPromise(t *testing.T) {
	s := newRef(t)
	var j bytes.Buffer
	jr := fleet.NewJournal(s, &j)
	// Research runs open-ended work that does not checkpoint on a spine
	// and a half; batch filler takes six leaves after it.
	for i := range 12 {
		w := training(fmt.Sprintf("own-%d", i), 8, fleet.ClassReservedResearch, "research")
		w.Topology, w.Drain.Preemptible = gang.TopologyRequest{Required: "leaf"}, false
		require.NoError(t, jr.Submit(t0, w))
	}
	for i := range 6 {
		w := training(fmt.Sprintf("batch-%d", i), 8, fleet.ClassPreemptibleBatch, "batch")
		w.Topology = gang.TopologyRequest{Required: "leaf"}
		require.NoError(t, jr.Submit(t0, w))
	}
	d := jr.Schedule(t0)
	require.Len(t, d.Admit, 18)

	start := t0.Add(24 * time.Hour)
	req := calendar.Request{ID: "pretrain", Queue: "research", Flavor: "H100", GPUs: 512, Level: "spine", Blocks: 1,
		Start: start, Duration: 6 * time.Hour}
	opts, err := jr.Propose(t0.Add(time.Minute), req)
	require.NoError(t, err)
	require.NotEmpty(t, opts)
	// The options put the empty spine first; take the one with batch
	// filler to drain.
	pick := -1
	for _, o := range opts {
		if o.Feasible() && len(o.Displaced.Workloads) > 0 && pick < 0 {
			pick = o.Index
		}
	}
	require.GreaterOrEqual(t, pick, 0, "an option displacing batch: %+v", opts)
	b, err := jr.Approve(t0.Add(2*time.Minute), "pretrain", pick, "gpu-council")
	require.NoError(t, err)
	require.Len(t, b.Domains, 1)
	spine := b.Domains[0]
	onSpine := func(a fleet.Admission) bool { return len(a.Pods) > 0 && a.Pods[0].Node[5:6] == spine[6:7] }

	// Open-ended work goes around the booked spine, though its free
	// leaves are the best fit.
	now := t0.Add(time.Hour)
	w := training("open", 8, fleet.ClassReservedResearch, "research")
	w.Topology, w.Drain.Preemptible = gang.TopologyRequest{Required: "leaf"}, false
	require.NoError(t, jr.Submit(now, w))
	d = jr.Schedule(now)
	require.Len(t, d.Admit, 1)
	assert.False(t, onSpine(d.Admit[0]), "%s placed on the booked %s", d.Admit[0].ID, spine)
	var displaced []string
	for _, r := range s.Snapshot().Running {
		if r.Nodes[0].Node[5:6] == spine[6:7] {
			displaced = append(displaced, r.ID)
		}
	}
	require.NotEmpty(t, displaced)

	// At the start minus the grace, the spine's other work drains, with
	// the start as deadline.
	drainAt := start.Add(-b.Grace)
	d = jr.Schedule(drainAt)
	var drained []string
	for _, x := range d.Drain {
		drained = append(drained, x.ID)
	}
	assert.ElementsMatch(t, displaced, drained, "the work on the booked spine drains")
	for _, x := range d.Drain {
		assert.Equal(t, gang.DrainBooking, x.Reason)
		assert.Equal(t, start.Add(-fleet.KillLead), x.Deadline,
			"%s: the deadline falls KillLead before the start, so work killed at it is gone at the start", x.ID)
		require.NoError(t, jr.Exited(drainAt.Add(time.Minute), x.ID, gang.ExitDrained))
	}
	snap := s.Snapshot()
	for _, r := range snap.Running {
		for _, n := range r.Nodes {
			assert.NotEqual(t, spine[6:7], n.Node[5:6], "%s still on the booked spine at the start", r.ID)
		}
	}

	// The booking's gang waits for the start, then starts inside its spine.
	g := training("pretrain-run", 64, fleet.ClassReservedResearch, "research")
	g.Booking = "pretrain"
	require.NoError(t, jr.Submit(drainAt.Add(time.Minute), g))
	jr.Schedule(drainAt.Add(time.Minute))
	x, err := s.Explain("pretrain-run")
	require.NoError(t, err)
	assert.Equal(t, fleet.WaitBooking, x.Waiting)
	d = jr.Schedule(start)
	require.Len(t, d.Admit, 1)
	assert.Equal(t, "pretrain-run", d.Admit[0].ID)
	for _, p := range d.Admit[0].Pods {
		assert.Equal(t, spine[6:7], p.Node[5:6], "pod on %s, outside %s", p.Node, spine)
	}

	// A restart inside the window keeps the booking, and the journal
	// replays every decision.
	r, err := fleet.Restore(fleet.ReferenceConfig(), s.Snapshot())
	require.NoError(t, err)
	require.Equal(t, s.Snapshot(), r.Snapshot())
	require.NoError(t, jr.Err())
	replayed, err := fleet.Replay(fleet.ReferenceConfig(), &j, nil)
	require.NoError(t, err)
	assert.Equal(t, s.Snapshot(), replayed.Snapshot())
}

func TestBookingRefusals(t *testing.T) {
	s := newRef(t)
	before := s.Snapshot()
	w := training("stray", 8, fleet.ClassReservedResearch, "research")
	w.Booking = "nope"
	require.ErrorIs(t, s.Submit(t0, w), fleet.ErrUnknownBooking)
	_, err := s.Propose(t0, calendar.Request{ID: "x", Queue: "research", Flavor: "H100", GPUs: 512, Level: "spine",
		Start: t0.Add(-time.Hour), Duration: time.Hour})
	require.ErrorIs(t, err, calendar.ErrStartInPast)
	_, err = s.Approve(t0, "never-proposed", 0, "me")
	require.Error(t, err)
	require.Equal(t, before, s.Snapshot())
}

// An inference queue within its guarantee whose replicas cannot get
// capacity within the target, even by preemption (research borrows with
// work that does not checkpoint), is listed in Decisions.Overflow every
// cycle until it is not; metrics integrate the overflow GPU-hours.
func TestOverflowWhenTheGuaranteeCannotComeBack(t *testing.T) {
	s := newRef(t)
	for i := range 193 {
		w := training(fmt.Sprintf("r-%d", i), 1, fleet.ClassReservedResearch, "research")
		w.Topology, w.Drain.Preemptible = gang.TopologyRequest{}, false
		require.NoError(t, s.Submit(t0, w))
	}
	require.Len(t, s.Schedule(t0).Admit, 193)
	for i := range 70 {
		require.NoError(t, s.Submit(t0, replica(fmt.Sprintf("inf-%d", i), 8)))
	}
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 63)
	assert.Empty(t, d.Overflow, "not past the target yet")

	late := t0.Add(fleet.DefaultOverflowAfter)
	d = s.Schedule(late)
	require.Equal(t, []fleet.Overflow{{Queue: "prod-inference", GPUs: 56, Since: late}}, d.Overflow)
	d = s.Schedule(late.Add(time.Hour))
	require.Len(t, d.Overflow, 1, "listed every cycle while short")

	for i := range 7 {
		require.NoError(t, s.Exited(late.Add(time.Hour), fmt.Sprintf("r-%d", i), gang.ExitFinished))
	}
	d = s.Schedule(late.Add(time.Hour))
	assert.Len(t, d.Admit, 7)
	assert.Empty(t, d.Overflow)
	var last fleet.Event
	for _, ev := range d.Events {
		if ev.Kind == fleet.EventOverflow {
			last = ev
		}
	}
	assert.Equal(t, "prod-inference", last.Queue)
	assert.Zero(t, last.GPUs, "the end of the overflow is an event with 0 GPUs")
}

// A quota edit that would break an approved booking's promise is refused,
// and changes nothing.
func TestSetQueueKeepsApprovedBookings(t *testing.T) {
	s := newRef(t)
	spec := s.Quota()
	var inference quota.NodeSpec
	for _, n := range spec.Nodes {
		if n.Name == "prod-inference" {
			inference = n
		}
	}
	lowered := inference
	lowered.Quotas = slices.Clone(inference.Quotas)
	lowered.Quotas[0].Nominal -= 176
	if v, ok := lowered.Quotas[0].LendingLimit.Get(); ok {
		lowered.Quotas[0].LendingLimit = quota.LimitOf(min(v, lowered.Quotas[0].Nominal))
	}
	require.NoError(t, s.SetQueue(t0, lowered))
	opts, err := s.Propose(t0, calendar.Request{ID: "big", Queue: "research", Flavor: "H100", GPUs: 1024, Level: "spine", Blocks: 2,
		Start: t0.Add(24 * time.Hour), Duration: 24 * time.Hour})
	require.NoError(t, err)
	require.NotEmpty(t, opts)
	require.True(t, opts[0].Feasible(), "%+v", opts[0])
	_, err = s.Approve(t0, "big", opts[0].Index, "council")
	require.NoError(t, err)

	before := s.Snapshot()
	err = s.SetQueue(t0.Add(time.Hour), inference)
	require.ErrorIs(t, err, fleet.ErrOverCapacity)
	require.Equal(t, before, s.Snapshot())
}

// Quotas that follow the clock: batch is guaranteed 400 GPUs at night
// (inference 800) and nothing by day. At the morning boundary the day
// quotas apply, batch's running work now borrows, and inference takes it
// back with the drain contract.
func TestQuotaScheduleShiftsBatchOffPeak(t *testing.T) {
	s := newRef(t)
	base := s.Quota()
	night := quota.Window{Start: quota.ClockOf(20, 0), End: quota.ClockOf(8, 0)}
	var inf quota.FlavorQuota
	for _, n := range base.Nodes {
		if n.Name == "prod-inference" {
			inf = n.Quotas[0]
		}
	}
	infNight := inf
	infNight.Nominal = 800
	if v, ok := inf.LendingLimit.Get(); ok {
		infNight.LendingLimit = quota.LimitOf(min(v, 800))
	}
	rules := quota.ScheduleSpec{Rules: []quota.ScheduleRule{
		{Node: "prod-inference", Window: night, Quota: infNight},
		{Node: "batch", Window: night, Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 400}},
	}}
	sched, err := quota.NewSchedule(base, rules, time.UTC)
	require.NoError(t, err)

	tooMuch := rules
	tooMuch.Rules = []quota.ScheduleRule{{Node: "batch", Window: night, Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 400}}}
	over, err := quota.NewSchedule(base, tooMuch, time.UTC)
	require.NoError(t, err)
	before := s.Snapshot()
	require.ErrorIs(t, s.SetQuotaSchedule(t0, over), fleet.ErrOverCapacity, "1,200 + 848 + 400 > 2,048 at night")
	require.Equal(t, before, s.Snapshot())

	require.NoError(t, s.SetQuotaSchedule(t0, sched))
	research := training("research-all", 106, fleet.ClassReservedResearch, "research")
	research.Topology, research.Drain.Preemptible = gang.TopologyRequest{}, false
	require.NoError(t, s.Submit(t0, research))
	for i := range 50 {
		w := training(fmt.Sprintf("b-%d", i), 1, fleet.ClassPreemptibleBatch, "batch")
		w.Topology = gang.TopologyRequest{}
		require.NoError(t, s.Submit(t0, w))
	}
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 51)
	for _, a := range d.Admit {
		assert.False(t, a.Borrowing, "%s runs within its night quota", a.ID)
	}
	for i := range 150 {
		require.NoError(t, s.Submit(t0.Add(8*time.Hour), replica(fmt.Sprintf("day-%d", i), 8)))
	}
	d = s.Schedule(t0.Add(8 * time.Hour))
	changed := false
	for _, ev := range d.Events {
		changed = changed || ev.Kind == fleet.EventQueueChanged && ev.Queue == "batch"
	}
	assert.True(t, changed, "the morning boundary applies the day quotas")
	require.NotEmpty(t, d.Drain, "inference takes its day guarantee back from batch")
	for _, x := range d.Drain {
		assert.Equal(t, gang.DrainReclaim, x.Reason)
	}
}

// Replicas that fit only in a booked spine wait behind the booking: the
// first one's victim search, kept out of the spine, finds no plan, and
// the identical replicas after it in the cycle are told the same without
// searching again. A replica that may enter the spine (expected to end
// before its drain) still starts there.
func TestReplicasBehindABookingWaitAlike(t *testing.T) {
	s := newRef(t)
	// Research fills spines 1-3 with work it keeps (not preemptible).
	for i := range 24 {
		w := training(fmt.Sprintf("own-%d", i), 8, fleet.ClassReservedResearch, "research")
		w.Topology, w.Drain.Preemptible = gang.TopologyRequest{Required: "leaf"}, false
		if i < 8 {
			w.Queue, w.PriorityClass = "prod-inference", fleet.ClassProdInference
		}
		require.NoError(t, s.Submit(t0, w))
	}
	_, err := s.Propose(t0, calendar.Request{ID: "eval", Queue: "prod-inference", Flavor: "H100", GPUs: 512, Level: "spine",
		Start: t0.Add(4 * time.Hour), Duration: time.Hour})
	require.NoError(t, err)
	b, err := s.Approve(t0, "eval", 0, "council")
	require.NoError(t, err)
	d := s.Schedule(t0)
	require.Len(t, d.Admit, 24)
	for _, a := range d.Admit {
		assert.NotEqual(t, b.Domains[0], "spine-"+a.Pods[0].Node[5:6], "%s in the booked spine", a.ID)
	}

	now := t0.Add(time.Minute)
	for i := range 5 {
		require.NoError(t, s.Submit(now, replica(fmt.Sprintf("r-%d", i), 8)))
	}
	short := replica("short", 8)
	short.ExpectedRuntime = time.Hour
	require.NoError(t, s.Submit(now, short))
	d = s.Schedule(now)
	require.Len(t, d.Admit, 1, "%v", d)
	assert.Equal(t, "short", d.Admit[0].ID)
	assert.Empty(t, d.Drain)
	first, err := s.Explain("r-0")
	require.NoError(t, err)
	for i := 1; i < 5; i++ {
		x, err := s.Explain(fmt.Sprintf("r-%d", i))
		require.NoError(t, err)
		assert.Equal(t, first.Waiting, x.Waiting, x.Message)
		assert.Equal(t, first.Behind, x.Behind, x.Message)
		assert.NotEqual(t, fleet.WaitMemo, x.Waiting, x.Message)
	}
	t.Log(first.Message)
}

// A workload that may not enter a booked spine, whose cheapest victims
// run there, preempts outside it: the search is kept out of the booked
// blocks rather than finding a plan in them to be refused.
func TestPreemptionAvoidsBookedBlocks(t *testing.T) {
	s := newRef(t)
	_, err := s.Propose(t0, calendar.Request{ID: "eval", Queue: "research", Flavor: "H100", GPUs: 512, Level: "spine",
		Start: t0.Add(48 * time.Hour), Duration: time.Hour})
	require.NoError(t, err)
	b, err := s.Approve(t0, "eval", 0, "council")
	require.NoError(t, err)
	for i := range 256 {
		w := training(fmt.Sprintf("b-%d", i), 1, fleet.ClassPreemptibleBatch, "batch")
		w.Topology = gang.TopologyRequest{}
		require.NoError(t, s.Submit(t0, w))
	}
	d := s.Schedule(t0)
	require.NotEmpty(t, d.Admit)
	booked := func(node string) bool { return b.Domains[0] == "spine-"+node[5:6] }
	// No room is left outside the booked spine.
	used := map[string]bool{}
	for _, a := range d.Admit {
		used[a.Pods[0].Node] = true
	}
	for sp := range 4 {
		for l := range 8 {
			for n := range 8 {
				node := fmt.Sprintf("node-%d-%d-%d", sp, l, n)
				if !used[node] && !booked(node) {
					_, err := s.SetNodeHealth(t0, node, topology.Cordoned)
					require.NoError(t, err)
				}
			}
		}
	}
	// The work in the booked spine checkpoints late: it is the cheapest
	// to evict.
	now := t0.Add(time.Hour)
	inBooked := 0
	for _, a := range d.Admit {
		if booked(a.Pods[0].Node) {
			require.NoError(t, s.Checkpointed(now, a.ID, now))
			inBooked++
		}
	}
	require.Positive(t, inBooked, "preemptible batch may use the booked spine")
	require.NoError(t, s.Submit(now, replica("chat", 8)))
	d2 := s.Schedule(now)
	x, err := s.Explain("chat")
	require.NoError(t, err)
	require.Len(t, d2.Drain, 1, x.Message)
	assert.Equal(t, fleet.WaitVictims, x.Waiting, x.Message)
	for _, a := range d.Admit {
		if a.ID == d2.Drain[0].ID {
			assert.False(t, booked(a.Pods[0].Node), "victim %s in the booked spine", a.ID)
		}
	}
}

// Once a booked spine's drain has begun, a defragmentation mover is kept
// out of it as other work is: opening leaf-1-0, the mover's tightest fit
// in node order would be spine-0's first node (its own mover draining
// for the booking), and it goes to the next leaf of spine 1 instead.
func TestDefragMoversGoAroundABookedBlockThatDrains(t *testing.T) {
	s := scattered(t, 0)
	_, err := s.Propose(t0, calendar.Request{ID: "eval", Queue: "research", Flavor: "H100", GPUs: 512, Level: "spine",
		Start: t0.Add(48 * time.Hour), Duration: time.Hour})
	require.NoError(t, err)
	b, err := s.Approve(t0, "eval", 0, "council")
	require.NoError(t, err)
	require.Equal(t, []string{"spine-0"}, b.Domains)
	now := b.Start.Add(-b.Grace)
	require.Len(t, s.Schedule(now).Drain, 8, "spine-0's eight small jobs drain for the booking")

	plan, err := s.PlanDefrag(now, "leaf", "H100", 0, 1000)
	require.NoError(t, err)
	assert.Equal(t, "leaf-1-0", plan.Domain)
	require.Len(t, plan.Moves, 1)
	require.Len(t, plan.Moves[0].To, 1)
	assert.Equal(t, "node-1-1-0", plan.Moves[0].To[0].Node)
}
