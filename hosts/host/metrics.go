package host

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fleetsched/fleet"
)

// Metrics keeps fleet's scheduling figures and serves them at /metrics in
// Prometheus's text exposition format (version 0.0.4), with the standard
// library only: for a host that does not take the Prometheus client into
// its module graph. Its families, names, help, labels and histogram
// buckets are metrics/prom's, which a test of metrics/prom pins byte for
// byte, so one dashboard reads either host:
//
//	fleet_gpus_healthy, fleet_gpus_free, fleet_gpus_nominated, fleet_stranded_gpus   from snapshots
//	fleet_largest_free_block_nodes{level}, fleet_leaf_crossing_gangs{leaf}
//	fleet_gpus_allocated{queue,flavor}, fleet_gpus_borrowed{...}, fleet_gpus_lendable{...}
//	fleet_queue_wait_seconds{queue}                                      histogram, from events
//	fleet_admissions_total{queue,shape}, fleet_preemptions_total{queue,reason}
//	fleet_preemption_lost_gpu_seconds_total{queue}, fleet_drain_deadline_misses_total{queue}
//	fleet_cross_spine_gangs_total{queue}, fleet_node_failures_total
//
// metrics/prom's usage gauges (fleet_gpus_used, fleet_gpus_idle), fed by
// GPU activity samples, are not kept: a host that samples GPUs uses
// metrics/prom. Metrics is safe for concurrent use: the host records
// while the handler serves. The zero value is not ready; use NewMetrics.
type Metrics struct {
	mu       sync.Mutex
	families map[string]*family
}

// family is one metric family: its series by their rendered labels.
type family struct {
	name, help, typ string
	labels          []string // label names, in the order values are given
	series          map[string]*series
}

// series is one labelled value, or one labelled histogram.
type series struct {
	values []string // label values, in family.labels order
	// value is the series' value; a histogram's sum of observations.
	value   float64
	buckets []uint64 // histogram: observations at most each bound
	count   uint64
}

// waitBuckets are the wait histogram's upper bounds in seconds: 1 s to
// about 2.3 days, doubling (metrics/prom's WaitBuckets).
func waitBuckets() []float64 {
	b := make([]float64, 18)
	for i := range b {
		b[i] = math.Ldexp(1, i)
	}
	return b
}

const (
	mHealthy      = "fleet_gpus_healthy"
	mFree         = "fleet_gpus_free"
	mNominated    = "fleet_gpus_nominated"
	mStranded     = "fleet_stranded_gpus"
	mLargestBlock = "fleet_largest_free_block_nodes"
	mLeafCrossing = "fleet_leaf_crossing_gangs"
	mAllocated    = "fleet_gpus_allocated"
	mBorrowed     = "fleet_gpus_borrowed"
	mLendable     = "fleet_gpus_lendable"
	mWait         = "fleet_queue_wait_seconds"
	mAdmissions   = "fleet_admissions_total"
	mPreemptions  = "fleet_preemptions_total"
	mLost         = "fleet_preemption_lost_gpu_seconds_total"
	mMisses       = "fleet_drain_deadline_misses_total"
	mCrossSpine   = "fleet_cross_spine_gangs_total"
	mNodeFailures = "fleet_node_failures_total"
)

// NewMetrics returns Metrics with every family and no series: the
// families without labels read 0 until the first figures come.
func NewMetrics() *Metrics {
	m := &Metrics{families: map[string]*family{}}
	add := func(name, typ, help string, labels ...string) {
		f := &family{name: name, help: help, typ: typ, labels: labels, series: map[string]*series{}}
		m.families[name] = f
		if len(labels) == 0 {
			f.at()
		}
	}
	add(mHealthy, "gauge", "GPUs on healthy nodes.")
	add(mFree, "gauge", "GPUs neither allocated nor nominated.")
	add(mNominated, "gauge", "GPUs held for beneficiaries of drains in progress.")
	add(mStranded, "gauge", "Free GPUs on partly used healthy nodes, which cannot form a whole node.")
	add(mLargestBlock, "gauge", "Most fully free nodes inside one domain of the level.", "level")
	add(mLeafCrossing, "gauge", "Running gangs spanning several leaves with pods under the leaf: how many share its uplinks.", "leaf")
	add(mAllocated, "gauge", "GPUs held by the queue's workloads.", "queue", "flavor")
	add(mBorrowed, "gauge", "GPUs the queue uses above its nominal quota.", "queue", "flavor")
	add(mLendable, "gauge", "Nominal quota the queue does not use.", "queue", "flavor")
	add(mWait, "histogram", "Time from submission to admission.", "queue")
	add(mAdmissions, "counter", "Workloads admitted.", "queue", "shape")
	add(mPreemptions, "counter", "Drains started, by victim queue and reason.", "queue", "reason")
	add(mLost, "counter", "GPU-seconds of work lost since the victims' last checkpoints, as the scheduler estimates it.", "queue")
	add(mMisses, "counter", "Victims killed past their drain deadline.", "queue")
	add(mCrossSpine, "counter", "Gangs admitted across spines.", "queue")
	add(mNodeFailures, "counter", "Nodes reported down.")
	return m
}

