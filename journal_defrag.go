package fleet

import (
	"fmt"
	"time"
)

// Defragment records and forwards Scheduler.Defragment, with the plan
// carried out: a replay carries out the same plan, pod by pod, whatever
// PlanDefrag would find then. Planning changes nothing and is not
// recorded, and nor is a plan Defragment refuses.
func (j *Journal) Defragment(now time.Time, plan DefragPlan) ([]Drain, error) {
	if _, err := j.s.checkDefrag(now, plan); err != nil {
		return nil, err
	}
	if err := j.enc.Encode(Call{Op: "defragment", Time: now, Plan: &plan}); err != nil {
		return nil, encodeError("defragment", err)
	}
	return j.s.Defragment(now, plan)
}

// applyDefrag makes a recorded defragmentation.
func applyDefrag(s *Scheduler, c Call) error {
	if c.Plan == nil {
		return fmt.Errorf("%w: defragment without plan", ErrInvalid)
	}
	_, err := s.Defragment(c.Time, *c.Plan)
	return err
}
