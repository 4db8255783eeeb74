package fleet

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/internal/ledger"
)

// SnapshotError is Restore's refusal of a snapshot that does not add up:
// the field, by its path in the Snapshot ("Running[3].Drain.Deadline"),
// the workload it belongs to ("" for none) and what is wrong with it. It
// wraps ErrInvalid.
type SnapshotError struct {
	Field    string // its path in the Snapshot, e.g. "Running[3].Drain.Deadline"
	Workload string // the workload it belongs to, "" for none
	Detail   string // what is wrong with it
}

// Error names the field, its workload and what is wrong.
func (e *SnapshotError) Error() string {
	msg := fmt.Sprintf("%v: restore: %s", ErrInvalid, e.Field)
	if e.Workload != "" {
		msg += fmt.Sprintf(" of %q", e.Workload)
	}
	return msg + ": " + e.Detail
}

// Unwrap returns ErrInvalid.
func (e *SnapshotError) Unwrap() error { return ErrInvalid }

// checkSnapshot refuses what a scheduler cannot have written, field by
// field, before anything is restored: the facts each view repeats must
// agree, no instant may lie after the snapshot's Time, every drain
// deadline falls within MaxGrace after its start, and every workload a
// view names is in the snapshot (a split pod's parent may have ended: its
// ID names the parent). What needs the config (queues, classes,
// nodes) and what only adds up whole (GPUs, quota, claims) is checked as
// the state is rebuilt, and by the ledger's invariant check at the end.
func checkSnapshot(snap Snapshot) error {
	bad := func(field, id, format string, args ...any) error {
		return &SnapshotError{Field: field, Workload: id, Detail: fmt.Sprintf(format, args...)}
	}
	at := snap.Time
	late := func(t time.Time) bool { return t.After(at) }
	if !inRFC3339(at) {
		return bad("Time", "", "%v is past what RFC 3339 holds", at)
	}
	running := make(map[string]*RunningView, len(snap.Running))
	for i := range snap.Running {
		running[snap.Running[i].ID] = &snap.Running[i]
	}
	for i := range snap.Running {
		v := &snap.Running[i]
		f := func(name string) string { return fmt.Sprintf("Running[%d].%s", i, name) }
		switch {
		case v.ID != v.Spec.ID:
			return bad(f("ID"), v.ID, "its spec is %q's", v.Spec.ID)
		case v.Queue != v.Spec.Queue:
			return bad(f("Spec.Queue"), v.ID, "%q, but it runs charged to %q", v.Spec.Queue, v.Queue)
		case v.Class != v.Spec.PriorityClass:
			return bad(f("Spec.PriorityClass"), v.ID, "%q, but it runs as class %q", v.Spec.PriorityClass, v.Class)
		case late(v.Started):
			return bad(f("Started"), v.ID, "%s, after the snapshot's time", v.Started.Format(time.RFC3339))
		case late(v.Submitted):
			return bad(f("Submitted"), v.ID, "%s, after the snapshot's time", v.Submitted.Format(time.RFC3339))
		case v.Seq > snap.Seq:
			return bad(f("Seq"), v.ID, "%d, beyond the snapshot's counter %d", v.Seq, snap.Seq)
		case late(v.IdleSince):
			return bad(f("IdleSince"), v.ID, "%s, after the snapshot's time", v.IdleSince.Format(time.RFC3339))
		case late(v.Spec.Drain.LastCheckpoint):
			return bad(f("Spec.Drain.LastCheckpoint"), v.ID, "%s, after the snapshot's time", v.Spec.Drain.LastCheckpoint.Format(time.RFC3339))
		case v.SplitOf != "" && v.ID != ledger.SplitID(v.SplitOf, v.SplitPod.PodSet, v.SplitPod.Index):
			// The parent may have ended since; the split's ID names it.
			return bad(f("SplitOf"), v.ID, "%q with pod %s-%d is not the workload it was split off", v.SplitOf, v.SplitPod.PodSet, v.SplitPod.Index)
		}
		for j, lp := range v.Lost {
			if late(lp.Since) {
				return bad(f(fmt.Sprintf("Lost[%d].Since", j)), v.ID, "%s, after the snapshot's time", lp.Since.Format(time.RFC3339))
			}
		}
		if err := checkDrainView(snap, v, f); err != nil {
			return err
		}
	}
	pending := make(map[string]bool, len(snap.Pending))
	for i := range snap.Pending {
		v := &snap.Pending[i]
		f := func(name string) string { return fmt.Sprintf("Pending[%d].%s", i, name) }
		switch {
		case v.ID != v.Spec.ID:
			return bad(f("ID"), v.ID, "its spec is %q's", v.Spec.ID)
		case v.Queue != v.Spec.Queue:
			return bad(f("Spec.Queue"), v.ID, "%q, but it waits in %q", v.Spec.Queue, v.Queue)
		case late(v.Submitted):
			return bad(f("Submitted"), v.ID, "%s, after the snapshot's time", v.Submitted.Format(time.RFC3339))
		case v.Seq > snap.Seq:
			return bad(f("Seq"), v.ID, "%d, beyond the snapshot's counter %d", v.Seq, snap.Seq)
		case v.Nominated != (v.Nomination != nil):
			return bad(f("Nominated"), v.ID, "%t, but its nomination is %v", v.Nominated, v.Nomination)
		}
		for j, id := range v.Reclaiming {
			if r := running[id]; r == nil || r.Drain == nil || len(r.Drain.Live) > 0 || !slices.Contains(r.Drain.Beneficiaries, v.ID) {
				return bad(f(fmt.Sprintf("Reclaiming[%d]", j)), v.ID, "%q is not draining for it without a nomination", id)
			}
		}
		pending[v.ID] = true
	}
	for k, ev := range snap.Undelivered {
		switch {
		case !ev.Kind.Valid():
			return bad(fmt.Sprintf("Undelivered[%d].Kind", k), ev.Workload, "unknown event kind %d", ev.Kind)
		case late(ev.Time):
			return bad(fmt.Sprintf("Undelivered[%d].Time", k), ev.Workload, "%s, after the snapshot's time", ev.Time.Format(time.RFC3339))
		}
	}
	return nil
}

