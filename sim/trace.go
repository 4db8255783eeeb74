package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrTrace wraps every refusal of a trace file.
var ErrTrace = errors.New("sim: bad trace")

// TraceJob is one job of a trace: when it arrives (after the trace's
// first job), how long it runs at full speed, its GPUs and its team.
type TraceJob struct {
	Arrival  time.Duration // after the trace's first job
	Duration time.Duration // its run time at full speed
	GPUs     int           // its GPUs
	Team     string        // its team (the trace's virtual cluster)
}

// TraceError says where a trace is malformed.
type TraceError struct {
	Line   int    // the line, from 1
	Detail string // what is wrong
}

// Error says what was refused, where, and why.
func (e *TraceError) Error() string {
	return fmt.Sprintf("%v: line %d: %s", ErrTrace, e.Line, e.Detail)
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *TraceError) Unwrap() error { return ErrTrace }

// ReadPhilly reads the job-level CSV of the Microsoft Philly trace
// (columns timestamp, duration, num_gpus, gpu_time, cluster; Jeon et al.,
// USENIX ATC 2019, CC BY 4.0). Lines starting with '#' are comments. Jobs
// come back in arrival order (ties by line), arrivals relative to the
// earliest one.
func ReadPhilly(r io.Reader) ([]TraceJob, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	type row struct {
		at   time.Time
		job  TraceJob
		line int
	}
	var rows []row
	header := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A malformed record has no fields to ask positions of: the
			// CSV error carries its line.
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			return nil, &TraceError{Line: line, Detail: err.Error()}
		}
		line, _ := cr.FieldPos(0)
		if header {
			header = false
			if len(rec) > 0 && rec[0] == "timestamp" {
				continue
			}
		}
		if len(rec) < 5 {
			return nil, &TraceError{Line: line, Detail: fmt.Sprintf("%d fields, want 5", len(rec))}
		}
		at, err := time.Parse(time.DateTime, strings.TrimSpace(rec[0]))
		if err != nil {
			return nil, &TraceError{Line: line, Detail: "timestamp: " + err.Error()}
		}
		dur, err := strconv.ParseFloat(strings.TrimSpace(rec[1]), 64)
		if err != nil || !(dur > 0 && dur < 1e9) {
			return nil, &TraceError{Line: line, Detail: fmt.Sprintf("duration %q: want seconds above 0", rec[1])}
		}
		gpus, err := strconv.Atoi(strings.TrimSpace(rec[2]))
		if err != nil || gpus < 1 || gpus > 1<<16 {
			return nil, &TraceError{Line: line, Detail: fmt.Sprintf("num_gpus %q: want 1-65536", rec[2])}
		}
		team := strings.TrimSpace(rec[4])
		if team == "" {
			return nil, &TraceError{Line: line, Detail: "empty cluster"}
		}
		rows = append(rows, row{at: at, line: line, job: TraceJob{Duration: time.Duration(dur * float64(time.Second)), GPUs: gpus, Team: team}})
	}
	if len(rows) == 0 {
		return nil, &TraceError{Detail: "no jobs"}
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.line - b.line
	})
	out := make([]TraceJob, len(rows))
	for i, r := range rows {
		out[i] = r.job
		out[i].Arrival = r.at.Sub(rows[0].at)
	}
	return out, nil
}

// traceMaxGang is the largest gang a trace job becomes on a fleet of
// gpus GPUs: the synthetic mix's cap.
func traceMaxGang(gpus int) int { return min(512, max(8, gpus/4)) }

// traceShape is what a trace job asks of the simulated fleet: gangs of 8
// GPUs or more in whole 8-GPU nodes (capped at the largest gang), and
// its run time clamped to 1 minute - 3 days.
func traceShape(tj TraceJob, maxGang int) (gpus int, run time.Duration) {
	gpus = tj.GPUs
	if gpus >= 8 {
		gpus = min((gpus+7)/8*8, maxGang)
	}
	return gpus, min(max(tj.Duration, time.Minute), 72*time.Hour)
}

// OfferedGPUs is the average GPU demand the jobs arriving within window
// offer a fleet of gpus GPUs: their GPUs x the part of their run time
// (as the simulator runs them) that falls inside the window, were each
// to start on arrival, over the window's length.
func OfferedGPUs(jobs []TraceJob, gpus int, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	maxGang := traceMaxGang(gpus)
	sum := 0.0
	for _, tj := range jobs {
		if tj.Arrival >= window {
			break
		}
		g, run := traceShape(tj, maxGang)
		sum += float64(g) * min(run, window-tj.Arrival).Hours()
	}
	return sum / window.Hours()
}

// CompressTrace scales a trace's arrival times so that the jobs arriving
// within window offer target GPUs on average (OfferedGPUs), keeping every
// job's size and run time. It returns the scaled copy and the
// compression: 2 means arrivals come twice as fast. A trace that cannot
// offer the target even compressed 1,000 times comes back at that.
func CompressTrace(jobs []TraceJob, gpus int, window time.Duration, target float64) ([]TraceJob, float64) {
	scaled := func(f float64) []TraceJob {
		out := make([]TraceJob, len(jobs))
		for i, tj := range jobs {
			out[i] = tj
			out[i].Arrival = time.Duration(float64(tj.Arrival) / f)
		}
		return out
	}
	// Offered load grows with the compression: bisect on its logarithm.
	lo, hi := math.Log(1e-3), math.Log(1e3)
	for range 60 {
		mid := (lo + hi) / 2
		if OfferedGPUs(scaled(math.Exp(mid)), gpus, window) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	f := math.Exp(hi)
	return scaled(f), f
}
