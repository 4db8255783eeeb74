package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	importer "github.com/fleetsched/fleet/importer/slurm"
)

// Runner runs one command and returns its standard output.
type Runner interface {
	Run(ctx context.Context, args ...string) ([]byte, error)
}

// Exec runs commands on this machine, with SLURM_CONF set to Conf when
// it is not empty.
type Exec struct {
	// Conf is the slurm.conf the commands read ("": Slurm's default).
	Conf string
}

// Run runs args[0] with the rest as its arguments.
func (e Exec) Run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	if e.Conf != "" {
		cmd.Env = append(os.Environ(), "SLURM_CONF="+e.Conf)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), &CommandError{Args: args, Output: strings.TrimSpace(errb.String() + out.String()), Err: err}
	}
	return out.Bytes(), nil
}

// Commands is the Slurm backend of sinfo, squeue, scontrol and scancel,
// read through fixed format strings (Slurm 22.05 and later).
type Commands struct {
	// Runner runs the commands (Exec on a real cluster, Replay in tests).
	Runner Runner
	// TopologyFile is the topology.conf to read; "" means topology.conf
	// beside SLURM_CONF (Exec.Conf).
	TopologyFile string
	// Location is the time zone of Slurm's times; nil means local time.
	Location *time.Location
}

// The separator of the format strings: squeue and sinfo print no "|"
// in the fields read, and Comment, which may, is read last.
const sep = "|"

var nodeFields = []string{"NodeList", "CPUs", "Memory", "Gres", "StateComplete", "Reason"}

var jobFields = []string{"JobID", "Partition", "Account", "QOS", "State", "Reason", "NumNodes",
	"tres-per-node", "NodeList", "ReqNodes", "SubmitTime", "StartTime", "Requeue", "PriorityLong",
	"MinCpus", "MinMemory", "ReqSwitch", "Name", "Comment"}

func format(fields []string) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f + ":" + sep)
	}
	return b.String()
}

func (c *Commands) run(ctx context.Context, args ...string) ([]byte, error) {
	return c.Runner.Run(ctx, args...)
}

// Nodes runs sinfo.
func (c *Commands) Nodes(ctx context.Context, partitions []string) ([]Node, error) {
	out, err := c.run(ctx, "sinfo", "-h", "-N", "-p", strings.Join(partitions, ","), "-O", format(nodeFields))
	if err != nil {
		return nil, err
	}
	return ParseNodes(out)
}

// Jobs runs squeue.
func (c *Commands) Jobs(ctx context.Context, partitions []string) ([]Job, error) {
	out, err := c.run(ctx, "squeue", "-h", "-a", "-t", "all", "-p", strings.Join(partitions, ","), "-O", format(jobFields))
	if err != nil {
		return nil, err
	}
	loc := c.Location
	if loc == nil {
		loc = time.Local
	}
	return ParseJobs(out, loc)
}

// Topology reads topology.conf.
func (c *Commands) Topology(ctx context.Context) ([]byte, error) {
	path := c.TopologyFile
	if path == "" {
		conf := os.Getenv("SLURM_CONF")
		if e, ok := c.Runner.(Exec); ok && e.Conf != "" {
			conf = e.Conf
		}
		if conf == "" {
			conf = "/etc/slurm/slurm.conf"
		}
		path = filepath.Join(filepath.Dir(conf), "topology.conf")
	}
	return os.ReadFile(path)
}

// Hold runs scontrol hold.
func (c *Commands) Hold(ctx context.Context, id string) error {
	_, err := c.run(ctx, "scontrol", "hold", id)
	return err
}

// SetNodes runs scontrol update ReqNodeList, with StartTime=now: a job
// Slurm requeued waits for a begin time of Slurm's choosing otherwise.
func (c *Commands) SetNodes(ctx context.Context, id string, nodes []string) error {
	list, err := importer.CompressHostlist(nodes)
	if err != nil {
		return err
	}
	_, err = c.run(ctx, "scontrol", "update", "JobId="+id, "ReqNodeList="+list, "StartTime=now")
	return err
}

// Release runs scontrol release of a list of jobs.
func (c *Commands) Release(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := c.run(ctx, "scontrol", "release", strings.Join(ids, ","))
	return err
}

// RequeueHold runs scontrol requeuehold.
func (c *Commands) RequeueHold(ctx context.Context, id string) error {
	_, err := c.run(ctx, "scontrol", "requeuehold", id)
	return err
}

// Signal runs scancel --signal --full.
func (c *Commands) Signal(ctx context.Context, id, sig string) error {
	_, err := c.run(ctx, "scancel", "--full", "--signal="+sig, id)
	return err
}

// Cancel runs scancel.
func (c *Commands) Cancel(ctx context.Context, id string) error {
	_, err := c.run(ctx, "scancel", id)
	return err
}

// Kill runs scancel --batch --signal=KILL: Slurm delivers a SIGKILL sent
// to the batch step at once, where a SIGKILL to the whole job (scancel,
// or --full) is carried out as a cancellation, SIGTERM first and SIGKILL
// only after KillWait.
func (c *Commands) Kill(ctx context.Context, id string) error {
	_, err := c.run(ctx, "scancel", "--batch", "--signal=KILL", id)
	return err
}

// SetComment runs scontrol update Comment.
func (c *Commands) SetComment(ctx context.Context, id, comment string) error {
	_, err := c.run(ctx, "scontrol", "update", "JobId="+id, "Comment="+comment)
	return err
}

// ParseError is a line of sinfo or squeue output that does not read.
type ParseError struct {
	Command string // sinfo or squeue
	Line    int    // the output line, from 1
	Field   string // the format field that did not read
	Value   string // its text
}