// checkDrainView checks a running workload's drain: it began by the
// snapshot's time, its deadline falls from its start to MaxGrace after
// it, a kill was asked for no earlier than the deadline, and what it
// promises goes to beneficiaries it was drained for.
func checkDrainView(snap Snapshot, v *RunningView, f func(string) string) error {
	d := v.Drain
	if d == nil {
		if v.Draining {
			return &SnapshotError{Field: f("Draining"), Workload: v.ID, Detail: "true, with no drain"}
		}
		return nil
	}
	bad := func(field, format string, args ...any) error {
		return &SnapshotError{Field: f("Drain." + field), Workload: v.ID, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case !v.Draining:
		return &SnapshotError{Field: f("Draining"), Workload: v.ID, Detail: "false, with a drain"}
	case !d.Reason.Valid():
		return bad("Reason", "unknown drain reason %d", d.Reason)
	case d.Since.After(snap.Time):
		return bad("Since", "%s, after the snapshot's time", d.Since.Format(time.RFC3339))
	case d.Deadline.Before(d.Since):
		return bad("Deadline", "%s, before the drain began at %s", d.Deadline.Format(time.RFC3339), d.Since.Format(time.RFC3339))
	case d.Deadline.Sub(d.Since) > MaxGrace:
		return bad("Deadline", "%s, more than MaxGrace (%s) after the drain began at %s", d.Deadline.Format(time.RFC3339), MaxGrace, d.Since.Format(time.RFC3339))
	case !v.Deadline.Equal(d.Deadline):
		return &SnapshotError{Field: f("Deadline"), Workload: v.ID, Detail: fmt.Sprintf("%s, its drain's is %s", v.Deadline.Format(time.RFC3339), d.Deadline.Format(time.RFC3339))}
	case !d.KillAsked.IsZero() && (d.KillAsked.Before(d.Deadline) || d.KillAsked.After(snap.Time)):
		return bad("KillAsked", "%s, outside its deadline %s to the snapshot's time", d.KillAsked.Format(time.RFC3339), d.Deadline.Format(time.RFC3339))
	}
	for j, b := range d.Live {
		if !slices.Contains(d.Beneficiaries, b) {
			return bad(fmt.Sprintf("Live[%d]", j), "%q is not among its beneficiaries", b)
		}
	}
	for j, c := range d.Claims {
		if !slices.Contains(d.Live, c.Beneficiary) {
			return bad(fmt.Sprintf("Claims[%d].Beneficiary", j), "%q is not a live beneficiary", c.Beneficiary)
		}
	}
	return nil
}
