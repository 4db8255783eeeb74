package fleet_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of scenario files")

// TestScenarios runs every testdata/scenarios/*.txt file: blocks of one
// command line, a "----" line, and the expected output up to a blank line.
// Commands run on the reference configuration at a clock that starts at
// 00:00:00 and moves only with "tick". go test -run Scenarios -rewrite
// regenerates the expected output.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScenario(t, file)
		})
	}
}

type block struct {
	comments []string
	cmd      string
	want     string
}

func parseScenario(t *testing.T, file string) []block {
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var blocks []block
	var cur block
	state := 0 // 0: expecting command, 1: expecting ----, 2: reading output
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch state {
		case 0:
			if line == "" || strings.HasPrefix(line, "#") {
				cur.comments = append(cur.comments, line)
				continue
			}
			cur.cmd, state = line, 1
		case 1:
			require.Equal(t, "----", line, "after command %q", cur.cmd)
			state = 2
		case 2:
			if line == "" {
				blocks = append(blocks, cur)
				cur, state = block{}, 0
				continue
			}
			cur.want += line + "\n"
		}
	}
	if state == 2 {
		blocks = append(blocks, cur)
	}
	require.NoError(t, sc.Err())
	return blocks
}

func runScenario(t *testing.T, file string) {
	blocks := parseScenario(t, file)
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var out strings.Builder
	for _, b := range blocks {
		got := runCommand(t, s, &now, b.cmd)
		if *rewrite {
			for _, c := range b.comments {
				out.WriteString(c + "\n")
			}
			out.WriteString(b.cmd + "\n----\n" + got + "\n")
			continue
		}
		require.Equal(t, b.want, got, "%s: command %q", file, b.cmd)
	}
	if *rewrite {
		require.NoError(t, os.WriteFile(file, []byte(out.String()), 0o644))
	}
}

func runCommand(t *testing.T, s *fleet.Scheduler, now *time.Time, line string) string {
	fields := strings.Fields(line)
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
	result := func(err error) string {
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return "ok\n"
	}
	switch cmd {
	case "tick":
		d, err := time.ParseDuration(pos[0])
		require.NoError(t, err)
		*now = now.Add(d)
		return now.Format(time.TimeOnly) + "\n"
	case "submit":
		return result(s.Submit(*now, parseWorkload(t, kv)))
	case "submit-many":
		// submit-many n=10 prefix=r ... submits n copies named prefix-i.
		n, _ := strconv.Atoi(kv["n"])
		for i := range n {
			w := parseWorkload(t, kv)
			w.ID = fmt.Sprintf("%s-%d", kv["prefix"], i)
			if err := s.Submit(*now, w); err != nil {
				return result(err)
			}
		}
		return "ok\n"
	case "schedule":
		d := s.Schedule(*now)
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
		return got
	case "exit-many":
		// exit-many prefix=old n=8 how=finished exits prefix-0..prefix-(n-1).
		n, _ := strconv.Atoi(kv["n"])
		from, _ := strconv.Atoi(kv["from"])
		for i := from; i < from+n; i++ {
			if err := s.Exited(*now, fmt.Sprintf("%s-%d", kv["prefix"], i), gang.ExitFinished); err != nil {
				return result(err)
			}
		}
		return "ok\n"
	case "exit":
		reasons := map[string]gang.ExitReason{"finished": gang.ExitFinished, "failed": gang.ExitFailed,
			"drained": gang.ExitDrained, "killed": gang.ExitKilled}
		return result(s.Exited(*now, pos[0], reasons[pos[1]]))
	case "cancel":
		return result(s.Cancel(*now, pos[0]))
	case "checkpoint":
		return result(s.Checkpointed(*now, pos[0]))
	case "node-down", "node-up", "cordon":
		h := map[string]topology.Health{"node-down": topology.Down, "node-up": topology.Healthy, "cordon": topology.Cordoned}[cmd]
		affected, err := s.SetNodeHealth(*now, pos[0], h)
		if err != nil {
			return result(err)
		}
		return fmt.Sprintf("affected: %v\n", affected)
	case "explain":
		x, err := s.Explain(pos[0])
		if err != nil {
			return result(err)
		}
		return x.Message + "\n"
	case "map":
		return s.Snapshot().Fleet.Occupancy
	case "usage":
		var b strings.Builder
		for _, q := range s.Snapshot().Queues {
			for _, f := range q.Flavors {
				fmt.Fprintf(&b, "%s: in use %d of %d nominal, borrowed %d\n", q.Name, f.InUse, f.Nominal, f.Borrowed)
			}
		}
		return b.String()
	}
	t.Fatalf("unknown command %q", cmd)
	return ""
}

// parseWorkload reads id= queue= class= shape= pods=NxG[,NxG]
// required= preferred= preemptible=true ckpt= grace= runtime=.
func parseWorkload(t *testing.T, kv map[string]string) gang.Workload {
	w := gang.Workload{ID: kv["id"], Queue: kv["queue"], PriorityClass: kv["class"]}
	require.NoError(t, w.Shape.UnmarshalText([]byte(kv["shape"])))
	for i, ps := range strings.Split(kv["pods"], ",") {
		n, g, _ := strings.Cut(ps, "x")
		count, err1 := strconv.Atoi(n)
		gpus, err2 := strconv.Atoi(g)
		require.NoError(t, err1)
		require.NoError(t, err2)
		w.PodSets = append(w.PodSets, gang.PodSet{Name: fmt.Sprintf("ps%d", i), Count: count, GPUsPerPod: gpus})
	}
	w.Topology.Required, w.Topology.Preferred = kv["required"], kv["preferred"]
	w.Drain.Preemptible = kv["preemptible"] == "true"
	dur := func(k string) time.Duration {
		if kv[k] == "" {
			return 0
		}
		d, err := time.ParseDuration(kv[k])
		require.NoError(t, err)
		return d
	}
	w.Drain.CheckpointInterval, w.Drain.GracePeriod, w.ExpectedRuntime = dur("ckpt"), dur("grace"), dur("runtime")
	if p, ok := kv["priority"]; ok {
		v, err := strconv.Atoi(p)
		require.NoError(t, err)
		w.Priority = int32(v)
	}
	return w
}
