package host

import (
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// DrainRecord is what a host keeps of a drain it carried out, where its
// system shows nothing of it (a pod annotation, a state file), so that
// after a restart it hands the drain back to Adopt as it was decided.
type DrainRecord struct {
	// Since and Deadline bound the drain.
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
	// Reason is why it drains.
	Reason gang.DrainReason `json:"reason"`
	// Beneficiaries is every workload it drains for.
	Beneficiaries []string `json:"beneficiaries,omitempty"`
	// KillAsked is when the scheduler first asked to kill it (zero: not
	// yet).
	KillAsked time.Time `json:"killAsked,omitzero"`
}

// Adopted is the drain as Adopt takes it. live says whether a
// beneficiary still exists in the host's system: those that do are the
// drain's Live beneficiaries (the others ended while the host was away).
// A deadline not after Since (a record written by hand, a clock set
// back) becomes Since plus one nanosecond, which Adopt accepts and the
// next cycle kills at.
func (r DrainRecord) Adopted(live func(id string) bool) *fleet.AdoptedDrain {
	d := &fleet.AdoptedDrain{Since: r.Since, Deadline: r.Deadline, Reason: r.Reason,
		Beneficiaries: r.Beneficiaries, KillAsked: r.KillAsked}
	for _, b := range r.Beneficiaries {
		if live(b) {
			d.Live = append(d.Live, b)
		}
	}
	if !d.Deadline.After(d.Since) {
		d.Deadline = d.Since.Add(time.Nanosecond)
	}
	return d
}

// Adopt gives s the adoption a. When s refuses a nominated workload (a
// node of its nomination went away while the host was down), the
// workload is adopted again without the nomination and queues as any
// pending one: dropped is then s's refusal of the nomination, and err
// the outcome of the second try. A host logs dropped and forgets the
// nomination it kept.
func Adopt(s *fleet.Scheduler, now time.Time, a fleet.Adoption) (dropped, err error) {
	err = s.Adopt(now, a)
	if err == nil || len(a.Nominated) == 0 {
		return nil, err
	}
	a.Nominated, a.NominatedReadyBy = nil, time.Time{}
	return err, s.Adopt(now, a)
}