// Error names the command, line, field and value.
func (e *ParseError) Error() string {
	return fmt.Sprintf("slurm: %s output line %d: field %s: cannot read %q", e.Command, e.Line, e.Field, e.Value)
}

// Unwrap matches ErrCommand.
func (e *ParseError) Unwrap() error { return ErrCommand }

func null(s string) string {
	s = strings.TrimSpace(s)
	if s == "(null)" || s == "N/A" || s == "none" {
		return ""
	}
	return s
}

// ParseNodes reads sinfo -O output of nodeFields; a node listed under
// several partitions is kept once.
func ParseNodes(out []byte) ([]Node, error) {
	var nodes []Node
	seen := map[string]bool{}
	for i, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, sep, len(nodeFields))
		if len(f) < len(nodeFields) {
			return nil, &ParseError{"sinfo", i + 1, "line", line}
		}
		n := Node{Name: strings.TrimSpace(f[0]), State: strings.ToLower(strings.TrimSpace(f[4])),
			Reason: null(strings.TrimSuffix(f[5], sep))}
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		var err error
		if n.CPUs, err = strconv.Atoi(strings.TrimSpace(f[1])); err != nil {
			return nil, &ParseError{"sinfo", i + 1, "CPUs", f[1]}
		}
		if n.MemoryMB, err = strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64); err != nil {
			return nil, &ParseError{"sinfo", i + 1, "Memory", f[2]}
		}
		if n.GPUs, n.GPUType, err = parseGres(null(f[3])); err != nil {
			return nil, &ParseError{"sinfo", i + 1, "Gres", f[3]}
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// parseGres sums the gpu entries of a GRES list ("gpu:h100:8(S:0-1),
// nic:1" or "gres:gpu:8") and returns the first type named.
func parseGres(s string) (int, string, error) {
	total, typ := 0, ""
	for _, item := range splitGres(s) {
		item = strings.TrimPrefix(item, "gres/")
		item = strings.TrimPrefix(item, "gres:")
		if p := strings.IndexByte(item, '('); p >= 0 {
			item = item[:p]
		}
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" {
			continue
		}
		if len(parts) == 1 {
			total++
			continue
		}
		last := parts[len(parts)-1]
		n, err := strconv.Atoi(last)
		t := ""
		switch {
		case err == nil && len(parts) == 3:
			t = parts[1]
		case err == nil && len(parts) == 2:
		case err != nil && len(parts) == 2:
			n, t = 1, last
		default:
			return 0, "", fmt.Errorf("gres %q", item)
		}
		if n < 0 {
			return 0, "", fmt.Errorf("gres %q", item)
		}
		total += n
		if typ == "" {
			typ = t
		}
	}
	return total, typ, nil
}

// splitGres splits a GRES list at the commas outside parentheses.
func splitGres(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				if t := strings.TrimSpace(s[start:i]); t != "" {
					out = append(out, t)
				}
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

// ParseJobs reads squeue -O output of jobFields.
func ParseJobs(out []byte, loc *time.Location) ([]Job, error) {
	var jobs []Job
	for i, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, sep, len(jobFields))
		if len(f) < len(jobFields) {
			return nil, &ParseError{"squeue", i + 1, "line", line}
		}
		for k := range len(jobFields) - 1 {
			f[k] = null(f[k])
		}
		bad := func(k int) error { return &ParseError{"squeue", i + 1, jobFields[k], f[k]} }
		j := Job{ID: f[0], Partition: f[1], Account: f[2], QOS: f[3], State: f[4], Reason: f[5],
			Name: f[17], Comment: null(strings.TrimSuffix(f[18], sep))}
		var err error
		if j.Nodes, err = strconv.Atoi(f[6]); err != nil {
			return nil, bad(6)
		}
		if j.GPUsPerNode, j.GPUType, err = parseGres(f[7]); err != nil {
			return nil, bad(7)
		}
		if j.NodeList, err = hostlist(f[8]); err != nil {
			return nil, bad(8)
		}
		if j.ReqNodes, err = hostlist(f[9]); err != nil {
			return nil, bad(9)
		}
		if j.Submit, err = slurmTime(f[10], loc); err != nil {
			return nil, bad(10)
		}
		if j.Start, err = slurmTime(f[11], loc); err != nil {
			return nil, bad(11)
		}
		j.Requeue = f[12] == "1"
		if j.Priority, err = strconv.ParseInt(f[13], 10, 64); err != nil {
			return nil, bad(13)
		}
		if j.CPUsPerNode, err = atoi0(f[14]); err != nil {
			return nil, bad(14)
		}
		if j.MemoryMB, err = memoryMB(f[15]); err != nil {
			return nil, bad(15)
		}
		if j.Switches, err = atoi0(f[16]); err != nil {
			return nil, bad(16)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func atoi0(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.Atoi(s)
}

// memoryMB reads squeue's MinMemory: "0", "4000M", "16G", "1T".
func memoryMB(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'K', 'k':
		return strconv.ParseInt(s[:len(s)-1], 10, 64)
	case 'M', 'm':
		s = s[:len(s)-1]
	case 'G', 'g':
		mult, s = 1024, s[:len(s)-1]
	case 'T', 't':
		mult, s = 1024*1024, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

func hostlist(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	return importer.ExpandHostlist(s)
}

// slurmTime reads "2026-12-01T20:29:18"; "", "N/A", "Unknown" and "None"
// are the zero time.
func slurmTime(s string, loc *time.Location) (time.Time, error) {
	switch s {
	case "", "Unknown", "None":
		return time.Time{}, nil
	}
	return time.ParseInLocation("2006-01-02T15:04:05", s, loc)
}
