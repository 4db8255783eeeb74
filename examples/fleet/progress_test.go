package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// clock is a wall clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestProgressLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		tty  bool
		want []string
	}{
		{"a terminal rewrites one line", true, []string{
			"\rsimulated 0 of 60 days (0%), 0 s so far, estimating the time left",
			"\rsimulated 3 of 60 days (5%), 1 s so far, about 19 s left",
			"\rsimulated 30 of 60 days (50%), 10 s so far, about 10 s left",
			"static seed 1 ended\n",
			"\rsimulated 60 of 60 days (100%), 20 s so far, about 0 s left",
		}},
		{"a log gets a plain line a tenth", false, []string{
			"simulated 0 of 60 days (0%), 0 s so far, estimating the time left\n",
			"simulated 30 of 60 days (50%), 10 s so far, about 10 s left\n",
			"static seed 1 ended\n",
			"simulated 60 of 60 days (100%), 20 s so far, about 0 s left\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			c := &clock{t: time.Unix(0, 0)}
			p := newProgress(&w, tc.tty, c.now, 2, 30)
			c.t = c.t.Add(time.Second)
			p.update(0, 0.1)
			c.t = c.t.Add(9 * time.Second)
			p.update(0, 0.5)
			p.update(1, 0.5)
			p.note("static seed 1 ended")
			c.t = c.t.Add(10 * time.Second)
			p.update(0, 1)
			p.update(1, 1)
			p.finish()
			got := w.String()
			at := 0
			for _, want := range tc.want {
				i := strings.Index(got[at:], want)
				if !assert.GreaterOrEqual(t, i, 0, "%q missing after %d in %q", want, at, got) {
					return
				}
				at += i + len(want)
			}
			if tc.tty {
				assert.True(t, strings.HasSuffix(got, "\r"), "the last line is blanked: %q", got)
			} else {
				assert.NotContains(t, got, "\r")
				assert.NotContains(t, got, "(5%)", "a log skips steps below a tenth")
			}
		})
	}
}

func TestShortDurations(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0 s", 1400 * time.Millisecond: "1 s", 59 * time.Second: "59 s", 61 * time.Second: "1m01s", 10 * time.Minute: "10m00s",
	} {
		assert.Equal(t, want, short(d))
	}
}
