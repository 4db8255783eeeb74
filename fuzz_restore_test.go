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
// pods lost with a node, a quota schedule, defragmentation movers, split
// pods of an elastic job that has ended. Each
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
	must(s.Adopt(t0, fleet.Adoption{Workload: g, Started: t0, Pods: pods}))
	filler := batch("filler")
	must(s.Adopt(t0, fleet.Adoption{Workload: filler, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "workers", Node: "node-0-0-7", GPUs: 8}}}))
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
			must(s.Adopt(t0, fleet.Adoption{Workload: w, Started: t0, Pods: []fleet.PodAssignment{{PodSet: "p", Index: 0, Node: fmt.Sprintf("node-%d-%d-0", sp, lf), GPUs: 2}}}))
		}
	}
	plan, err := s.PlanDefrag(now, "spine", "H100", 0, 1000)
	must(err)
	drains, err := s.Defragment(now, plan)
	must(err)
	_, err = s.SetNodeHealth(now, drains[0].MoveTo[0].Node, topology.Down)
	must(err)
	out["defrag"] = s

	// An elastic job shrunk pod by pod: split pods drain, one lingers
	// after the job itself has ended.
	s = newRef(tb)
	for i := range 62 {
		must(s.Submit(t0, replica(fmt.Sprintf("inf-%02d", i), 8)))
	}
	own := training("own", 106, fleet.ClassReservedResearch, "research")
	own.Drain.Preemptible, own.Topology = false, gang.TopologyRequest{}
	must(s.Submit(t0, own))
	must(s.Submit(t0, elasticBatch("e", 100, 10)))
	s.Schedule(t0)
	for i := range 4 {
		must(s.Submit(now, replica(fmt.Sprintf("spike-%d", i), 8)))
	}
	d = s.Schedule(now)
	must(s.Exited(now.Add(30*time.Second), d.Drain[0].ID, gang.ExitDrained))
	must(s.Exited(now.Add(30*time.Second), "e", gang.ExitFinished))
	s.Schedule(now.Add(30 * time.Second))
	out["elastic-split"] = s
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
	f.Fuzz(func(t *testing.T, data []byte) { checkRestore(t, cfg, data) })
}

// typed reports whether err is one of the scheduler's typed errors.
func typed(err error) bool {
	var fe *fleet.Error
	var se *fleet.SnapshotError
	return errors.As(err, &fe) || errors.As(err, &se)
}

// FuzzRestoreFields corrupts real snapshots field by field: edits picks a
// seed and then, a few bytes per edit, a value of the snapshot's JSON
// tree (in document order) and what to put there (another number, a
// negative or huge one, a shifted instant, another workload's or node's
// name, nothing). Most byte-level mutations of JSON no longer parse; these
// all do, so Restore sees every kind of wrong value. The checks are
// FuzzRestore's.
func FuzzRestoreFields(f *testing.F) {
	cfg := fleet.ReferenceConfig()
	seeds := restoreSeeds(f)
	names := slices.Sorted(maps.Keys(seeds))
	docs := make([]any, len(names))
	for i, name := range names {
		b, err := json.Marshal(seeds[name].Snapshot())
		if err != nil {
			f.Fatal(err)
		}
		if err := json.Unmarshal(b, &docs[i]); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte{byte(i)})
		f.Add([]byte{byte(i), 7, 3, 1, 200, 11, 5})
	}
	f.Fuzz(func(t *testing.T, edits []byte) {
		if len(edits) == 0 || len(edits) > 64 {
			return
		}
		doc := cloneJSON(docs[int(edits[0])%len(docs)])
		var places []slot
		collect(doc, &places)
		for e := edits[1:]; len(e) >= 3; e = e[3:] {
			p := places[(int(e[0])<<8|int(e[1]))%len(places)]
			p.set(corrupt(p.get(), e[2], places))
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return
		}
		checkRestore(t, cfg, b)
	})
}

// checkRestore is the property both fuzz targets check of a snapshot's
// JSON.
func checkRestore(t *testing.T, cfg fleet.Config, data []byte) {
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
}

// slot is one place of a JSON tree: a value, an array or an object.
type slot struct {
	get func() any
	set func(any)
}

// collect lists every place of a JSON tree below v, in document order.
func collect(v any, out *[]slot) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			*out = append(*out, slot{get: func() any { return x[k] }, set: func(n any) { x[k] = n }})
			collect(x[k], out)
		}
	case []any:
		for i := range x {
			*out = append(*out, slot{get: func() any { return x[i] }, set: func(n any) { x[i] = n }})
			collect(x[i], out)
		}
	}
}

// corrupt returns a wrong value for v, chosen by op; places offers the
// other strings of the tree to borrow one from (another workload's or
// node's name).
func corrupt(v any, op byte, places []slot) any {
	switch x := v.(type) {
	case float64:
		return []any{x + 1, x - 1, -x, x * 1e6, float64(1 << 62), 0, 200, x + 3600e9}[op%8]
	case string:
		if ts, err := time.Parse(time.RFC3339Nano, x); err == nil {
			d := []time.Duration{time.Hour, -time.Hour, 365 * 24 * time.Hour, -time.Nanosecond, time.Second}[op%5]
			return ts.Add(d).Format(time.RFC3339Nano)
		}
		for i := int(op); i < int(op)+len(places); i++ {
			if s, ok := places[i%len(places)].get().(string); ok && s != x {
				return s
			}
		}
		return x + "x"
	case bool:
		return !x
	case []any:
		if op%2 == 0 && len(x) > 0 {
			return x[:len(x)-1]
		}
		return append(x, x...)
	case map[string]any:
		return nil
	}
	return []any{0.0, "x", true}[op%3]
}

// cloneJSON deep-copies a decoded JSON tree.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			out[k] = cloneJSON(c)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = cloneJSON(c)
		}
		return out
	}
	return v
}
