package slurm

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Slurm is what the host asks of a Slurm cluster: read its nodes and jobs,
// and act on jobs. Commands runs Slurm's command-line tools; a test may
// replay a recorded session (Replay). A slurmrestd client would be a third
// implementation for newer Slurm.
type Slurm interface {
	// Nodes lists the nodes of the partitions, each once.
	Nodes(ctx context.Context, partitions []string) ([]Node, error)
	// Jobs lists the jobs of the partitions, pending, running and
	// recently ended.
	Jobs(ctx context.Context, partitions []string) ([]Job, error)
	// Topology returns the cluster's topology.conf.
	Topology(ctx context.Context) ([]byte, error)
	// Hold holds a pending job (priority 0): Slurm does not start it.
	Hold(ctx context.Context, id string) error
	// SetNodes sets a pending job's required nodes (ReqNodeList) and
	// makes it eligible now (fleet decides when it starts: a --begin is
	// not kept).
	SetNodes(ctx context.Context, id string, nodes []string) error
	// Release lets Slurm start held jobs.
	Release(ctx context.Context, ids ...string) error
	// RequeueHold stops a running job (SIGTERM to its steps, SIGKILL
	// after KillWait) and puts it back pending and held.
	RequeueHold(ctx context.Context, id string) error
	// Signal sends sig ("TERM") to every process of a running job.
	Signal(ctx context.Context, id, sig string) error
	// Cancel ends a job the way Slurm ends one (SIGTERM to its steps,
	// SIGKILL after KillWait).
	Cancel(ctx context.Context, id string) error
	// Kill force-stops a running job now: SIGKILL to its batch script and
	// what the script runs on the job's first node, without the SIGTERM and
	// KillWait of Cancel. The job then ends, and Slurm ends its steps on
	// other nodes as it ends any job's.
	Kill(ctx context.Context, id string) error
	// SetComment sets the job's Comment (what squeue's %k shows).
	SetComment(ctx context.Context, id, comment string) error
}

// Node is one node as Slurm reports it.
type Node struct {
	// Name is the NodeName; CPUs its CPU count.
	Name string
	CPUs int
	// MemoryMB is RealMemory.
	MemoryMB int64
	// GPUs is the count of the node's gpu GRES; GPUType its type
	// (gpu:h100:8), "" when untyped.
	GPUs    int
	GPUType string
	// State is sinfo's complete state, lower case: "idle", "mixed+drain",
	// "down+not_responding".
	State  string
	Reason string
}

// Job states the host acts on (squeue's %T), named as Slurm names
// them: pending, running, completing and configuring jobs hold or wait
// for nodes; the rest have ended, or are requeued or suspended.
const (
	StatePending     = "PENDING"       // waiting for nodes (held while fleet decides)
	StateRunning     = "RUNNING"       // on its nodes
	StateCompleting  = "COMPLETING"    // ending: its processes are being cleaned up
	StateConfiguring = "CONFIGURING"   // its nodes are being readied
	StateCompleted   = "COMPLETED"     // ended with exit code 0
	StateCancelled   = "CANCELLED"     // cancelled (scancel)
	StateFailed      = "FAILED"        // ended with a non-zero exit code
	StateTimeout     = "TIMEOUT"       // stopped at its time limit
	StateNodeFail    = "NODE_FAIL"     // ended by the failure of one of its nodes
	StatePreempted   = "PREEMPTED"     // preempted by Slurm
	StateOutOfMemory = "OUT_OF_MEMORY" // killed for using more memory than asked
	StateBootFail    = "BOOT_FAIL"     // its nodes failed to boot
	StateDeadline    = "DEADLINE"      // stopped at its deadline
	StateRequeued    = "REQUEUED"      // put back in the queue
	StateSuspended   = "SUSPENDED"     // suspended on its nodes
)

// Job is one job as squeue reports it.
type Job struct {
	// ID is the job ID; Name its name.
	ID   string
	Name string
	// Partition, Account and QOS are what the configuration's rules map
	// to a queue and class.
	Partition string
	Account   string
	QOS       string
	// State is one of the State constants; Reason squeue's reason.
	State  string
	Reason string
	// Nodes is the node count asked for; GPUsPerNode the gpu GRES per
	// node (--gres=gpu:N or --gpus-per-node), GPUType its type.
	Nodes       int
	GPUsPerNode int
	GPUType     string
	// CPUsPerNode and MemoryMB are the minimum per node (--mincpus,
	// --mem), 0 when not given.
	CPUsPerNode int
	MemoryMB    int64
	// NodeList is where it runs (or ran); ReqNodes its ReqNodeList.
	NodeList []string
	ReqNodes []string
	Submit   time.Time
	Start    time.Time
	// Requeue says the job may be requeued (sbatch --requeue, or
	// JobRequeue=1).
	Requeue bool
	// Priority 0 means held.
	Priority int64
	// Switches is --switches: the most leaf switches it may span (0:
	// any).
	Switches int
	Comment  string
}

// Held reports whether a pending job is held (priority 0).
func (j Job) Held() bool { return j.State == StatePending && j.Priority == 0 }

// OnNodes reports whether the job holds its nodes: it runs or its
// processes are still ending.
func (j Job) OnNodes() bool {
	switch j.State {
	case StateRunning, StateCompleting, StateConfiguring, StateSuspended:
		return true
	}
	return false
}

// Ended reports whether the job is over and will not run again in Slurm.
func (j Job) Ended() bool {
	switch j.State {
	case StatePending, StateRunning, StateCompleting, StateConfiguring, StateSuspended, StateRequeued:
		return false
	}
	return true
}

// ErrCommand is wrapped by every failed Slurm command.
var ErrCommand = errors.New("slurm: command failed")

// CommandError is a Slurm command that failed: its words and output.
type CommandError struct {
	Args   []string // the command and its arguments
	Output string   // what it printed
	Err    error    // how it failed
}

// Error names the command, its failure and its output.
func (e *CommandError) Error() string {
	return fmt.Sprintf("slurm: %q: %v: %s", e.Args, e.Err, e.Output)
}

// Unwrap matches ErrCommand and the failure.
func (e *CommandError) Unwrap() []error { return []error{ErrCommand, e.Err} }
