package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// Config is the host's configuration, a JSON file of these names.
//
//	{
//	  "partitions": ["inference", "research", "batch"],
//	  "rules": [
//	    {"partition": "inference", "queue": "prod-inference", "class": "prod-inference", "shape": "inference"},
//	    {"partition": "research", "queue": "research", "class": "reserved-research", "shape": "training"},
//	    {"partition": "batch", "queue": "batch", "class": "preemptible-batch", "shape": "batch"}
//	  ],
//	  "period": "2s",
//	  "stateFile": "fleet-slurm.state.json"
//	}
type Config struct {
	// Partitions are the partitions fleet manages: their jobs start held
	// (job_submit.lua) and fleet places them. Slurm's preemption must be
	// off in them (PreemptMode=OFF).
	Partitions []string `json:"partitions"`
	// Rules map a job to a fleet queue, priority class and shape; the
	// first rule that matches wins. A job no rule matches is refused, and
	// its Comment says so.
	Rules []Rule `json:"rules"`
	// Classes are fleet's priority classes; empty means the reference
	// classes (prod-inference, reserved-research, preemptible-batch).
	Classes []Class `json:"classes,omitempty"`
	// GPUTypes maps a GRES type (gpu:h100:8) to a fleet GPU model
	// ("H100"); a type not listed is used upper-cased, and untyped GRES is
	// Flavor.
	GPUTypes map[string]string `json:"gpuTypes,omitempty"`
	// Flavor is the GPU model of untyped GRES; "" means "H100".
	Flavor string `json:"flavor,omitempty"`
	// LeafLevel is the topology level a job asking --switches=1 must fit
	// in; "" means "leaf".
	LeafLevel string `json:"leafLevel,omitempty"`
	// Period is the longest time between two cycles; 0 means 2 s.
	Period Duration `json:"period,omitempty"`
	// StateFile is where the host keeps what Slurm does not show (drains'
	// deadlines and beneficiaries, nominations, submission order); "" keeps
	// nothing, and a restart rebuilds from Slurm alone.
	StateFile string `json:"stateFile,omitempty"`
	// Resources makes fleet count each job's cpus (--mincpus) and memory
	// (--mem) per node besides its GPUs. Off, fleet places by GPUs and
	// Slurm checks cpus and memory when the job starts. Note that fleet
	// drains for work with named resources without a nomination (the
	// room the victims free is not held for the beneficiary).
	Resources bool `json:"resources,omitempty"`
	// StartTimeout is how long a released job may stay pending before
	// the host counts its start failed, holds it again and gives it back
	// to fleet; 0 means 30 s.
	StartTimeout Duration `json:"startTimeout,omitempty"`
	// Workers is how many Slurm commands run at once when a cycle's
	// decisions are carried out; 0 means 8.
	Workers int `json:"workers,omitempty"`
	// CommentsPerCycle bounds the Comment writes of pending reasons per
	// cycle (each is one scontrol call); 0 means 64.
	CommentsPerCycle int `json:"commentsPerCycle,omitempty"`
	// Listen is the address Run serves /metrics (fleet's figures in
	// Prometheus's text format), /healthz and /readyz on, as ":9400";
	// "" serves nothing.
	Listen string `json:"listen,omitempty"`
}

// Rule maps the jobs of a partition, account or QOS ("" matches any) to
// a fleet queue and class.
type Rule struct {
	// Partition, Account and QOS are what a job must match ("" matches
	// any); the first rule a job matches applies.
	Partition string `json:"partition,omitempty"`
	Account   string `json:"account,omitempty"`
	QOS       string `json:"qos,omitempty"`
	// Queue is the fleet queue the job is charged to; Class its priority
	// class ("" keeps the default).
	Queue string `json:"queue"`
	Class string `json:"class,omitempty"`
	// Shape is inference, training or batch; "" means training for jobs of
	// several nodes, batch otherwise.
	Shape string `json:"shape,omitempty"`
	// Preemptible says fleet may drain the jobs; nil means the jobs that
	// requeue (sbatch --requeue) are.
	Preemptible *bool `json:"preemptible,omitempty"`
	// Topology is the level one domain of which must hold a job of several
	// nodes ("leaf", "spine"); "" means anywhere, unless the job asks
	// --switches=1.
	Topology string `json:"topology,omitempty"`
}

// Class is one fleet priority class.
type Class struct {
	// Name is the class's name, as rules name it.
	Name string `json:"name"`
	// Value is its priority: higher wins.
	Value int32 `json:"value"`
	// Grace is the drain deadline of its victims (zero: fleet's 120 s).
	Grace Duration `json:"grace,omitempty"`
	// MinRuntime is how long its jobs run before they may be preempted.
	MinRuntime Duration `json:"minRuntime,omitempty"`
}

// Duration is a time.Duration written as "90s" in JSON.
type Duration time.Duration

// MarshalText writes the duration as time.Duration does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "90s", "2m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("slurm: bad configuration")

// LoadConfig reads a JSON configuration file.
func LoadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	return c, c.Validate()
}

// Validate checks the configuration whole.
func (c *Config) Validate() error {
	if len(c.Partitions) == 0 {
		return fmt.Errorf("%w: no partitions: list the partitions fleet manages", ErrConfig)
	}
	if len(c.Rules) == 0 {
		return fmt.Errorf("%w: no rules: map partitions to fleet queues", ErrConfig)
	}
	for i, r := range c.Rules {
		if r.Queue == "" {
			return fmt.Errorf("%w: rules[%d]: no queue", ErrConfig, i)
		}
		if r.Shape != "" {
			var s gang.Shape
			if err := s.UnmarshalText([]byte(r.Shape)); err != nil {
				return fmt.Errorf("%w: rules[%d]: shape %q: want inference, training or batch", ErrConfig, i, r.Shape)
			}
		}
	}
	return nil
}

func (c *Config) classes() []fleet.PriorityClass {
	if len(c.Classes) == 0 {
		return fleet.ReferenceConfig().Classes
	}
	out := make([]fleet.PriorityClass, len(c.Classes))
	for i, k := range c.Classes {
		out[i] = fleet.PriorityClass{Name: k.Name, Value: k.Value, Grace: time.Duration(k.Grace), MinRuntime: time.Duration(k.MinRuntime)}
	}
	return out
}

func (c *Config) period() time.Duration {
	if c.Period <= 0 {
		return 2 * time.Second
	}
	return time.Duration(c.Period)
}

func (c *Config) startTimeout() time.Duration {
	if c.StartTimeout <= 0 {
		return 30 * time.Second
	}
	return time.Duration(c.StartTimeout)
}

func (c *Config) workers() int {
	if c.Workers <= 0 {
		return 8
	}
	return c.Workers
}
