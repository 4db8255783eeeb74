// Package prom exports fleet's scheduling figures to Prometheus, for hosts
// that run the scheduler live. It is a separate package so that the core
// packages and package metrics never import the Prometheus client.
//
// An Exporter mirrors the scheduler's events into counters and a wait
// histogram as they happen, and sets gauges from each Snapshot and from a
// metrics.Recorder's live usage. Metric names follow Prometheus
// conventions: a fleet_ prefix, base units (seconds, GPUs), _total on
// counters.
//
//	fleet_gpus_healthy, fleet_gpus_free, fleet_gpus_nominated        gauges, from snapshots
//	fleet_stranded_gpus                                            free GPUs on partly used nodes
//	fleet_largest_free_block_nodes{level}                          fully free nodes in one domain
//	fleet_leaf_crossing_gangs{leaf}                                cross-leaf gangs sharing its uplinks
//	fleet_gpus_allocated{queue,flavor}                             in use by the queue's workloads
//	fleet_gpus_borrowed{queue,flavor}, fleet_gpus_lendable{queue,flavor}
//	fleet_gpus_used{queue}, fleet_gpus_idle{queue}                 from usage samples (ObserveUsage)
//	fleet_queue_wait_seconds{queue}                                histogram of admissions' waits
//	fleet_admissions_total{queue,shape}
//	fleet_preemptions_total{queue,reason}
//	fleet_preemption_lost_gpu_seconds_total{queue}                 the scheduler's estimate
//	fleet_drain_deadline_misses_total{queue}                       kills past the deadline
//	fleet_cross_spine_gangs_total{queue}
//	fleet_node_failures_total
//
// The Prometheus client is safe for concurrent use, so the host may feed
// the Exporter from its scheduling loop while an HTTP handler scrapes it.
// Snapshot gauges with a queue or leaf label are reset on each snapshot,
// so queues and leaves that disappear stop being exported.
//
//	reg := prometheus.NewRegistry()
//	x, err := prom.New(reg)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//	d := s.Schedule(now)
//	x.RecordAll(d.Events)
//	x.ObserveSnapshot(s.Snapshot())
//	x.ObserveUsage(recorder) // a metrics.Recorder fed the same events and samples
package prom