// at is the series of the label values, created at zero.
func (f *family) at(values ...string) *series {
	key := strings.Join(values, "\xff")
	s := f.series[key]
	if s == nil {
		s = &series{values: values}
		if f.typ == "histogram" {
			s.buckets = make([]uint64, len(waitBuckets()))
		}
		f.series[key] = s
	}
	return s
}

// RecordAll counts a cycle's events, in order: admissions and their
// waits, drains started and the work they lose, kills, nodes down.
func (m *Metrics) RecordAll(events []fleet.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range events {
		m.record(&events[i])
	}
}

func (m *Metrics) record(e *fleet.Event) {
	switch e.Kind {
	case fleet.EventAdmitted:
		m.families[mAdmissions].at(e.Queue, e.Shape.String()).value++
		w := m.families[mWait].at(e.Queue)
		sec := e.Wait.Seconds()
		for i, le := range waitBuckets() {
			if sec <= le {
				w.buckets[i]++
			}
		}
		w.count++
		w.value += sec
		if e.CrossesSpines {
			m.families[mCrossSpine].at(e.Queue).value++
		}
	case fleet.EventDrainStarted:
		reason := e.Reason
		if reason == "" {
			reason = "unspecified"
		}
		m.families[mPreemptions].at(e.Queue, reason).value++
		if e.LostGPUSeconds > 0 {
			m.families[mLost].at(e.Queue).value += e.LostGPUSeconds
		}
	case fleet.EventKilled:
		m.families[mMisses].at(e.Queue).value++
	case fleet.EventNodeDown:
		m.families[mNodeFailures].at().value++
	}
}

// ObserveSnapshot sets the fleet and quota gauges from s. The labelled
// gauges are reset first, so queues and leaves that disappear stop being
// served.
func (m *Metrics) ObserveSnapshot(s fleet.Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.families[mHealthy].at().value = float64(s.Fleet.HealthyGPUs)
	m.families[mFree].at().value = float64(s.Fleet.FreeGPUs)
	m.families[mNominated].at().value = float64(s.Nominated)
	m.families[mStranded].at().value = float64(s.Fleet.StrandedGPUs)
	for _, name := range []string{mLargestBlock, mLeafCrossing, mAllocated, mBorrowed, mLendable} {
		clear(m.families[name].series)
	}
	for _, b := range s.Fleet.LargestFreeBlock {
		m.families[mLargestBlock].at(b.Level).value = float64(b.Nodes)
	}
	for _, c := range s.Fleet.Crossings {
		m.families[mLeafCrossing].at(c.Leaf).value = float64(c.Gangs)
	}
	for _, q := range s.Queues {
		if !q.IsQueue {
			continue
		}
		for _, f := range q.Flavors {
			m.families[mAllocated].at(q.Name, f.Flavor).value = float64(f.InUse)
			m.families[mBorrowed].at(q.Name, f.Flavor).value = float64(f.Borrowed)
			m.families[mLendable].at(q.Name, f.Flavor).value = float64(f.Lendable)
		}
	}
}

// ServeHTTP serves the figures in the text exposition format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = m.WriteText(w)
}

// WriteText writes the figures in the text exposition format: families
// by name, series by label values, labels by name, as the Prometheus
// client writes them; a labelled family without series is left out.
func (m *Metrics) WriteText(w io.Writer) error {
	m.mu.Lock()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(m.families)) {
		m.families[name].write(&b)
	}
	m.mu.Unlock()
	_, err := io.WriteString(w, b.String())
	return err
}

func (f *family) write(b *strings.Builder) {
	if len(f.series) == 0 {
		return
	}
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
	// The client sorts label pairs by name and series by their values in
	// that order.
	order := make([]int, len(f.labels))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(f.labels[x], f.labels[y]) })
	all := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		all = append(all, s)
	}
	slices.SortFunc(all, func(x, y *series) int {
		for _, i := range order {
			if c := cmp.Compare(x.values[i], y.values[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	for _, s := range all {
		pairs := make([]string, len(order))
		for j, i := range order {
			pairs[j] = f.labels[i] + `="` + escapeValue(s.values[i]) + `"`
		}
		if f.typ != "histogram" {
			fmt.Fprintf(b, "%s%s %s\n", f.name, braces(pairs), formatFloat(s.value))
			continue
		}
		for i, le := range waitBuckets() {
			fmt.Fprintf(b, "%s_bucket%s %d\n", f.name, braces(append(slices.Clone(pairs), `le="`+formatFloat(le)+`"`)), s.buckets[i])
		}
		fmt.Fprintf(b, "%s_bucket%s %d\n", f.name, braces(append(slices.Clone(pairs), `le="+Inf"`)), s.count)
		fmt.Fprintf(b, "%s_sum%s %s\n", f.name, braces(pairs), formatFloat(s.value))
		fmt.Fprintf(b, "%s_count%s %d\n", f.name, braces(pairs), s.count)
	}
}

func braces(pairs []string) string {
	if len(pairs) == 0 {
		return ""
	}
	return "{" + strings.Join(pairs, ",") + "}"
}

// formatFloat writes a value as the exposition format's writers do.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}
