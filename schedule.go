package fleet

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/fleetsched/fleet/quota"
)

// SetQuotaSchedule makes quotas follow sched from now on: at each of its
// boundaries (hours of the day, days of the week, date ranges: batch 0
// GPUs by day and 400 at night, a team's guarantee raised for a booking's
// window) the cycle sets the quotas it names, as SetQueue would. Nothing is
// evicted by a change: work a lowered quota leaves borrowing is reclaimed
// by the next cycles under the drain contract. The schedule owns the
// (queue, flavor) quotas it names: a SetQueue of one of them lasts until
// the next boundary. nil stops following a schedule, leaving the quotas in
// force.
//
// It is refused whole, changing nothing, when the schedule's guarantees
// exceed the nodes in service at some instant (ErrOverCapacity), when it
// would break an approved booking, when it (its base included) names a
// cohort or queue the quota tree lacks (ErrInvalidQuota wrapping
// quota.ErrUnknownNode, naming it), or when it is not one
// quota.NewSchedule made (ErrInvalidQuota).
func (s *Scheduler) SetQuotaSchedule(now time.Time, sched *quota.Schedule) error {
	if err := s.tick("quota-schedule", now); err != nil {
		return err
	}
	if sched != nil {
		if err := s.checkScheduleNames("quota-schedule", sched); err != nil {
			return err
		}
		if err := sched.ValidateCapacity(s.capacity(-1), now); err != nil {
			return &Error{Op: "quota-schedule", Err: fmt.Errorf("%w: %w", ErrOverCapacity, err)}
		}
	}
	if err := s.cal.SetSchedule(now, sched); err != nil {
		return &Error{Op: "quota-schedule", Err: fmt.Errorf("%w: %w", ErrOverCapacity, err)}
	}
	s.advance(now)
	s.sched, s.nextQuota = sched, now
	s.applySchedule(now)
	return nil
}

// checkScheduleNames refuses a schedule NewSchedule did not make and one
// whose base names a cohort or queue the tree in force lacks (its rules
// name only nodes of its base), with ErrInvalidQuota naming it.
func (s *Scheduler) checkScheduleNames(op string, sched *quota.Schedule) error {
	if err := sched.Validate(); err != nil {
		return &Error{Op: op, Detail: "quota schedule", Err: fmt.Errorf("%w: %w", ErrInvalidQuota, err)}
	}
	for _, n := range sched.Base().Nodes {
		if _, ok := s.tree.Node(n.Name); !ok {
			return &Error{Op: op, Detail: fmt.Sprintf("quota schedule: base node %q", n.Name),
				Err: fmt.Errorf("%w: %w: the quota tree has no node %q", ErrInvalidQuota, quota.ErrUnknownNode, n.Name)}
		}
	}
	return nil
}

// QuotaSchedule returns the schedule quotas follow (nil: none).
func (s *Scheduler) QuotaSchedule() *quota.Schedule { return s.sched }

// nodeSpec returns the tree node named name as it is in force.
func (s *Scheduler) nodeSpec(name string) (quota.NodeSpec, bool) {
	for _, n := range s.tree.Spec().Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return quota.NodeSpec{}, false
}

// applySchedule sets the quotas in force at now when a boundary has come,
// and finds the next one.
func (s *Scheduler) applySchedule(now time.Time) {
	if s.sched == nil || now.Before(s.nextQuota) {
		return
	}
	for _, nq := range s.sched.At(now) {
		spec, ok := s.nodeSpec(nq.Node)
		if !ok {
			continue
		}
		i := slices.IndexFunc(spec.Quotas, func(q quota.FlavorQuota) bool { return q.Flavor == nq.Quota.Flavor })
		switch {
		case i < 0:
			spec.Quotas = append(spec.Quotas, nq.Quota)
		case reflect.DeepEqual(spec.Quotas[i], nq.Quota):
			continue
		default:
			spec.Quotas[i] = nq.Quota
		}
		if err := s.books.SetQuotaNode(spec, nil); err != nil {
			// The schedule was checked against the tree when it was set;
			// a live edit since (a flavor dropped) can make one rule
			// inapplicable: the rest still apply.
			if !errors.Is(err, quota.ErrInvalidSpec) {
				panic("fleet: applying a checked quota schedule: " + err.Error())
			}
			continue
		}
		s.emit(Event{Kind: EventQueueChanged, Time: now, Queue: nq.Node, Reason: "quota schedule"})
	}
	if next, ok := s.sched.NextChange(now); ok {
		s.nextQuota = next
	} else {
		s.nextQuota = time.Time{}
		s.sched = nil
	}
}
