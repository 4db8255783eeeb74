package fleet_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// restoreSeeds are real scheduler states on the reference fleet, one
// feature each: drains with nominations, a host drain and a booking,
// pods lost with a node, a quota schedule, defragmentation movers. Each
// returns its scheduler; a step that fails ends the seed.
func restoreSeeds(tb testing.TB) map[string]*fleet.Scheduler {
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	batch := func(id string) gang.Workload {
		w := training(id, 1, fleet.ClassPreemptibleBatch, "batch")
		w.Topology = gang.TopologyRequest{}
		return w
	}
	out := map[string]*fleet.Scheduler{}

	// Inference takes its guarantee back from borrowing batch: victims
	// drain, nominations wait on them, some have exited.
	s := newRef(tb)
	for i := range 200 {
		must(s.Submit(t0, batch(fmt.Sprintf("b%03d", i))))
	}
	s.Schedule(t0)
	now := t0.Add(time.Hour)
	for i := range 100 {
		must(s.Submit(now, replica(fmt.Sprintf("r%03d", i), 8)))
	}
	d := s.Schedule(now)
	for _, x := range d.Drain[:len(d.Drain)/2] {
		must(s.Exited(now.Add(time.Minute), x.ID, gang.ExitDrained))
	}
	s.Schedule(now.Add(time.Minute))
	out["nominations"] = s

	// A host drain past its deadline, pending work, an approved booking
	// and undelivered events.
	s = newRef(tb)
	for _, id := range []string{"a", "b", "c"} {
		must(s.Submit(t0, training(id, 2, fleet.ClassReservedResearch, "research")))
	}
	s.Schedule(t0)
	_, err := s.RequestDrain(now, "a", time.Minute)
	must(err)
	s.Schedule(now.Add(2 * time.Minute))
	must(s.Checkpointed(now.Add(2*time.Minute), "b", now))
	must(s.Submit(now.Add(2*time.Minute), training("later", 64, fleet.ClassReservedResearch, "research")))
	_, err = s.Propose(now.Add(2*time.Minute), calendar.Request{ID: "eval", Queue: "research", Flavor: "H100", GPUs: 64, Level: "leaf",
		Start: now.Add(time.Hour), Duration: time.Hour})
	must(err)
	_, err = s.Approve(now.Add(2*time.Minute), "eval", 0, "council")
	must(err)
	out["drain-booking"] = s

	// A gang that survives the loss of a node has lost one, a node is
	// cordoned, another removed.
	s = newRef(tb)
	g := training("gang", 7, fleet.ClassReservedResearch, "research")
	g.Topology = gang.TopologyRequest{Required: "leaf"}
	g.Drain.SurvivesNodeLoss = true
	var pods []fleet.PodAssignment
	for i := range 7 {
		pods = append(pods, fleet.PodAssignment{PodSet: "workers", Index: i, Node: fmt.Sprintf("node-0-0-%d", i), GPUs: 8})
	}
	must(s.Adopt(t0, g, t0, pods))
	filler := batch("filler")
	must(s.Adopt(t0, filler, t0, []fleet.PodAssignment{{PodSet: "workers", Node: "node-0-0-7", GPUs: 8}}))
	_, err = s.SetNodeHealth(now, "node-0-0-3", topology.Down)
	must(err)
	_, err = s.SetNodeHealth(now, "node-1-0-0", topology.Cordoned)
	must(err)
	s.Schedule(now)
	out["lost-pods"] = s

	// A quota schedule in force, work admitted under it.
	s = newRef(tb)
	base := s.Quota()
	night := quota.Window{Start: quota.ClockOf(20, 0), End: quota.ClockOf(8, 0)}
	sched, err := quota.NewSchedule(base, quota.ScheduleSpec{Rules: []quota.ScheduleRule{
		{Node: "research", Window: night, Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 448}},
		{Node: "batch", Window: night, Quota: quota.FlavorQuota{Flavor: "H100", Nominal: 400}},
	}}, time.UTC)
	must(err)
	must(s.SetQuotaSchedule(t0, sched))
	for i := range 20 {
		must(s.Submit(t0, batch(fmt.Sprintf("n%02d", i))))
	}
	s.Schedule(t0)
	out["quota-schedule"] = s

	// Defragmentation movers, one whose new place went down.
	s = newRef(tb)
	for sp := range 4 {
		for lf := range 8 {
			w := gang.Workload{ID: fmt.Sprintf("small-%d-%d", sp, lf), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
				Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 2}},
				Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
			must(s.Adopt(t0, w, t0, []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: fmt.Sprintf("node-%d-%d-0", sp, lf), GPUs: 2}}))
		}
	}
	plan, err := s.PlanDefrag(now, "spine", "H100", 0, 1000)
	must(err)
	drains, err := s.Defragment(now, plan)
	must(err)
	_, err = s.SetNodeHealth(now, drains[0].MoveTo[0].Node, topology.Down)
	must(err)
	out["defrag"] = s
	return out
}

// FuzzRestore mutates the JSON of real snapshots: Restore never panics,
// a refusal is typed, and an accepted snapshot gives a scheduler
// that passes its invariant check, whose own snapshot marshals and
// restores again, and whose next cycle runs.
func FuzzRestore(f *testing.F) {
	cfg := fleet.ReferenceConfig()
	seeds := restoreSeeds(f)
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		b, err := json.Marshal(seeds[name].Snapshot())
		if err != nil {
			f.Fatal(name, err)
		}
		// Each seed is a state a host persists: it restores from JSON.
		var snap fleet.Snapshot
		if err := json.Unmarshal(b, &snap); err != nil {
			f.Fatal(name, err)
		}
		if _, err := fleet.Restore(cfg, snap); err != nil {
			f.Fatalf("seed %s does not restore: %v", name, err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var snap fleet.Snapshot
		if json.Unmarshal(data, &snap) != nil {
			return
		}
		r, err := fleet.Restore(cfg, snap)
		if err != nil {
			if !typed(err) {
				t.Fatalf("an untyped refusal: %v", err)
			}
			return
		}
		if err := r.CheckInvariants(); err != nil {
			t.Fatalf("restored, but: %v", err)
		}
		b, err := json.Marshal(r.Snapshot())
		if err != nil {
			t.Fatalf("restored, but its snapshot does not marshal: %v", err)
		}
		var again fleet.Snapshot
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("its snapshot does not unmarshal: %v", err)
		}
		if _, err := fleet.Restore(cfg, again); err != nil {
			t.Fatalf("its own snapshot is refused: %v", err)
		}
		r.Schedule(snap.Time)
		if err := r.CheckInvariants(); err != nil {
			t.Fatalf("after a cycle: %v", err)
		}
	})
}

// typed reports whether err is one of the scheduler's typed errors.
func typed(err error) bool {
	var fe *fleet.Error
	var se *fleet.SnapshotError
	return errors.As(err, &fe) || errors.As(err, &se)
}
