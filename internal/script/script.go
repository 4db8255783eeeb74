// Package script runs scenario scripts against a fleet.Scheduler: readable
// text files of host calls (submit, schedule, exit, node-down, tick...)
// with the rendered decisions as expected output, in the datadriven style
// of etcd's raft. The root package's tests check them; examples/scenarios
// prints them for people.
//
// A script is a list of blocks: comment lines (# ...), one command line, a
// "----" line and the expected output up to a blank line. Commands run on
// the reference configuration (fleet.ReferenceConfig) at a clock that
// starts at 2026-11-01 00:00:00 UTC and moves only with "tick".
package script

import (
	"bufio"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
	"github.com/fleetsched/fleet/topology"
)

//go:embed scenarios/*.txt
var scenarios embed.FS

// Scenarios returns the names of the shipped scenarios, sorted.
func Scenarios() []string {
	entries, err := fs.Glob(scenarios, "scenarios/*.txt")
	if err != nil {
		panic(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(e, "scenarios/"), ".txt"))
	}
	slices.Sort(out)
	return out
}

// Scenario returns the text of a shipped scenario.
func Scenario(name string) (string, bool) {
	b, err := scenarios.ReadFile("scenarios/" + name + ".txt")
	return string(b), err == nil
}

// Block is one command of a script with its comments and expected output.
type Block struct {
	Comments []string
	Command  string
	Want     string
}

// Parse splits a script into blocks.
func Parse(text string) ([]Block, error) {
	var blocks []Block
	var cur Block
	state := 0 // 0: command, 1: "----", 2: output
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		switch state {
		case 0:
			if l == "" || strings.HasPrefix(l, "#") {
				cur.Comments = append(cur.Comments, l)
				continue
			}
			cur.Command, state = l, 1
		case 1:
			if l != "----" {
				return nil, fmt.Errorf("script: line %d: want ---- after %q", line, cur.Command)
			}
			state = 2
		case 2:
			if l == "" {
				blocks = append(blocks, cur)
				cur, state = Block{}, 0
				continue
			}
			cur.Want += l + "\n"
		}
	}
	if state == 1 {
		return nil, fmt.Errorf("script: %q has no ---- line", cur.Command)
	}
	if state == 2 {
		blocks = append(blocks, cur)
	}
	return blocks, sc.Err()
}

// Format writes blocks back as a script, with got as each block's output.
func Format(blocks []Block, got []string) string {
	var b strings.Builder
	for i, bl := range blocks {
		for _, c := range bl.Comments {
			b.WriteString(c + "\n")
		}
		b.WriteString(bl.Command + "\n----\n" + got[i] + "\n")
	}
	return b.String()
}

// Runner runs commands on one scheduler, feeding a metrics recorder with
// its events and a snapshot after every cycle, and the usage samples that
// "observe" gives.
type Runner struct {
	S   *fleet.Scheduler
	Rec *metrics.Recorder
	Now time.Time

	plan fleet.DefragPlan // the last plan-defrag's, for defragment
}

