package calendar

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinels. Every error the package returns wraps one of them (errors.Is);
// *Error, *ConflictError and *OverCommitError carry the details
// (errors.As). A refused call leaves the Calendar unchanged.
var (
	ErrInvalidConfig   = errors.New("calendar: invalid config")
	ErrInvalidRequest  = errors.New("calendar: invalid request")
	ErrStartInPast     = errors.New("calendar: start in the past")
	ErrBadDuration     = errors.New("calendar: duration not positive")
	ErrUnknownLevel    = errors.New("calendar: unknown level")
	ErrUnknownFlavor   = errors.New("calendar: unknown flavor")
	ErrUnknownQueue    = errors.New("calendar: unknown queue")
	ErrTooLarge        = errors.New("calendar: request too large")
	ErrDuplicateID     = errors.New("calendar: duplicate booking ID")
	ErrUnknownProposal = errors.New("calendar: unknown proposal")
	ErrUnknownOption   = errors.New("calendar: unknown option")
	ErrUnknownBooking  = errors.New("calendar: unknown booking")
	ErrEnded           = errors.New("calendar: booking has ended")
	ErrBadEnd          = errors.New("calendar: invalid new end")
	ErrNoDecider       = errors.New("calendar: decision names nobody")
	ErrInvalidLog      = errors.New("calendar: invalid decision log")
	// ErrNoOffer: no replacement block is offered for the booking (no node
	// of its blocks is down, or none can replace them).
	ErrNoOffer = errors.New("calendar: no replacement offered")
	// ErrConflict: the block overlaps an approved booking of the same
	// domain, or of a domain above or below it, in time.
	ErrConflict = errors.New("calendar: overlaps an approved booking")
	// ErrOverCommitted: guarantees plus approved bookings would exceed the
	// fleet's capacity of a flavor at some instant.
	ErrOverCommitted = errors.New("calendar: guarantees plus bookings exceed capacity")
)

// Error says which call refused which booking or proposal, and why.
type Error struct {
	Op      string // "propose", "approve", "reject", "cancel", "shorten", "new", "restore", "replay"
	Booking string // booking or proposal ID, "" when not about one
	Detail  string // what is wrong, in words, and what to do
	Err     error  // one of the sentinels above
}

// Error says what was refused, where, and why.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %s", e.Err, e.Op)
	if e.Booking != "" {
		fmt.Fprintf(&b, " %q", e.Booking)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	return b.String()
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// Conflict is an approved booking that overlaps a proposed block.
type Conflict struct {
	Booking string    `json:"booking"` // the approved booking overlapped
	Queue   string    `json:"queue"`   // its queue
	Domain  string    `json:"domain"`  // the approved booking's domain
	Start   time.Time `json:"start"`   // its window's start
	End     time.Time `json:"end"`     // and end
}

// ConflictError refuses an approval whose blocks overlap approved bookings.
type ConflictError struct {
	Booking   string     // the booking or proposal refused
	Conflicts []Conflict // every approved booking it overlaps
}

// Error says what was refused, where, and why.
func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %q", ErrConflict, e.Booking)
	for i, c := range e.Conflicts {
		sep := ", "
		if i == 0 {
			sep = " overlaps "
		}
		fmt.Fprintf(&b, "%s%q on %s %s-%s", sep, c.Booking, c.Domain, c.Start.Format(time.RFC3339), c.End.Format(time.RFC3339))
	}
	return b.String()
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// OverCommitError is the first instant at which the guarantees of the
// quota tree plus the approved bookings (the one in question included)
// exceed the fleet's GPUs of a flavor. Queue is the queue of the booking
// whose excess over its own guarantee tips the balance ("" when the
// guarantees alone exceed capacity there).
type OverCommitError struct {
	Queue     string    `json:"queue,omitempty"` // the booking's queue, when its excess tips the balance
	Flavor    string    `json:"flavor"`          // the GPU model
	At        time.Time `json:"at"`              // the first instant over capacity
	Committed int64     `json:"committed"`       // guarantees plus bookings then, in GPUs
	Capacity  int64     `json:"capacity"`        // the flavor's GPUs in service
}

// Error says what was refused, where, and why.
func (e *OverCommitError) Error() string {
	who := ""
	if e.Queue != "" {
		who = fmt.Sprintf(" (queue %q)", e.Queue)
	}
	fix := "lower the guarantees (nominal quotas) to the GPUs in service"
	if e.Queue != "" {
		fix = fmt.Sprintf("book %d fewer GPUs, pick a window clear of other bookings, "+
			"or raise %s's nominal quota by as much and lower another queue's (SetQueue)", e.Committed-e.Capacity, e.Queue)
	}
	return fmt.Sprintf("%v: %s commits %d of %d GPUs at %s%s, %d over: %s", ErrOverCommitted, e.Flavor, e.Committed, e.Capacity,
		e.At.Format(time.RFC3339), who, e.Committed-e.Capacity, fix)
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *OverCommitError) Unwrap() error { return ErrOverCommitted }

func refuse(op, id string, err error, format string, args ...any) error {
	return &Error{Op: op, Booking: id, Detail: fmt.Sprintf(format, args...), Err: err}
}
