package slurm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Call is one command of a recorded session: its words, its output and
// the error it ended with ("" for none).
type Call struct {
	Args []string `json:"args"`          // the command and its arguments
	Out  string   `json:"out,omitempty"` // what it printed
	Err  string   `json:"err,omitempty"` // its error, "" for none
}

// Record is a Runner that runs commands through another and keeps every
// call, to be written as a session (WriteSession) and replayed in tests.
type Record struct {
	// Runner runs the commands recorded.
	Runner Runner
	mu     sync.Mutex
	calls  []Call
}

// Run runs the command and records it.
func (r *Record) Run(ctx context.Context, args ...string) ([]byte, error) {
	out, err := r.Runner.Run(ctx, args...)
	c := Call{Args: slices.Clone(args), Out: string(out)}
	if err != nil {
		c.Err = err.Error()
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return out, err
}

// Clock records the times a host reads from c, as calls of the word
// "now", so that a replay reads them back (Replay.Now).
func (r *Record) Clock(c Clock) Clock { return recordClock{c, r} }

type recordClock struct {
	c Clock
	r *Record
}

func (rc recordClock) Now() time.Time {
	t := rc.c.Now()
	rc.r.mu.Lock()
	rc.r.calls = append(rc.r.calls, Call{Args: []string{"now"}, Out: t.Format(time.RFC3339Nano)})
	rc.r.mu.Unlock()
	return t
}

// Calls returns the calls recorded so far.
func (r *Record) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// WriteSession writes calls as JSON lines.
func WriteSession(w io.Writer, calls []Call) error {
	enc := json.NewEncoder(w)
	for _, c := range calls {
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}

// ReadSession reads the JSON lines WriteSession wrote.
func ReadSession(r io.Reader) ([]Call, error) {
	var calls []Call
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("slurm: session line %d: %w", n, err)
		}
		if len(c.Args) == 0 {
			return nil, fmt.Errorf("slurm: session line %d: no command", n)
		}
		calls = append(calls, c)
	}
	return calls, sc.Err()
}

// ErrNotRecorded is returned by Replay for a command the session does
// not hold (any more).
var ErrNotRecorded = errors.New("slurm: command not in the recorded session")

// Replay is a Runner that answers from a recorded session: each command
// takes the first unused call with the same words, so commands the host
// runs in parallel may come in any order. The session's commands that
// change the cluster (scontrol, scancel) must all be asked for
// (Unused); reads may be left over.
type Replay struct {
	mu     sync.Mutex
	calls  []Call
	used   []bool
	missed []string
}

// NewReplay replays calls.
func NewReplay(calls []Call) *Replay {
	return &Replay{calls: calls, used: make([]bool, len(calls))}
}

// Run answers one command.
func (r *Replay) Run(_ context.Context, args ...string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.calls {
		if r.used[i] || !slices.Equal(c.Args, args) {
			continue
		}
		r.used[i] = true
		if c.Err != "" {
			return []byte(c.Out), &CommandError{Args: args, Output: c.Out, Err: errors.New(c.Err)}
		}
		return []byte(c.Out), nil
	}
	r.missed = append(r.missed, strings.Join(args, " "))
	return nil, &CommandError{Args: args, Err: ErrNotRecorded}
}

// Now is a Clock: the next time the session recorded (Record.Clock),
// or the last one when none is left.
func (r *Replay) Now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for i, c := range r.calls {
		if c.Args[0] != "now" {
			continue
		}
		t, _ := time.Parse(time.RFC3339Nano, c.Out)
		if !r.used[i] {
			r.used[i] = true
			return t
		}
		last = t
	}
	return last
}

// Missed lists the commands asked for that the session does not hold.
func (r *Replay) Missed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.missed)
}

// Left reports whether a read of the session's (sinfo, squeue) is still
// unused: a host replaying it has not seen the whole session yet.
func (r *Replay) Left(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.calls {
		if !r.used[i] && c.Args[0] == name {
			return true
		}
	}
	return false
}

// Unused lists the session's commands that change the cluster and were
// not asked for.
func (r *Replay) Unused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for i, c := range r.calls {
		if !r.used[i] && (c.Args[0] == "scontrol" || c.Args[0] == "scancel") {
			out = append(out, strings.Join(c.Args, " "))
		}
	}
	return out
}
