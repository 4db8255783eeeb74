package fleet

import (
	"time"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/gang"
)

// IdleRule makes reclaiming idle work a policy: a running workload of
// priority class Class that the host has reported idle, without a busy
// report since, for After is drained with reason gang.DrainIdle under the
// drain contract (deadline, then kill every cycle past it), as a
// notebook nobody has used for 2 h.
type IdleRule struct {
	// Class is the priority class the rule applies to; one rule per class.
	Class string
	// After is how long a workload may stay idle; more than 0.
	After time.Duration
	// Grace is its drain deadline; 0 means the workload's drain contract
	// (its grace period, else its class's, else DefaultGrace).
	Grace time.Duration
}

// checkIdleRules refuses rules for unknown or repeated classes and
// non-positive limits.
func checkIdleRules(rules []IdleRule, classes map[string]PriorityClass) error {
	seen := map[string]bool{}
	for _, r := range rules {
		switch _, known := classes[r.Class]; {
		case !known:
			return refuse("new", "", ErrInvalidConfig, "idle rule for unknown priority class %q", r.Class)
		case seen[r.Class]:
			return refuse("new", "", ErrInvalidConfig, "two idle rules for priority class %q", r.Class)
		case r.After <= 0 || r.Grace < 0 || r.Grace > MaxGrace:
			return refuse("new", "", ErrInvalidConfig, "idle rule for %q: after %s, grace %s", r.Class, r.After, r.Grace)
		}
		seen[r.Class] = true
	}
	return nil
}

// idleKey orders the workloads an idle rule will drain by when it will,
// then ID.
type idleKey struct {
	due time.Time
	id  string
}

func idleLess(a, b idleKey) bool {
	if c := a.due.Compare(b.due); c != 0 {
		return c < 0
	}
	return a.id < b.id
}

// idleBook is what the host reported about use: since when each running
// workload has been idle, and, for those an idle rule covers, when the
// rule drains them. A cycle reads only the due part of the index.
type idleBook struct {
	recs map[string]idleRec
	due  *btree.BTreeG[idleKey]
}

type idleRec struct {
	since time.Time
	due   time.Time // zero: no rule covers it
}

func (b *idleBook) init() {
	if b.recs == nil {
		b.recs = map[string]idleRec{}
		b.due = btree.NewG(8, idleLess)
	}
}

// forget drops a workload's record: it is busy, drained or gone.
func (b *idleBook) forget(id string) {
	r, ok := b.recs[id]
	if !ok {
		return
	}
	delete(b.recs, id)
	if !r.due.IsZero() {
		b.due.Delete(idleKey{due: r.due, id: id})
	}
}

// idleRule returns the rule for e's class.
func (s *Scheduler) idleRule(e *entry) (IdleRule, bool) {
	for _, r := range s.cfg.Policy.IdleReclaim {
		if r.Class == e.class.Name && e.class.Name != "" {
			return r, true
		}
	}
	return IdleRule{}, false
}

// noteIdle records that e has been idle since since.
func (s *Scheduler) noteIdle(e *entry, since time.Time) {
	s.idle.init()
	rec := idleRec{since: since}
	if r, ok := s.idleRule(e); ok {
		rec.due = since.Add(r.After)
		s.idle.due.ReplaceOrInsert(idleKey{due: rec.due, id: e.w.ID})
	}
	s.idle.recs[e.w.ID] = rec
}

// ReportUsage tells the scheduler whether a running workload was busy
// (its GPUs doing work, by whatever measure the host uses: SM activity
// above a threshold, requests served) or idle at now. A workload is idle
// from its first idle report with no busy report after it; a busy report
// clears that. A workload never reported is never idle: the scheduler
// acts only on what the host reports. Under a Policy.IdleReclaim rule for
// its class, the first cycle at or after the end of its idle limit drains
// it (reason gang.DrainIdle). It is refused for an unknown workload and
// for one that holds no GPUs.
func (s *Scheduler) ReportUsage(now time.Time, id string, busy bool) error {
	if err := s.tick("usage", now); err != nil {
		return err
	}
	e, ok := s.work[id]
	if !ok {
		return refuse("usage", id, ErrUnknownID, "")
	}
	if !e.state().HoldsGPUs() {
		return refuse("usage", id, ErrBadState, "workload is %s, not running", e.state())
	}
	s.advance(now)
	_, idle := s.idle.recs[id]
	switch {
	case busy:
		s.idle.forget(id)
	case !idle:
		s.noteIdle(e, now)
	}
	return nil
}

// IdleSince returns since when a running workload has been reported
// idle, and false when it is busy, was never reported or is unknown.
func (s *Scheduler) IdleSince(id string) (time.Time, bool) {
	r, ok := s.idle.recs[id]
	return r.since, ok
}

// reclaimIdle drains, under the drain contract, every running workload
// idle past its class's rule, by due time then ID. Nobody is nominated for
// its GPUs: they return to the pool when it exits.
func (s *Scheduler) reclaimIdle(now time.Time, d *Decisions) {
	if s.idle.due == nil || s.idle.due.Len() == 0 {
		return
	}
	var due []idleKey
	s.idle.due.Ascend(func(k idleKey) bool {
		if k.due.After(now) {
			return false
		}
		due = append(due, k)
		return true
	})
	for _, k := range due {
		e := s.work[k.id]
		s.idle.forget(k.id)
		if e.state() != gang.Admitted {
			continue // draining already: it keeps its deadline
		}
		rule, _ := s.idleRule(e)
		grace := rule.Grace
		if grace == 0 {
			grace = e.grace()
		}
		r, err := s.books.DrainFor(k.id, now, now.Add(grace), gang.DrainIdle)
		if err != nil {
			panic("fleet: the ledger refused an idle drain: " + err.Error())
		}
		x := Drain{ID: k.id, Deadline: r.Drain.Deadline, Reason: gang.DrainIdle}
		d.Drain = append(d.Drain, x)
		ev := s.event(EventDrainStarted, now, e)
		ev.Reason, ev.Deadline = x.Reason.String(), x.Deadline
		s.emit(ev)
	}
}
