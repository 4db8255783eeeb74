package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress shows on stderr how far the runs are: the simulated days done
// over all runs and an estimate of the time left. On a terminal the line
// is rewritten in place; elsewhere (a pipe, a CI log) it prints a plain
// line at each tenth of the work, so a log stays short.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	now    func() time.Time
	start  time.Time
	days   int       // simulated days of one run
	done   []float64 // each run's share done, 0 to 1
	tenth  int       // the last tenth printed, off a terminal
	width  int       // the width of the line on screen, to blank it
	closed bool
}

// isTerminal says whether w is a character device, as a terminal is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress starts a report for runs runs of days simulated days each
// and prints its first line at once.
func newProgress(w io.Writer, tty bool, now func() time.Time, runs, days int) *progress {
	p := &progress{w: w, tty: tty, now: now, start: now(), days: days, done: make([]float64, runs)}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.show(true)
	return p
}

// update records that run k has done share of its days.
func (p *progress) update(k int, share float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done[k] = min(1, max(p.done[k], share))
	p.show(false)
}

// note prints a line of its own (a run that ended), keeping the progress
// line below it on a terminal.
func (p *progress) note(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.blank()
	}
	fmt.Fprintln(p.w, line)
	if p.tty && !p.closed {
		p.show(true)
	}
}

// finish ends the progress line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && !p.closed {
		p.blank()
	}
	p.closed = true
}

func (p *progress) blank() {
	if p.width > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.width)+"\r")
		p.width = 0
	}
}

// share is the part of all the work done, 0 to 1.
func (p *progress) share() float64 {
	sum := 0.0
	for _, d := range p.done {
		sum += d
	}
	return sum / float64(len(p.done))
}

func (p *progress) show(force bool) {
	if p.closed {
		return
	}
	s := p.share()
	if !p.tty {
		tenth := int(s * 10)
		if !force && tenth <= p.tenth {
			return
		}
		p.tenth = tenth
	}
	line := p.line(s)
	if p.tty {
		pad := ""
		if n := p.width - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprint(p.w, "\r"+line+pad)
		p.width = len(line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// line is the progress text: "simulated 12 of 60 days (20%), 4 s so far,
// about 16 s left".
func (p *progress) line(s float64) string {
	total := p.days * len(p.done)
	elapsed := p.now().Sub(p.start)
	left := "estimating the time left"
	if s > 0 {
		rest := time.Duration(float64(elapsed) * (1 - s) / s)
		left = "about " + short(rest) + " left"
	}
	return fmt.Sprintf("simulated %.0f of %d days (%.0f%%), %s so far, %s",
		s*float64(total), total, 100*s, short(elapsed), left)
}

// short prints a wall-clock duration to the second.
func short(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
