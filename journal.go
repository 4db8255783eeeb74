package fleet

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Call is one host call as a journal records it: a JSON line.
type Call struct {
	Op       string          `json:"op"`                 // submit, cancel, exited, checkpointed, drain, health, adopt, schedule, set-queue, remove-node, add-node, usage, warm, defragment
	Time     time.Time       `json:"time"`               // the now of the call
	Workload *gang.Workload  `json:"workload,omitempty"` // submit, adopt: the workload
	ID       string          `json:"id,omitempty"`       // the workload or booking the call names
	Exit     gang.ExitReason `json:"exit,omitempty"`     // exited: how it ended
	Node     string          `json:"node,omitempty"`     // health, remove-node, add-node, warm: the node
	Health   topology.Health `json:"health,omitempty"`   // health: the node's new health
	Started  time.Time       `json:"started,omitzero"`   // adopt: when the workload started
	At       time.Time       `json:"at,omitzero"`        // checkpointed: when it was taken
	Grace    time.Duration   `json:"grace,omitempty"`    // drain: the grace asked for
	// Bookings: the request proposed; the option approved; who decided
	// and why; a shortened booking's new end.
	Request *calendar.Request `json:"request,omitempty"`
	Option  int               `json:"option,omitempty"`
	Who     string            `json:"who,omitempty"`
	Why     string            `json:"why,omitempty"`
	End     time.Time         `json:"end,omitzero"`
	Pods    []PodAssignment   `json:"pods,omitempty"`
	// A quota schedule: its base, its rules and the location its days
	// and times of day are read in (by name).
	QuotaBase     *quota.Spec         `json:"quotaBase,omitempty"`
	QuotaSchedule *quota.ScheduleSpec `json:"quotaSchedule,omitempty"`
	Location      string              `json:"location,omitempty"`
	// QuotaNode is set-queue's edited cohort or queue.
	QuotaNode *quota.NodeSpec `json:"quotaNode,omitempty"`
	// Busy is usage's report: the workload was busy (else idle).
	Busy bool `json:"busy,omitempty"`
	// Models is warm's report: the models with weights on Node.
	Models []string `json:"models,omitempty"`
	// Plan is defragment's plan.
	Plan *DefragPlan `json:"plan,omitempty"`
	// Adoption is adopt's workload as the host saw it. Journals written
	// before it existed give the workload, Started and Pods instead.
	Adoption *Adoption `json:"adoption,omitempty"`
	// Calendar is adopt-calendar's calendar.
	Calendar *calendar.State `json:"calendar,omitempty"`
	// DefragSpent is the record of an adopt-defrag call.
	DefragSpent []DefragSpend `json:"defragSpent,omitempty"`
}

// Journal wraps a Scheduler and records every call, before making it, as a
// JSON line. Because the Scheduler is deterministic, Replay of the journal
// gives the same decisions, byte for byte: a bug report is a journal.
// Its methods have the Scheduler's signatures. A call whose line cannot be
// written is not made (it returns the write error); Schedule, which has no
// error to return, still runs the cycle and keeps the write error for Err,
// since the host must act on the decisions either way.
type Journal struct {
	s   *Scheduler
	enc *json.Encoder
	err error // the first write error of a Schedule line
}

// Err returns the first error writing a Schedule line, if any: the
// journal is then incomplete and will not replay this run.
func (j *Journal) Err() error { return j.err }

// NewJournal records the calls made through it to w.
func NewJournal(s *Scheduler, w io.Writer) *Journal { return &Journal{s: s, enc: json.NewEncoder(w)} }

// Scheduler returns the wrapped scheduler, for read-only calls.
func (j *Journal) Scheduler() *Scheduler { return j.s }

// Submit records and forwards Scheduler.Submit.
func (j *Journal) Submit(now time.Time, w gang.Workload) error {
	c := w.Clone()
	return j.call(Call{Op: "submit", Time: now, Workload: &c})
}

// Cancel records and forwards Scheduler.Cancel.
func (j *Journal) Cancel(now time.Time, id string) error {
	return j.call(Call{Op: "cancel", Time: now, ID: id})
}

// Exited records and forwards Scheduler.Exited.
func (j *Journal) Exited(now time.Time, id string, how gang.ExitReason) error {
	return j.call(Call{Op: "exited", Time: now, ID: id, Exit: how})
}

// Checkpointed records and forwards Scheduler.Checkpointed.
func (j *Journal) Checkpointed(now time.Time, id string, at time.Time) error {
	return j.call(Call{Op: "checkpointed", Time: now, ID: id, At: at})
}

