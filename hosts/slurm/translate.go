package slurm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetsched/fleet/gang"
	importer "github.com/fleetsched/fleet/importer/slurm"
	"github.com/fleetsched/fleet/topology"
)

// This file is the one seam between Slurm's objects and fleet's: nodes
// and topology.conf to a topology.Spec and health, jobs to
// gang.Workload.

// PodSetName names the one pod set of a job: its nodes.
const PodSetName = "nodes"

// ErrJob is wrapped by every refusal of a job the host cannot translate.
var ErrJob = errors.New("slurm: job not schedulable")

// JobError says why a job cannot be given to fleet; its Message is what
// the job's Comment shows.
type JobError struct {
	Job     string // the job ID
	Message string // what is wrong and what to change
}

// Error names the job and the message.
func (e *JobError) Error() string { return "slurm: job " + e.Job + ": " + e.Message }

// Unwrap matches ErrJob.
func (e *JobError) Unwrap() error { return ErrJob }

// Fleet builds the topology from topology.conf and the nodes sinfo
// lists: GPUs and model from GRES, cpu (millicores) and memory (bytes)
// when Config.Resources, and each node's health.
func (c *Config) Fleet(nodes []Node, topo []byte) (topology.Spec, map[string]topology.Health, error) {
	names := make([]string, len(nodes))
	gpus := map[string]int{}
	for i, n := range nodes {
		names[i] = n.Name
		gpus[n.Name] = n.GPUs
	}
	res, err := importer.ParseConf(topo, importer.Options{GPUs: gpus, Nodes: names, Flavor: c.flavor("")})
	if err != nil {
		return topology.Spec{}, nil, fmt.Errorf("slurm: topology.conf: %w", err)
	}
	byName := map[string]*Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	health := map[string]topology.Health{}
	for i := range res.Spec.Nodes {
		ns := &res.Spec.Nodes[i]
		n := byName[ns.Name]
		if n == nil {
			continue
		}
		ns.GPUs = n.GPUs
		ns.Flavor = c.flavor(n.GPUType)
		if c.Resources {
			ns.Resources = map[string]int64{"cpu": int64(n.CPUs) * 1000, "memory": n.MemoryMB << 20}
		}
		health[n.Name] = Health(n.State)
	}
	return res.Spec, health, nil
}

// Health reads a node's complete state: down, not responding, failing
// or powered off is Down; drained, draining, in maintenance or rebooting
// is Cordoned (what runs keeps running, nothing new starts).
func Health(state string) topology.Health {
	h := topology.Healthy
	for _, f := range strings.FieldsFunc(strings.ToLower(state), func(r rune) bool { return r == '+' }) {
		f = strings.TrimRight(f, "*~#!%$@^-")
		switch f {
		case "down", "not_responding", "fail", "failing", "powered_down", "powering_down", "power_down", "future", "unknown":
			return topology.Down
		case "drain", "drained", "draining", "maint", "reboot_requested", "reboot_issued", "planned", "reserved":
			h = topology.Cordoned
		}
	}
	if strings.HasSuffix(strings.SplitN(state, "+", 2)[0], "*") {
		return topology.Down
	}
	return h
}

func (c *Config) flavor(gresType string) string {
	if gresType == "" {
		if c.Flavor != "" {
			return c.Flavor
		}
		return "H100"
	}
	if f, ok := c.GPUTypes[gresType]; ok {
		return f
	}
	return strings.ToUpper(gresType)
}

// Managed reports whether a job belongs to the partitions fleet manages.
func (c *Config) Managed(j *Job) bool {
	for _, p := range strings.Split(j.Partition, ",") {
		if slices.Contains(c.Partitions, p) {
			return true
		}
	}
	return false
}

// Rule returns the first rule that matches the job.
func (c *Config) Rule(j *Job) (Rule, bool) {
	for _, r := range c.Rules {
		if (r.Partition == "" || r.Partition == j.Partition) &&
			(r.Account == "" || r.Account == j.Account) && (r.QOS == "" || r.QOS == j.QOS) {
			return r, true
		}
	}
	return Rule{}, false
}

// Workload translates a job: its nodes are the pods of one pod set, each
// with the job's GPUs per node (and cpus and memory when
// Config.Resources); its partition, account
// and QOS give the queue, class and shape by the first matching rule.
func (c *Config) Workload(j *Job) (gang.Workload, error) {
	r, ok := c.Rule(j)
	if !ok {
		return gang.Workload{}, &JobError{j.ID, fmt.Sprintf("no rule maps partition %q account %q qos %q to a fleet queue",
			j.Partition, j.Account, j.QOS)}
	}
	if j.Nodes < 1 {
		return gang.Workload{}, &JobError{j.ID, fmt.Sprintf("asks %d nodes", j.Nodes)}
	}
	ps := gang.PodSet{Name: PodSetName, Count: j.Nodes, GPUsPerPod: j.GPUsPerNode}
	if c.Resources && j.CPUsPerNode > 0 {
		ps.Resources = append(ps.Resources, gang.Resource{Name: "cpu", Amount: int64(j.CPUsPerNode) * 1000})
	}
	if c.Resources && j.MemoryMB > 0 {
		ps.Resources = append(ps.Resources, gang.Resource{Name: "memory", Amount: j.MemoryMB << 20})
	}
	w := gang.Workload{ID: j.ID, Queue: r.Queue, PriorityClass: r.Class, PodSets: []gang.PodSet{ps}}
	if j.GPUType != "" {
		w.Flavor = c.flavor(j.GPUType)
	}
	switch {
	case r.Shape != "":
		_ = w.Shape.UnmarshalText([]byte(r.Shape))
	case j.Nodes > 1:
		w.Shape = gang.Training
	default:
		w.Shape = gang.Batch
	}
	w.Drain.Preemptible = j.Requeue
	if r.Preemptible != nil {
		w.Drain.Preemptible = *r.Preemptible
	}
	if j.Nodes > 1 {
		w.Topology.Required = r.Topology
		if j.Switches == 1 {
			w.Topology.Required = c.leaf()
		}
	}
	if err := w.Validate(); err != nil {
		return gang.Workload{}, &JobError{j.ID, err.Error()}
	}
	return w, nil
}

func (c *Config) leaf() string {
	if c.LeafLevel != "" {
		return c.LeafLevel
	}
	return "leaf"
}
