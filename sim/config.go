package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// ErrInvalidConfig wraps every refusal of a simulation Config.
var ErrInvalidConfig = errors.New("sim: invalid config")

// Policy names the fleet policies the simulator compares.
type Policy uint8

const (
	// Borrow is the reference quota tree: inference lends up to 700 of its
	// 1,200 guaranteed GPUs (scaled to the fleet), and reclaims them by
	// preemption.
	Borrow Policy = iota + 1
	// Static is a fixed split: inference keeps its guarantee (and the
	// nodes that hold it, as a pool) to itself, and training and batch
	// share the rest. Only lending across the split is off: inside each
	// partition priorities and preemption work as under Borrow, so
	// research reclaims its quota from batch filler by preemption.
	Static
)

// String returns the policy's name, as specs and messages spell it.
func (p Policy) String() string {
	switch p {
	case Borrow:
		return "borrow"
	case Static:
		return "static"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Queue names of the reference quota tree the workload model submits to.
const (
	QueueInference = "prod-inference" // guaranteed inference
	QueueResearch  = "research"       // research training, guaranteed its share
	QueueBatch     = "batch"          // preemptible batch, no guarantee
)

// FleetSpec is the fleet of about gpus GPUs in 8-GPU nodes: the scaled
// reference fleet from 2,048 GPUs up, one spine of whole leaves below.
func FleetSpec(gpus int) topology.Spec {
	if gpus >= 2048 {
		return topology.Scaled(gpus)
	}
	nodes := max(1, gpus/8)
	leaves := max(1, nodes/8)
	return topology.Uniform(topology.UniformSpec{
		Levels:      []string{"spine", "leaf", "node"},
		Fanout:      []int{1, leaves, min(8, nodes)},
		GPUsPerNode: 8,
		Flavor:      "H100",
	})
}

// FleetConfig is the scheduler configuration of policy p on a fleet of
// about gpus GPUs. Borrow on 2,048 GPUs is fleet.ReferenceConfig.
func FleetConfig(gpus int, p Policy) fleet.Config {
	cfg := fleet.ReferenceConfigFor(FleetSpec(gpus))
	inf := int64(0)
	nodes := cfg.Quota.Nodes
	for i := range nodes {
		q := &nodes[i].Quotas
		switch nodes[i].Name {
		case QueueInference:
			inf = (*q)[0].Nominal
			if p == Static {
				(*q)[0].LendingLimit = quota.LimitOf(0)
				(*q)[0].BorrowingLimit = quota.LimitOf(0)
			}
		case QueueResearch:
			if p == Static {
				(*q)[0].BorrowingLimit = quota.LimitOf(0)
			}
		}
	}
	if p == Static {
		// The split is physical too: inference keeps its own nodes, so
		// its replicas never wait behind fragments left by batch jobs.
		infNodes := int((inf + 7) / 8)
		for i := range cfg.Topology.Nodes {
			cfg.Topology.Nodes[i].Pool = PoolTraining
			if i < infNodes {
				cfg.Topology.Nodes[i].Pool = PoolInference
			}
		}
	}
	return cfg
}

// Node pools of the static split.
const (
	PoolInference = "inference" // the inference partition's nodes
	PoolTraining  = "training"  // the training and batch partition's nodes
)

// Workload sets the synthetic workload model. Fractions are of the
// fleet's GPUs, so the same model runs on any fleet size.
type Workload struct {
	// InferenceTrough and InferencePeak bound the inference demand
	// (default 500 and 1,200 of 2,048 GPUs).
	InferenceTrough, InferencePeak float64
	// TroughHours is how long a day demand stays at the trough (default 12).
	TroughHours float64
	// SpikesPerDay, SpikeSize and SpikeLength add sudden inference
	// demand on top of the curve (defaults 3, 0.1 of the fleet, 40 min).
	SpikesPerDay float64
	SpikeSize    float64
	SpikeLength  time.Duration
	// TrainingLoad is the research GPU demand offered, as a share of the
	// fleet (default 0.55: more than research's own quota, so it borrows).
	TrainingLoad float64
	// TrainingMedian is the median run time of a training job at full
	// speed (default 6 h; lognormal, capped at 3 days).
	TrainingMedian time.Duration
	// TrainingBacklog caps the research jobs waiting: researchers stop
	// submitting into a deep queue (default 24).
	TrainingBacklog int
	// BatchBacklog is the number of batch jobs kept waiting: batch is
	// elastic filler that takes whatever is left (default 12).
	BatchBacklog int
	// BatchMedian is the median run time of a batch job (default 45 min).
	BatchMedian time.Duration
	// ScaleDown picks the inference replica a scale-down stops (default
	// ScaleDownConsolidate).
	ScaleDown ScaleDown
}

// ScaleDown is the autoscaler's choice of which replica to stop.
type ScaleDown uint8

const (
	// ScaleDownConsolidate stops a pending replica if there is one, else
	// the running replica in the top-level domain (spine) holding the
	// fewest inference GPUs, newest first among equals: inference drains
	// out of lightly used spines, so a spine can empty for a large gang.
	ScaleDownConsolidate ScaleDown = iota + 1
	// ScaleDownNewest stops the newest replica wherever it runs. Replicas
	// started at the trough then live on every spine for weeks, and a
	// spine-wide gang can wait forever behind them (see the README).
	ScaleDownNewest
)

// Config is one simulation run. The zero value of every field but
// Fleet and Days takes the default its comment names.
type Config struct {
	// GPUs is the fleet size (default 2,048); Policy picks the scheduler
	// configuration (default Borrow). Fleet, when its Topology has nodes,
	// replaces both.
	GPUs   int
	Policy Policy
	Fleet  fleet.Config
	// Seed drives every random draw; the same seed gives the same run.
	Seed uint64
	// Start is the simulated start (default 2025-01-06 00:00 UTC, a Monday).
	Start time.Time
	// Duration is the simulated time (default 30 days).
	Duration time.Duration
	// Cycle is the period of Schedule calls (default 10 s). The host also
	// calls Schedule at once after inference scale-ups and kills.
	Cycle time.Duration
	// Autoscale is the period of the inference autoscaler (default 1 min).
	Autoscale time.Duration
	// Sample is the period of usage samples and of the series (default 5 min).
	Sample time.Duration
	// Checkpoint is the training checkpoint interval (default 20 min).
	// Training also saves its state when drained (SIGTERM, checkpoint,
	// exit), so a drain that ends in time loses only the restart.
	Checkpoint time.Duration
	// BatchCheckpoint is the batch checkpoint interval (default 10 min;
	// negative: batch does not checkpoint, and a drain or a lost node
	// throws its whole run away). Batch saves only on its interval, not
	// when drained: a drain loses the work since its last checkpoint.
	BatchCheckpoint time.Duration
	// FixedBatch runs batch at a fixed size. By default batch is elastic:
	// its pods (of one GPU up to 8 GPUs, of 8 beyond) may run down to one,
	// so a batch job starts at the size that fits, gives up pods to a
	// preemptor instead of stopping whole, and grows back (see elastic.go).
	FixedBatch bool
	// ReplicaWarmup is what an inference replica loses when its node
	// fails: it is stateless, so it loses no work, only the time to start
	// again and warm up (default 2 min, on top of RestartOverhead).
	ReplicaWarmup time.Duration
	// RestartOverhead is the time a restarted job spends before it makes
	// progress again (default 3 min).
	RestartOverhead time.Duration
	// DrainMin and DrainMax bound how long a victim takes to checkpoint
	// and exit after SIGTERM (defaults 20 s and 100 s).
	DrainMin, DrainMax time.Duration
	// DrainFailShare is the share of victims that do not exit in time and
	// are killed at the deadline (default 0.05; negative means none).
	DrainFailShare float64
	// NoHotSwap: training gangs do not declare that they survive the loss
	// of a node, so a node failure under one requeues it whole.
	NoHotSwap bool
	// FailuresPerGPUDay is the node failure rate per GPU per day (default
	// 5e-4, as in Llama 3's training run; negative means none).
	FailuresPerGPUDay float64
	// RepairMin and RepairMax bound a failed node's repair (defaults 2 h
	// and 6 h).
	RepairMin, RepairMax time.Duration
	// Workload is the synthetic workload model.
	Workload Workload
	// Trace, when set, replaces the synthetic training and batch streams
	// with these arrivals (see ReadPhilly).
	Trace []TraceJob
	// Check verifies the scheduler's invariants after every cycle (slow:
	// it takes a Snapshot each time); Result.Violations lists breaches.
	Check bool
	// Observer, when set, receives the scheduler's events and usage samples.
	Observer Observer
	// Progress, when set, is called once per simulated day.
	Progress func(now time.Time, done float64)

	// From, when set, is a scheduler the run carries on from instead of
	// an empty fleet (a Fork, for a forecast, or a scheduler a previous
	// Run left in Result.Scheduler): its running, draining and pending
	// work, its bookings and its node health are taken over (see
	// continue.go). Fleet must then be the config it was built with, and
	// Start, when set, not before its Snapshot's time (the default). The
	// run changes the scheduler.
	From *fleet.Scheduler
	// Remaining is the run time left to running work the scheduler has no
	// ExpectedRuntime for, when continuing From (default 0: it runs until
	// stopped).
	Remaining time.Duration
	// Arrivals are workloads the host submits at given times besides the
	// workload model: a booking's gangs at its start, say. Each runs for
	// its ExpectedRuntime (0: until stopped).
	Arrivals []Arrival
	// InferenceCap caps the inference demand, in GPUs (default the
	// inference queue's guarantee at the start). A forecast sets it to
	// the guarantee inference is entitled to, so that demand a lowered
	// guarantee cannot hold shows as unserved rather than vanishing.
	InferenceCap int
}

// Arrival is one workload submitted by the host at a given time.
type Arrival struct {
	At       time.Time     // when the host submits it
	Workload gang.Workload // the workload submitted
}

func (c Config) withDefaults() (Config, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	deff := func(f *float64, v float64) {
		if *f == 0 {
			*f = v
		}
	}
	if c.GPUs == 0 {
		c.GPUs = 2048
	}
	if c.Policy == 0 {
		c.Policy = Borrow
	}
	if c.From != nil {
		if len(c.Fleet.Topology.Nodes) == 0 {
			return Config{}, fmt.Errorf("%w: From needs Fleet, the config the scheduler was built with", ErrInvalidConfig)
		}
		at := c.From.Snapshot().Time
		if c.Start.IsZero() {
			c.Start = at
		}
		if c.Start.Before(at) {
			return Config{}, fmt.Errorf("%w: Start %s is before the scheduler's time %s", ErrInvalidConfig,
				c.Start.Format(time.RFC3339), at.Format(time.RFC3339))
		}
	}
	if len(c.Fleet.Topology.Nodes) == 0 {
		c.Fleet = FleetConfig(c.GPUs, c.Policy)
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	}
	def(&c.Duration, 30*24*time.Hour)
	def(&c.Cycle, 10*time.Second)
	def(&c.Autoscale, time.Minute)
	def(&c.Sample, 5*time.Minute)
	def(&c.Checkpoint, 20*time.Minute)
	def(&c.BatchCheckpoint, 10*time.Minute)
	def(&c.ReplicaWarmup, 2*time.Minute)
	def(&c.RestartOverhead, 3*time.Minute)
	def(&c.DrainMin, 20*time.Second)
	def(&c.DrainMax, 100*time.Second)
	def(&c.RepairMin, 2*time.Hour)
	def(&c.RepairMax, 6*time.Hour)
	deff(&c.DrainFailShare, 0.05)
	deff(&c.FailuresPerGPUDay, 5e-4)
	w := &c.Workload
	deff(&w.InferenceTrough, 500.0/2048)
	deff(&w.InferencePeak, 1200.0/2048)
	deff(&w.TroughHours, 12)
	deff(&w.SpikesPerDay, 3)
	deff(&w.SpikeSize, 0.1)
	def(&w.SpikeLength, 40*time.Minute)
	deff(&w.TrainingLoad, 0.55)
	def(&w.TrainingMedian, 6*time.Hour)
	def(&w.BatchMedian, 45*time.Minute)
	if w.TrainingBacklog == 0 {
		w.TrainingBacklog = 24
	}
	if w.BatchBacklog == 0 {
		w.BatchBacklog = 12
	}
	if w.ScaleDown == 0 {
		w.ScaleDown = ScaleDownConsolidate
	}
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.GPUs < 8:
		return bad("fleet of %d GPUs: want at least one 8-GPU node", c.GPUs)
	case c.Duration < 0 || c.Cycle < 0 || c.Autoscale < 0 || c.Sample < 0 || c.Checkpoint < 0 || c.RestartOverhead < 0 || c.ReplicaWarmup < 0:
		return bad("negative duration")
	case c.DrainMin > c.DrainMax:
		return bad("DrainMin %v above DrainMax %v", c.DrainMin, c.DrainMax)
	case c.RepairMin > c.RepairMax:
		return bad("RepairMin %v above RepairMax %v", c.RepairMin, c.RepairMax)
	case c.Autoscale%c.Cycle != 0:
		return bad("Autoscale %v is not a multiple of Cycle %v", c.Autoscale, c.Cycle)
	case w.InferenceTrough < 0 || w.InferenceTrough > w.InferencePeak || w.InferencePeak > 1:
		return bad("inference trough %v and peak %v: want 0 <= trough <= peak <= 1", w.InferenceTrough, w.InferencePeak)
	case w.TroughHours < 0 || w.TroughHours > 24:
		return bad("TroughHours %v: want 0-24", w.TroughHours)
	case w.TrainingBacklog < 0 || w.BatchBacklog < 0:
		return bad("negative backlog")
	case c.Remaining < 0 || c.InferenceCap < 0:
		return bad("negative Remaining or InferenceCap")
	case w.ScaleDown > ScaleDownNewest:
		return bad("ScaleDown %d: want ScaleDownConsolidate or ScaleDownNewest", w.ScaleDown)
	}
	return c, nil
}
