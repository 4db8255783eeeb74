package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// short is a short version of the example: two days of history, a
// booking a day later for a day.
func short(t *testing.T) (string, *outcome) {
	t.Helper()
	var b bytes.Buffer
	out, err := run(options{seed: 3, history: 48 * time.Hour, lead: 12 * time.Hour, window: 24 * time.Hour,
		gpus: 1024, cycle: time.Minute}, &b, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), out
}

// The same seed gives byte-identical output.
func TestDeterministic(t *testing.T) {
	a, _ := short(t)
	b, _ := short(t)
	if a != b {
		t.Fatalf("two runs of the same seed differ:\n%s\n----\n%s", a, b)
	}
}

// The approved booking's promise: every drain within its contract, and
// from the start on the booked blocks hold only the booking's work.
func TestPromise(t *testing.T) {
	_, out := short(t)
	p := out.promise
	if p.Drains == 0 || p.BookingDrains == 0 || p.Late > 0 || p.MinNotice < 2*time.Minute {
		t.Errorf("drains outside the contract: %+v", p)
	}
	if p.Started.IsZero() {
		t.Fatalf("the booking's work never started: %+v", p)
	}
	if p.Foreign > 0 || p.Checked == 0 {
		t.Errorf("blocks not whole from the start: %d of %d snapshots with other work (first %s); "+
			"booking work started %s after the start", p.Foreign, p.Checked, p.First, p.Started.Sub(out.start))
	}
}

// The report is read in a terminal: no line is wider than 100 columns.
func TestLinesFitATerminal(t *testing.T) {
	out, _ := short(t)
	for i, line := range strings.Split(out, "\n") {
		if len(line) > 100 {
			t.Errorf("line %d is %d columns: %s", i+1, len(line), line)
		}
	}
}

// Windows print in days, as the memo beside them does, never as 504h0m0s.
func TestSpanInDays(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{21 * 24 * time.Hour, "21 days"},
		{744 * time.Hour, "31 days"},
		{60 * time.Hour, "2.5 days"},
		{36 * time.Hour, "36 hours"},
		{90 * time.Minute, "1h30m0s"},
	} {
		assert.Equal(t, tc.want, span(tc.d), "%v", tc.d)
	}
}
