package prom

import (
	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Exporter holds fleet's Prometheus collectors.
type Exporter struct {
	healthy, free, nominated, stranded prometheus.Gauge
	largestBlock, leafCrossings        *prometheus.GaugeVec
	allocated, borrowed, lendable      *prometheus.GaugeVec
	used, idle                         *prometheus.GaugeVec
	wait                               *prometheus.HistogramVec
	admissions, preemptions            *prometheus.CounterVec
	lost, misses, crossSpine           *prometheus.CounterVec
	nodeFailures                       prometheus.Counter
}

// WaitBuckets are the queue-wait histogram's upper bounds in seconds:
// 1 s to about 2.3 days, doubling.
func WaitBuckets() []float64 { return prometheus.ExponentialBuckets(1, 2, 18) }

// New creates an Exporter and registers its collectors with reg. It
// returns the registry's error (for example when fleet_ metrics are
// already registered) and then registers nothing more.
func New(reg prometheus.Registerer) (*Exporter, error) {
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	gaugeVec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	x := &Exporter{
		healthy:       gauge("fleet_gpus_healthy", "GPUs on healthy nodes."),
		free:          gauge("fleet_gpus_free", "GPUs neither allocated nor nominated."),
		nominated:     gauge("fleet_gpus_nominated", "GPUs held for beneficiaries of drains in progress."),
		stranded:      gauge("fleet_stranded_gpus", "Free GPUs on partly used healthy nodes, which cannot form a whole node."),
		largestBlock:  gaugeVec("fleet_largest_free_block_nodes", "Most fully free nodes inside one domain of the level.", "level"),
		leafCrossings: gaugeVec("fleet_leaf_crossing_gangs", "Running gangs spanning several leaves with pods under the leaf: how many share its uplinks.", "leaf"),
		allocated:     gaugeVec("fleet_gpus_allocated", "GPUs held by the queue's workloads.", "queue", "flavor"),
		borrowed:      gaugeVec("fleet_gpus_borrowed", "GPUs the queue uses above its nominal quota.", "queue", "flavor"),
		lendable:      gaugeVec("fleet_gpus_lendable", "Nominal quota the queue does not use.", "queue", "flavor"),
		used:          gaugeVec("fleet_gpus_used", "Allocated GPUs weighted by their latest SM activity sample.", "queue"),
		idle:          gaugeVec("fleet_gpus_idle", "Allocated GPUs whose SM activity is under the idle threshold.", "queue"),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fleet_queue_wait_seconds", Help: "Time from submission to admission.", Buckets: WaitBuckets(),
		}, []string{"queue"}),
		admissions:   counterVec("fleet_admissions_total", "Workloads admitted.", "queue", "shape"),
		preemptions:  counterVec("fleet_preemptions_total", "Drains started, by victim queue and reason.", "queue", "reason"),
		lost:         counterVec("fleet_preemption_lost_gpu_seconds_total", "GPU-seconds of work lost since the victims' last checkpoints, as the scheduler estimates it.", "queue"),
		misses:       counterVec("fleet_drain_deadline_misses_total", "Victims killed past their drain deadline.", "queue"),
		crossSpine:   counterVec("fleet_cross_spine_gangs_total", "Gangs admitted across spines.", "queue"),
		nodeFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleet_node_failures_total", Help: "Nodes reported down."}),
	}
	for _, c := range []prometheus.Collector{x.healthy, x.free, x.nominated, x.stranded, x.largestBlock, x.leafCrossings,
		x.allocated, x.borrowed, x.lendable, x.used, x.idle, x.wait, x.admissions, x.preemptions,
		x.lost, x.misses, x.crossSpine, x.nodeFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// Record mirrors one scheduler event into the counters and histogram.
func (x *Exporter) Record(e fleet.Event) {
	switch e.Kind {
	case fleet.EventAdmitted:
		x.admissions.WithLabelValues(e.Queue, e.Shape.String()).Inc()
		x.wait.WithLabelValues(e.Queue).Observe(e.Wait.Seconds())
		if e.CrossesSpines {
			x.crossSpine.WithLabelValues(e.Queue).Inc()
		}
	case fleet.EventDrainStarted:
		reason := e.Reason
		if reason == "" {
			reason = "unspecified"
		}
		x.preemptions.WithLabelValues(e.Queue, reason).Inc()
		if e.LostGPUSeconds > 0 {
			x.lost.WithLabelValues(e.Queue).Add(e.LostGPUSeconds)
		}
	case fleet.EventKilled:
		x.misses.WithLabelValues(e.Queue).Inc()
	case fleet.EventNodeDown:
		x.nodeFailures.Inc()
	}
}

// RecordAll mirrors a batch of events, in order.
func (x *Exporter) RecordAll(events []fleet.Event) {
	for i := range events {
		x.Record(events[i])
	}
}

// ObserveSnapshot sets the fleet and quota gauges from s.
func (x *Exporter) ObserveSnapshot(s fleet.Snapshot) {
	x.healthy.Set(float64(s.Fleet.HealthyGPUs))
	x.free.Set(float64(s.Fleet.FreeGPUs))
	x.nominated.Set(float64(s.Nominated))
	x.stranded.Set(float64(s.Fleet.StrandedGPUs))
	x.largestBlock.Reset()
	for _, b := range s.Fleet.LargestFreeBlock {
		x.largestBlock.WithLabelValues(b.Level).Set(float64(b.Nodes))
	}
	x.leafCrossings.Reset()
	for _, c := range s.Fleet.Crossings {
		x.leafCrossings.WithLabelValues(c.Leaf).Set(float64(c.Gangs))
	}
	x.allocated.Reset()
	x.borrowed.Reset()
	x.lendable.Reset()
	for _, q := range s.Queues {
		if !q.IsQueue {
			continue
		}
		for _, f := range q.Flavors {
			x.allocated.WithLabelValues(q.Name, f.Flavor).Set(float64(f.InUse))
			x.borrowed.WithLabelValues(q.Name, f.Flavor).Set(float64(f.Borrowed))
			x.lendable.WithLabelValues(q.Name, f.Flavor).Set(float64(f.Lendable))
		}
	}
}

// ObserveUsage sets the used and idle gauges from r's live picture. Call it
// from the goroutine that feeds r: a Recorder is not safe for concurrent use.
func (x *Exporter) ObserveUsage(r *metrics.Recorder) {
	x.used.Reset()
	x.idle.Reset()
	for _, t := range r.Now() {
		x.used.WithLabelValues(t.Team).Set(t.Used)
		x.idle.WithLabelValues(t.Team).Set(t.Idle)
	}
}
