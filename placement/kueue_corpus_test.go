package placement_test

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// The corpus under testdata/kueue holds the facts of the cases of Kueue's
// topology-aware scheduling tests (kubernetes-sigs/kueue, Apache License
// 2.0), restated in fleet's terms; testdata/kueue/README gives the format
// and the translation. Each case runs through Place: where Kueue finds a
// placement fleet must find one inside one domain of the required level,
// and its pods per domain must be Kueue's, or differ exactly as the case's
// "differs" line documents (see "Differences from Kueue" in doc.go).

type tasCase struct {
	where, name string
	spec        topology.Spec
	used        map[string]int
	health      map[string]topology.Health
	w           gang.Workload
	want, fleet map[string]int // pods by domain or node; nil: no placement
	differs     string
}

func TestKueueTASCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "kueue", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	total, agree := 0, 0
	for _, file := range files {
		for _, c := range parseTASCorpus(t, file) {
			total++
			t.Run(c.name, func(t *testing.T) {
				got := runTASCase(t, c)
				if c.differs == "" {
					require.Equal(t, c.want, got, "%s: Kueue's pods by domain, then fleet's", c.where)
					agree++
					return
				}
				require.NotEqual(t, c.want, got, "%s: documented as differing (%s) but agrees with Kueue now", c.where, c.differs)
				require.Equal(t, c.fleet, got, "%s: differs from Kueue other than documented (%s)", c.where, c.differs)
			})
		}
	}
	t.Logf("Kueue TAS corpus: %d cases, %d agree, %d differ as documented", total, agree, total-agree)
}

// runTASCase places the case's request and returns its pods counted by
// the domains and nodes Kueue's answer names (nil when none is found),
// after checking that the placement is valid and meets the required level.
func runTASCase(t *testing.T, c tasCase) map[string]int {
	f, err := topology.New(c.spec)
	require.NoError(t, err, c.where)
	for name, n := range c.used {
		require.NoError(t, f.Allocate(node(t, f, name), n), c.where)
	}
	for name, h := range c.health {
		require.NoError(t, f.SetHealth(node(t, f, name), h), c.where)
	}
	a, err := placement.Place(f, &c.w, placement.Options{})
	if err != nil {
		require.ErrorIs(t, err, placement.ErrNoFit, c.where)
		return nil
	}
	checkValid(t, f, &c.w, a)
	if req := c.w.Topology.Required; req != "" {
		l, ok := f.Level(req)
		require.True(t, ok, c.where)
		require.GreaterOrEqual(t, a.Span, l, "%s: pods span more than one %s", c.where, req)
	}
	names := slices.Collect(maps.Keys(c.want))
	if c.want == nil {
		names = slices.Collect(maps.Keys(c.fleet))
	}
	// Count pods by the level of the names the answer uses.
	depth := 1
	if len(names) > 0 {
		depth = strings.Count(names[0], "/") + 1
	}
	got := map[string]int{}
	for _, p := range a.Pods {
		path := strings.Split(f.NodeName(p.Node), "/")
		got[strings.Join(path[:min(depth, len(path))], "/")]++
	}
	return got
}

// parseTASCorpus reads one corpus file (see testdata/kueue/README).
func parseTASCorpus(t *testing.T, path string) []tasCase {
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	var lines [][]string
	var where []string
	sc := bufio.NewScanner(fh)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		if fs := strings.Fields(line); len(fs) > 0 {
			lines = append(lines, fs)
			where = append(where, fmt.Sprintf("%s:%d", path, ln))
		}
	}
	require.NoError(t, sc.Err())
	defs := map[string][][]string{}
	var out []tasCase
	var c *tasCase
	var def string
	var apply func(at string, fs []string)
	apply = func(at string, fs []string) {
		cmd, args := fs[0], fs[1:]
		switch cmd {
		case "include":
			d, ok := defs[args[0]]
			require.True(t, ok, "%s: no definition %q", at, args[0])
			for _, l := range d {
				apply(at, l)
			}
		case "levels":
			c.spec.Levels = args
		case "node":
			path := strings.Split(args[0], "/")
			require.Len(t, path, len(c.spec.Levels), "%s: node path", at)
			ns := topology.NodeSpec{Name: args[0]}
			for i := 1; i < len(path); i++ {
				ns.Path = append(ns.Path, strings.Join(path[:i], "/"))
			}
			for _, a := range args[1:] {
				k, v, _ := strings.Cut(a, "=")
				switch k {
				case "gpus":
					ns.GPUs = atoi(t, at, v)
				case "used":
					c.used[args[0]] = atoi(t, at, v)
				case "down":
					c.health[args[0]] = topology.Down
				case "cordoned":
					c.health[args[0]] = topology.Cordoned
				default:
					t.Fatalf("%s: unknown node key %q", at, k)
				}
			}
			c.spec.Nodes = append(c.spec.Nodes, ns)
		case "request":
			ps := gang.PodSet{Name: "main"}
			for _, a := range args {
				k, v, _ := strings.Cut(a, "=")
				switch k {
				case "pods":
					ps.Count = atoi(t, at, v)
				case "gpus":
					ps.GPUsPerPod = atoi(t, at, v)
				case "required":
					c.w.Topology.Required = v
				case "preferred":
					c.w.Topology.Preferred = v
				default:
					t.Fatalf("%s: unknown request key %q", at, k)
				}
			}
			c.w.PodSets = []gang.PodSet{ps}
		case "want", "fleet":
			m := map[string]int(nil)
			if args[0] != "nofit" {
				m = map[string]int{}
				for _, a := range args {
					k, v, ok := strings.Cut(a, "=")
					require.True(t, ok, "%s: %q", at, a)
					m[k] = atoi(t, at, v)
				}
			}
			if cmd == "want" {
				c.want = m
			} else {
				c.fleet = m
			}
		case "differs":
			c.differs = strings.Join(args, " ")
		default:
			t.Fatalf("%s: unknown directive %q", at, cmd)
		}
	}
	for i, fs := range lines {
		switch fs[0] {
		case "source":
			continue
		case "define":
			def, c = fs[1], nil
			continue
		case "case":
			if c != nil {
				out = append(out, *c)
			}
			def = ""
			name := strings.TrimSpace(strings.Join(fs[1:], " "))
			c = &tasCase{where: where[i], name: name, used: map[string]int{}, health: map[string]topology.Health{},
				w: gang.Workload{ID: "w", Queue: "q", Shape: gang.Batch}}
			continue
		}
		if def != "" {
			defs[def] = append(defs[def], fs)
			continue
		}
		require.NotNil(t, c, "%s: %s outside a case", where[i], fs[0])
		apply(where[i], fs)
	}
	if c != nil {
		out = append(out, *c)
	}
	return out
}

func atoi(t *testing.T, where, s string) int {
	v, err := strconv.Atoi(s)
	require.NoError(t, err, "%s: %q", where, s)
	return v
}