// RequestDrain records and forwards Scheduler.RequestDrain.
func (j *Journal) RequestDrain(now time.Time, id string, grace time.Duration) (Drain, error) {
	if err := j.enc.Encode(Call{Op: "drain", Time: now, ID: id, Grace: grace}); err != nil {
		return Drain{}, err
	}
	return j.s.RequestDrain(now, id, grace)
}

// Propose records and forwards Scheduler.Propose.
func (j *Journal) Propose(now time.Time, req calendar.Request) ([]calendar.Option, error) {
	r := req
	r.PodSets = slices.Clone(req.PodSets)
	if err := j.enc.Encode(Call{Op: "propose", Time: now, Request: &r}); err != nil {
		return nil, err
	}
	return j.s.Propose(now, req)
}

// Approve records and forwards Scheduler.Approve.
func (j *Journal) Approve(now time.Time, id string, option int, who string) (calendar.Booking, error) {
	if err := j.enc.Encode(Call{Op: "approve", Time: now, ID: id, Option: option, Who: who}); err != nil {
		return calendar.Booking{}, err
	}
	return j.s.Approve(now, id, option, who)
}

// Reject records and forwards Scheduler.Reject.
func (j *Journal) Reject(now time.Time, id, who, reason string) error {
	return j.call(Call{Op: "reject", Time: now, ID: id, Who: who, Why: reason})
}

// CancelBooking records and forwards Scheduler.CancelBooking.
func (j *Journal) CancelBooking(now time.Time, id, who, reason string) error {
	return j.call(Call{Op: "cancel-booking", Time: now, ID: id, Who: who, Why: reason})
}

// ShortenBooking records and forwards Scheduler.ShortenBooking.
func (j *Journal) ShortenBooking(now time.Time, id string, end time.Time, who, reason string) error {
	return j.call(Call{Op: "shorten-booking", Time: now, ID: id, End: end, Who: who, Why: reason})
}

// RelocateBooking records and forwards Scheduler.RelocateBooking.
func (j *Journal) RelocateBooking(now time.Time, id, who string) (calendar.Booking, error) {
	if err := j.enc.Encode(Call{Op: "relocate-booking", Time: now, ID: id, Who: who}); err != nil {
		return calendar.Booking{}, encodeError("relocate-booking", err)
	}
	return j.s.RelocateBooking(now, id, who)
}

// SetQuotaSchedule records and forwards Scheduler.SetQuotaSchedule. A
// replay reads the schedule's location by name (time.LoadLocation).
func (j *Journal) SetQuotaSchedule(now time.Time, sched *quota.Schedule) error {
	c := Call{Op: "quota-schedule", Time: now}
	if sched != nil {
		base, spec := sched.Base(), sched.Spec()
		c.QuotaBase, c.QuotaSchedule, c.Location = &base, &spec, sched.Location().String()
	}
	return j.call(c)
}

// SetNodeHealth records and forwards Scheduler.SetNodeHealth.
func (j *Journal) SetNodeHealth(now time.Time, node string, h topology.Health) ([]string, error) {
	if err := j.enc.Encode(Call{Op: "health", Time: now, Node: node, Health: h}); err != nil {
		return nil, err
	}
	return j.s.SetNodeHealth(now, node, h)
}

// Adopt records and forwards Scheduler.Adopt.
func (j *Journal) Adopt(now time.Time, a Adoption) error {
	a.Workload = a.Workload.Clone()
	return j.call(Call{Op: "adopt", Time: now, Adoption: &a})
}

// AdoptCalendar records and forwards Scheduler.AdoptCalendar.
func (j *Journal) AdoptCalendar(now time.Time, st calendar.State) error {
	return j.call(Call{Op: "adopt-calendar", Time: now, Calendar: &st})
}

// AdoptDefragSpent records and forwards Scheduler.AdoptDefragSpent.
func (j *Journal) AdoptDefragSpent(now time.Time, spent []DefragSpend) error {
	return j.call(Call{Op: "adopt-defrag", Time: now, DefragSpent: slices.Clone(spent)})
}

// Schedule records and forwards Scheduler.Schedule.
func (j *Journal) Schedule(now time.Time) Decisions {
	if err := j.enc.Encode(Call{Op: "schedule", Time: now}); err != nil && j.err == nil {
		j.err = err
	}
	return j.s.Schedule(now)
}

func (j *Journal) call(c Call) error {
	if err := j.enc.Encode(c); err != nil {
		return encodeError(c.Op, err)
	}
	_, err := apply(j.s, c)
	return err
}

