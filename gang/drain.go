package gang

import "time"

// DrainContract says how a workload may be stopped to make room. A drained
// workload receives a deadline (SIGTERM), checkpoints and exits; past the
// deadline it is killed and loses the work since its last checkpoint.
type DrainContract struct {
	// Preemptible workloads may be evicted for higher-priority work. Those
	// that are not are only evicted when the scheduler's policy says so.
	Preemptible bool `json:"preemptible,omitempty"`
	// GracePeriod is the time between the drain request and the kill.
	// 0 means the default of the workload's priority class (120 s for
	// preemptible training); the scheduler resolves it.
	GracePeriod time.Duration `json:"gracePeriod,omitempty"`
	// CheckpointInterval is how often the workload saves its state; 0 means
	// it does not checkpoint, so any eviction loses all work done.
	CheckpointInterval time.Duration `json:"checkpointInterval,omitempty"`
	// LastCheckpoint is when the last checkpoint completed; the host
	// updates it as the workload reports progress. Zero means never.
	LastCheckpoint time.Time `json:"lastCheckpoint,omitzero"`
	// SurvivesNodeLoss says the workload's framework restarts a lost rank
	// from its last checkpoint on a replacement node, so losing one node
	// does not end the gang: the scheduler finds it a replacement that
	// keeps its topology request (hot-swap) instead of requeueing it whole.
	SurvivesNodeLoss bool `json:"survivesNodeLoss,omitempty"`
}

// Unsaved returns the work that stopping the workload at now would lose:
// the time since its last checkpoint, or since it started if it has not
// checkpointed during this run. It is never negative. It does not allocate.
func (d DrainContract) Unsaved(now, started time.Time) time.Duration {
	from := started
	if d.LastCheckpoint.After(from) {
		from = d.LastCheckpoint
	}
	if !now.After(from) {
		return 0
	}
	return now.Sub(from)
}