// NewRunner returns a runner on the reference configuration.
func NewRunner() (*Runner, error) {
	s, err := fleet.New(fleet.ReferenceConfig())
	if err != nil {
		return nil, err
	}
	rec, err := metrics.New(metrics.Config{IdleLimits: map[string]time.Duration{fleet.ClassReservedResearch: 2 * time.Hour}})
	if err != nil {
		return nil, err
	}
	r := &Runner{S: s, Rec: rec, Now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	return r, r.snapshot()
}

// Run runs every block and returns each one's output.
func (r *Runner) Run(blocks []Block) ([]string, error) {
	out := make([]string, len(blocks))
	for i, b := range blocks {
		got, err := r.Exec(b.Command)
		if err != nil {
			return out, fmt.Errorf("command %q: %w", b.Command, err)
		}
		out[i] = got
	}
	return out, nil
}

// Exec runs one command line and returns its rendered output. Errors of
// the scheduler are output ("error: ..."); a malformed command is an error.
func (r *Runner) Exec(line string) (string, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return "", fmt.Errorf("empty command")
	}
	cmd, args := fields[0], fields[1:]
	kv := map[string]string{}
	var pos []string
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			kv[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	arg := func(i int) (string, error) {
		if i >= len(pos) {
			return "", fmt.Errorf("%s: missing argument %d", cmd, i+1)
		}
		return pos[i], nil
	}
	result := func(err error) (string, error) {
		if err != nil {
			return "error: " + err.Error() + "\n", nil
		}
		return "ok\n", nil
	}
	switch cmd {
	case "tick":
		a, err := arg(0)
		if err != nil {
			return "", err
		}
		d, err := time.ParseDuration(a)
		if err != nil {
			return "", err
		}
		r.Now = r.Now.Add(d)
		return r.Now.Format(time.TimeOnly) + "\n", nil
	case "submit":
		w, err := parseWorkload(kv)
		if err != nil {
			return "", err
		}
		return result(r.S.Submit(r.Now, w))
	case "submit-many":
		// submit-many n=10 prefix=r ... submits prefix-0..prefix-(n-1);
		// gpus=a,b,c cycles the pods' GPUs through the list.
		n, err := strconv.Atoi(kv["n"])
		if err != nil {
			return "", fmt.Errorf("submit-many: n: %w", err)
		}
		sizes := strings.Split(kv["gpus"], ",")
		for i := range n {
			w, err := parseWorkload(kv)
			if err != nil {
				return "", err
			}
			w.ID = fmt.Sprintf("%s-%d", kv["prefix"], i)
			if kv["gpus"] != "" {
				g, err := strconv.Atoi(sizes[i%len(sizes)])
				if err != nil {
					return "", fmt.Errorf("submit-many: gpus: %w", err)
				}
				w.PodSets[0].GPUsPerPod = g
			}
			if err := r.S.Submit(r.Now, w); err != nil {
				return result(err)
			}
		}
		return "ok\n", nil
	case "schedule":
		d := r.S.Schedule(r.Now)
		if err := r.Rec.RecordAll(d.Events); err != nil {
			return "", err
		}
		got := d.String()
		if kv["events"] == "true" {
			for _, e := range d.Events {
				got += "event " + e.String() + "\n"
			}
		}
		if kv["summary"] == "true" {
			got = fmt.Sprintf("kill=%d drain=%d admit=%d\n", len(d.Kill), len(d.Drain), len(d.Admit))
		}
		if got == "" {
			got = "(nothing)\n"
		}
		return got, r.snapshot()
	case "exit":
		id, err := arg(0)
		if err != nil {
			return "", err
		}
		how, err := arg(1)
		if err != nil {
			return "", err
		}
		reason, ok := exitReason(how)
		if !ok {
			return "", fmt.Errorf("exit: unknown reason %q", how)
		}
		return result(r.S.Exited(r.Now, id, reason))
	case "exit-many":
		// exit-many prefix=old from=0 n=8 [how=drained] exits
		// prefix-from..prefix-(from+n-1), finished unless how says.
		n, err1 := strconv.Atoi(kv["n"])
		from, _ := strconv.Atoi(kv["from"])
		if err1 != nil {
			return "", fmt.Errorf("exit-many: n: %w", err1)
		}
		how := gang.ExitFinished
		if kv["how"] != "" {
			var ok bool
			if how, ok = exitReason(kv["how"]); !ok {
				return "", fmt.Errorf("exit-many: unknown reason %q", kv["how"])
			}
		}
		for i := from; i < from+n; i++ {
			if err := r.S.Exited(r.Now, fmt.Sprintf("%s-%d", kv["prefix"], i), how); err != nil {
				return result(err)
			}
		}
		return "ok\n", nil
	case "cancel", "checkpoint":
		id, err := arg(0)
		if err != nil {
			return "", err
		}
		if cmd == "cancel" {
			return result(r.S.Cancel(r.Now, id))
		}
		// checkpoint ID [ago=5m]: a checkpoint taken some time before now.
		at := r.Now
		if ago, ok := kv["ago"]; ok {
			d, err := time.ParseDuration(ago)
			if err != nil {
				return "", fmt.Errorf("checkpoint: ago: %w", err)
			}
			at = at.Add(-d)
		}
		return result(r.S.Checkpointed(r.Now, id, at))
	case "node-down", "node-up", "cordon":
		node, err := arg(0)
		if err != nil {
			return "", err
		}
		h := map[string]topology.Health{"node-down": topology.Down, "node-up": topology.Healthy, "cordon": topology.Cordoned}[cmd]
		affected, err := r.S.SetNodeHealth(r.Now, node, h)
		if err != nil {
			return result(err)
		}
		return fmt.Sprintf("affected: %v\n", affected), nil
	case "explain":
		id, err := arg(0)
		if err != nil {
			return "", err
		}
		x, err := r.S.Explain(id)
		if err != nil {
			return result(err)
		}
		return x.Message + "\n", nil
	case "warm":
		// warm node model... reports the models whose weights are on node.
		node, err := arg(0)
		if err != nil {
			return "", err
		}
		return result(r.S.SetWarm(r.Now, node, pos[1:]))
	case "crossings":
		var b strings.Builder
		for _, c := range r.S.Snapshot().Fleet.Crossings {
			fmt.Fprintf(&b, "%s: %d gangs\n", c.Leaf, c.Gangs)
		}
		if b.Len() == 0 {
			return "(none)\n", nil
		}
		return b.String(), nil
	case "map":
		return r.S.Snapshot().Fleet.Occupancy, nil
	case "usage":
		var b strings.Builder
		for _, q := range r.S.Snapshot().Queues {
			for _, f := range q.Flavors {
				fmt.Fprintf(&b, "%s: in use %d of %d nominal, borrowed %d\n", q.Name, f.InUse, f.Nominal, f.Borrowed)
			}
		}
		return b.String(), nil
	case "observe":
		// observe prefix=r n=10 sm=0.3 mfu=0.1, or observe id sm=...: a
		// usage sample per workload, holding until the next one.
		return r.observe(pos, kv)
	case "review":
		return r.review()
	case "adopt-fill":
		return r.adoptFill(kv)
	case "plan-defrag":
		return r.planDefrag(kv)
	case "defragment":
		return r.defragment()
	case "exit-drains":
		return r.exitDrains()
	case "ranks":
		id, err := arg(0)
		if err != nil {
			return "", err
		}
		return r.ranks(id)
	}
	if run, ok := bookingCommand(cmd); ok {
		return run(r, pos, kv)
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

func exitReason(how string) (gang.ExitReason, bool) {
	switch how {
	case "finished":
		return gang.ExitFinished, true
	case "failed":
		return gang.ExitFailed, true
	case "drained":
		return gang.ExitDrained, true
	case "killed":
		return gang.ExitKilled, true
	}
	return 0, false
}

// snapshot records the fleet's state at the runner's clock (a scheduler
// that has seen no call yet has no time of its own).
func (r *Runner) snapshot() error {
	snap := r.S.Snapshot()
	snap.Time = r.Now
	return r.Rec.ObserveSnapshot(snap)
}

func (r *Runner) observe(pos []string, kv map[string]string) (string, error) {
	sm, err1 := strconv.ParseFloat(kv["sm"], 64)
	mfu, err2 := strconv.ParseFloat(kv["mfu"], 64)
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("observe: sm= and mfu= are fractions")
	}
	ids := pos
	if kv["prefix"] != "" {
		n, err := strconv.Atoi(kv["n"])
		if err != nil {
			return "", fmt.Errorf("observe: n: %w", err)
		}
		for i := range n {
			ids = append(ids, fmt.Sprintf("%s-%d", kv["prefix"], i))
		}
	}
	for _, id := range ids {
		if err := r.Rec.Observe(r.Now, id, metrics.Sample{SMActivity: sm, MFU: mfu}); err != nil {
			return "error: " + err.Error() + "\n", nil
		}
	}
	return "ok\n", nil
}

// review prints, since the start, allocation beside real use per team and
// for the fleet, and the workloads idle past their class's limit.
func (r *Runner) review() (string, error) {
	rep := r.Rec.Report(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), r.Now)
	var b strings.Builder
	fmt.Fprintf(&b, "%-15s %10s %10s %6s %6s %12s\n", "team", "alloc GPUh", "used GPUh", "use", "MFU", "$/PFLOP")
	row := func(name string, u metrics.Usage) {
		mfu := 0.0
		if u.SampledGPUHours > 0 {
			mfu = u.UsefulPFLOP / (u.SampledGPUHours * 3600 * 989e12 / 1e15)
		}
		perPFLOP := "-" // no useful work: the cost per unit of it is unbounded
		if u.UsefulPFLOP > 0 {
			perPFLOP = fmt.Sprintf("%.4f", u.DollarsPerPFLOP())
		}
		fmt.Fprintf(&b, "%-15s %10.0f %10.0f %5.0f%% %5.0f%% %12s\n", name, u.AllocatedGPUHours, u.UsedGPUHours,
			100*u.UseRate(), 100*mfu, perPFLOP)
	}
	for _, t := range rep.Teams {
		row(t.Team, t.Usage)
	}
	row("fleet", rep.Fleet)
	fmt.Fprintf(&b, "allocation rate %.0f%% of healthy GPU-hours\n", 100*rep.Fleet.AllocationRate())
	idle := r.Rec.IdleCandidates(r.Now)
	gpus := 0
	var names []string
	for _, c := range idle {
		gpus += c.GPUs
		if len(names) < 3 {
			names = append(names, fmt.Sprintf("%s (%s, idle %s, limit %s)", c.ID, c.Queue, c.IdleFor, c.Limit))
		}
	}
	if len(idle) > 0 {
		fmt.Fprintf(&b, "idle past their limit, to reclaim: %d workloads holding %d GPUs, e.g. %s\n", len(idle), gpus, strings.Join(names, ", "))
	}
	return b.String(), nil
}

// parseWorkload reads id= queue= class= shape= pods=NxG[,NxG] min=
// required= preferred= preemptible=true ckpt= grace= runtime= priority=
// booking= ranks=.
func parseWorkload(kv map[string]string) (gang.Workload, error) {
	w := gang.Workload{ID: kv["id"], Queue: kv["queue"], PriorityClass: kv["class"], Booking: kv["booking"]}
	if err := w.Shape.UnmarshalText([]byte(kv["shape"])); err != nil {
		return w, err
	}
	for i, ps := range strings.Split(kv["pods"], ",") {
		n, g, _ := strings.Cut(ps, "x")
		count, err1 := strconv.Atoi(n)
		gpus, err2 := strconv.Atoi(g)
		if err1 != nil || err2 != nil {
			return w, fmt.Errorf("pods=%q: want NxG", kv["pods"])
		}
		w.PodSets = append(w.PodSets, gang.PodSet{Name: fmt.Sprintf("ps%d", i), Count: count, GPUsPerPod: gpus})
	}
	if v, ok := kv["ranks"]; ok {
		g, err := parseRanks(v)
		if err != nil {
			return w, err
		}
		w.PodSets[0].RankGroups = g
	}
	if m, ok := kv["min"]; ok {
		// min=N makes the first pod set elastic down to N pods.
		v, err := strconv.Atoi(m)
		if err != nil {
			return w, fmt.Errorf("min=%q: %w", m, err)
		}
		w.PodSets[0].MinCount = v
	}
	w.Topology.Required, w.Topology.Preferred = kv["required"], kv["preferred"]
	w.Model = kv["model"]
	w.Drain.Preemptible = kv["preemptible"] == "true"
	w.Drain.SurvivesNodeLoss = kv["survives"] == "true"
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{"ckpt", &w.Drain.CheckpointInterval}, {"grace", &w.Drain.GracePeriod}, {"runtime", &w.ExpectedRuntime}} {
		if kv[f.key] == "" {
			continue
		}
		d, err := time.ParseDuration(kv[f.key])
		if err != nil {
			return w, err
		}
		*f.dst = d
	}
	if p, ok := kv["priority"]; ok {
		v, err := strconv.Atoi(p)
		if err != nil {
			return w, err
		}
		w.Priority = int32(v)
	}
	return w, nil
}