// encodeError says a call could not be recorded: a time JSON cannot hold
// (a year past 9999) is the caller's error, a failed write the writer's.
// The call is not made.
func encodeError(op string, err error) error {
	var je *json.MarshalerError
	if errors.As(err, &je) {
		return &Error{Op: op, Detail: "journal: cannot record the call", Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	return &Error{Op: op, Detail: "journal: cannot record the call", Err: err}
}

// apply makes one recorded call.
func apply(s *Scheduler, c Call) (*Decisions, error) {
	switch c.Op {
	case "submit", "adopt":
		if c.Op == "adopt" && c.Adoption != nil {
			return nil, s.Adopt(c.Time, *c.Adoption)
		}
		if c.Workload == nil {
			return nil, fmt.Errorf("%w: %s without workload", ErrInvalid, c.Op)
		}
		if c.Op == "submit" {
			return nil, s.Submit(c.Time, *c.Workload)
		}
		return nil, s.Adopt(c.Time, Adoption{Workload: *c.Workload, Started: c.Started, Pods: c.Pods})
	case "adopt-calendar":
		if c.Calendar == nil {
			return nil, fmt.Errorf("%w: adopt-calendar without calendar", ErrInvalid)
		}
		return nil, s.AdoptCalendar(c.Time, *c.Calendar)
	case "adopt-defrag":
		return nil, s.AdoptDefragSpent(c.Time, c.DefragSpent)
	case "cancel":
		return nil, s.Cancel(c.Time, c.ID)
	case "exited":
		return nil, s.Exited(c.Time, c.ID, c.Exit)
	case "checkpointed":
		return nil, s.Checkpointed(c.Time, c.ID, c.At)
	case "drain":
		_, err := s.RequestDrain(c.Time, c.ID, c.Grace)
		return nil, err
	case "propose":
		if c.Request == nil {
			return nil, fmt.Errorf("%w: propose without request", ErrInvalid)
		}
		_, err := s.Propose(c.Time, *c.Request)
		return nil, err
	case "approve":
		_, err := s.Approve(c.Time, c.ID, c.Option, c.Who)
		return nil, err
	case "reject":
		return nil, s.Reject(c.Time, c.ID, c.Who, c.Why)
	case "cancel-booking":
		return nil, s.CancelBooking(c.Time, c.ID, c.Who, c.Why)
	case "shorten-booking":
		return nil, s.ShortenBooking(c.Time, c.ID, c.End, c.Who, c.Why)
	case "relocate-booking":
		_, err := s.RelocateBooking(c.Time, c.ID, c.Who)
		return nil, err
	case "health":
		_, err := s.SetNodeHealth(c.Time, c.Node, c.Health)
		return nil, err
	case "quota-schedule":
		if c.QuotaSchedule == nil || c.QuotaBase == nil {
			return nil, s.SetQuotaSchedule(c.Time, nil)
		}
		loc, err := time.LoadLocation(c.Location)
		if err != nil {
			return nil, fmt.Errorf("%w: quota schedule location %q: %w", ErrInvalid, c.Location, err)
		}
		sched, err := quota.NewSchedule(*c.QuotaBase, *c.QuotaSchedule, loc)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidQuota, err)
		}
		return nil, s.SetQuotaSchedule(c.Time, sched)
	case "schedule":
		d := s.Schedule(c.Time)
		return &d, nil
	case "set-queue", "remove-node", "add-node", "usage":
		return nil, applyLive(s, c)
	case "warm":
		return nil, s.SetWarm(c.Time, c.Node, c.Models)
	case "defragment":
		return nil, applyDefrag(s, c)
	}
	return nil, fmt.Errorf("%w: unknown journal op %q", ErrInvalid, c.Op)
}

// knownOp reports whether op is a call a journal records.
func knownOp(op string) bool {
	switch op {
	case "submit", "adopt", "cancel", "exited", "checkpointed", "drain", "health", "schedule",
		"propose", "approve", "reject", "cancel-booking", "shorten-booking", "relocate-booking",
		"set-queue", "remove-node", "add-node", "usage", "quota-schedule", "warm", "defragment", "adopt-calendar",
		"adopt-defrag":
		return true
	}
	return false
}

// Replay builds a scheduler from cfg and makes every call of a journal in
// order, handing each cycle's Decisions to fn. Calls the scheduler refused
// when recorded are refused again, the same way; a malformed line stops
// the replay with an error naming it.
func Replay(cfg Config, r io.Reader, fn func(Decisions)) (*Scheduler, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		var c Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return s, fmt.Errorf("%w: journal line %d: %w", ErrInvalid, line, err)
		}
		if !knownOp(c.Op) {
			return s, fmt.Errorf("%w: journal line %d: unknown op %q", ErrInvalid, line, c.Op)
		}
		// A call refused when it was recorded is refused again, the same
		// way, leaving the state unchanged: replay goes on.
		d, _ := apply(s, c)
		if d != nil && fn != nil {
			fn(*d)
		}
	}
	return s, sc.Err()
}
