package preempt_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// The corpus under testdata/kueue holds the facts of Kueue's own unit
// tests (the quota tree, the running work, the request, the outcome)
// translated into fleet's terms; the format is described in
// testdata/kueue/README. Every case runs through quota and preempt (and
// placement, for the topology cases); a case Kueue and fleet decide
// differently says why (a "differs" line, one of the differences listed
// in the package documentation) and what fleet decides, and the test
// checks that it still decides so.

// corpusCase is one translated case.
type corpusCase struct {
	file, line   string
	source, name string
	flavors      []string
	nodes        []quota.NodeSpec
	runs         []corpusRun
	in           corpusRun
	fairSharing  bool
	submitted    time.Duration
	hasSubmitted bool
	leaves       [][]int // topology cases: GPUs per node, per rack
	required     string
	pods, perPod int
	want         []string
	reasons      map[string]string // Kueue's reason per wanted victim, when given
	strategies   []preempt.FairSharingStrategy
	differs      string
	fleet        []string
	hasFleet     bool
}

type corpusRun struct {
	id, queue, flavor string
	prio              int32
	gpus              int
	at                time.Duration  // started at the case's base time plus at
	queued            *time.Duration // queue-order time (creation), when it differs from at
	draining          bool
	nodes             []int // topology cases: the nodes it holds, one GPU block each
}

// corpusBase is the case's "now" in Kueue's tests; the request is made an
// hour later, so that every running workload has run a while.
var corpusBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestKueueCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "kueue", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	type tally struct{ cases, agree, differ int }
	bySource := map[string]*tally{}
	var sources []string
	for _, f := range files {
		for _, c := range parseCorpus(t, f) {
			tl := bySource[c.source]
			if tl == nil {
				tl = &tally{}
				bySource[c.source] = tl
				sources = append(sources, c.source)
			}
			tl.cases++
			t.Run(c.source+"/"+c.name, func(t *testing.T) {
				got, reasons := runCorpusCase(t, c)
				where := c.file + ":" + c.line
				if c.differs == "" {
					require.Equal(t, c.want, got, "%s: victims differ from Kueue's", where)
					for id, want := range c.reasons {
						require.Equal(t, want, reasons[id], "%s: reason of %s", where, id)
					}
					tl.agree++
					return
				}
				require.NotEqual(t, c.want, got, "%s: documented as differing (%s) but agrees with Kueue now", where, c.differs)
				require.Equal(t, c.fleet, got, "%s: differs from Kueue other than documented (%s)", where, c.differs)
				tl.differ++
			})
		}
	}
	slices.Sort(sources)
	total, agree := 0, 0
	for _, s := range sources {
		tl := bySource[s]
		t.Logf("%s: %d cases, %d agree with Kueue, %d differ as documented", s, tl.cases, tl.agree, tl.differ)
		total += tl.cases
		agree += tl.agree
	}
	t.Logf("Kueue corpus: %d cases, %d agree", total, agree)
}

// runCorpusCase builds the fleet and the tree, indexes the running work
// and asks for victims; it returns their IDs, sorted (nil: none), and
// each one's reason in Kueue's words.
func runCorpusCase(t *testing.T, c corpusCase) ([]string, map[string]string) {
	tree, err := quota.New(quota.Spec{Flavors: c.flavors, Nodes: c.nodes})
	require.NoError(t, err)
	f, nodesOf := corpusFleet(t, c)
	now := corpusBase.Add(time.Hour)
	x := preempt.NewIndex(f, tree)
	next := map[string]int{}
	for _, r := range c.runs {
		q, ok := tree.Node(r.queue)
		require.True(t, ok, "queue %q", r.queue)
		fl, ok := tree.Flavor(r.flavor)
		require.True(t, ok, "flavor %q", r.flavor)
		var ng []placement.NodeGPUs
		if c.leaves != nil {
			for _, n := range r.nodes {
				g := f.Free(topology.NodeID(n))
				ng = append(ng, placement.NodeGPUs{Node: topology.NodeID(n), GPUs: min(g, r.gpus/len(r.nodes))})
			}
		} else {
			for range r.gpus {
				ng = append(ng, placement.NodeGPUs{Node: nodesOf[r.flavor][next[r.flavor]], GPUs: 1})
				next[r.flavor]++
			}
		}
		for _, n := range ng {
			require.NoError(t, f.Allocate(n.Node, n.GPUs))
		}
		require.NoError(t, tree.AddUsage(q, fl, int64(r.gpus)))
		w := &gang.Workload{ID: r.id, Queue: r.queue, Priority: r.prio, Flavor: r.flavor,
			PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: r.gpus}}, Drain: gang.DrainContract{Preemptible: true}}
		if c.leaves == nil {
			w.PodSets[0] = gang.PodSet{Name: "p", Count: r.gpus, GPUsPerPod: 1}
		}
		run := preempt.Running{W: w, Queue: q, Flavor: fl, Nodes: ng,
			Started: corpusBase.Add(r.at), Draining: r.draining, Preemptible: true}
		if r.queued != nil {
			run.Submitted = corpusBase.Add(*r.queued)
		}
		require.NoError(t, x.Add(run))
	}
	q, ok := tree.Node(c.in.queue)
	require.True(t, ok, "queue %q", c.in.queue)
	fl, ok := tree.Flavor(c.in.flavor)
	require.True(t, ok, "flavor %q", c.in.flavor)
	w := &gang.Workload{ID: "in", Queue: c.in.queue, Priority: c.in.prio, Flavor: c.in.flavor,
		PodSets: []gang.PodSet{{Name: "p", Count: c.in.gpus, GPUsPerPod: 1}}}
	if c.leaves != nil {
		w.PodSets[0] = gang.PodSet{Name: "p", Count: c.pods, GPUsPerPod: c.perPod}
		w.Topology.Required = c.required
	}
	req := preempt.Request{W: w, Queue: q, Flavor: fl, Now: now, FairSharing: c.fairSharing}
	if c.hasSubmitted {
		req.Submitted = corpusBase.Add(c.submitted)
	}
	view := preempt.View{Fleet: f, Tree: tree, Index: x, Scratch: f.Clone()}
	p, err := preempt.NewSearcher(preempt.Options{FairSharingStrategies: c.strategies}).Victims(view, req, nil)
	if err != nil {
		require.ErrorIs(t, err, preempt.ErrNoPlan)
		require.NotErrorIs(t, err, preempt.ErrInvalid)
		return nil, nil
	}
	var got []string
	reasons := map[string]string{}
	for _, v := range p.Victims {
		got = append(got, v.ID)
		reasons[v.ID] = kueueReason[v.Reason]
	}
	slices.Sort(got)
	return got, reasons
}

// kueueReason names fleet's reasons as Kueue labels preempted workloads.
var kueueReason = map[preempt.Reason]string{
	preempt.InQueue:               "InClusterQueue",
	preempt.Reclaim:               "InCohortReclamation",
	preempt.ReclaimWhileBorrowing: "InCohortReclaimWhileBorrowing",
	preempt.FairSharing:           "InCohortFairSharing",
}

// corpusFleet builds the fleet of a case: for a quota case, one leaf per
// flavor of 1-GPU nodes, as many as the running work and the request
// need, so that only quota binds; for a topology case, the leaves given.
func corpusFleet(t *testing.T, c corpusCase) (*topology.Fleet, map[string][]topology.NodeID) {
	spec := topology.Spec{Levels: []string{"block", "rack", "node"}}
	if c.leaves != nil {
		for i, leaf := range c.leaves {
			for j, g := range leaf {
				spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d-%d", i, j),
					Path: []string{"b", fmt.Sprintf("r%d", i)}, GPUs: g, Flavor: c.flavors[0]})
			}
		}
		f, err := topology.New(spec)
		require.NoError(t, err)
		return f, nil
	}
	need := map[string]int{c.in.flavor: c.in.gpus}
	for _, r := range c.runs {
		need[r.flavor] += r.gpus
	}
	for _, fl := range c.flavors {
		for i := range max(need[fl], 1) {
			spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("%s-%d", fl, i),
				Path: []string{"b", "r-" + fl}, GPUs: 1, Flavor: fl})
		}
	}
	f, err := topology.New(spec)
	require.NoError(t, err)
	nodesOf := map[string][]topology.NodeID{}
	for n := range topology.NodeID(f.NumNodes()) {
		fl := f.NodeSpec(n).Flavor
		nodesOf[fl] = append(nodesOf[fl], n)
	}
	return f, nodesOf
}

// parseCorpus reads one corpus file (see testdata/kueue/README).
func parseCorpus(t *testing.T, path string) []corpusCase {
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	trees := map[string][]quota.NodeSpec{}
	var flavors []string
	var out []corpusCase
	var cur *corpusCase
	var defining string
	source := ""
	sc := bufio.NewScanner(fh)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, ln)
		word, rest, _ := strings.Cut(line, " ")
		kv, args := corpusArgs(rest)
		if defining != "" && word != "end" && word != "cohort" && word != "queue" {
			t.Fatalf("%s: %q inside tree %s", where, word, defining)
		}
		switch word {
		case "source":
			source = rest
		case "flavors":
			flavors = strings.Fields(rest)
		case "tree":
			if cur == nil {
				defining = rest
				trees[defining] = nil
				continue
			}
			nodes, ok := trees[rest]
			require.True(t, ok, "%s: unknown tree %q", where, rest)
			cur.nodes = append(cur.nodes, nodes...)
		case "end":
			defining = ""
		case "cohort", "queue":
			n := corpusNode(t, where, word, args, kv)
			if defining != "" {
				trees[defining] = append(trees[defining], n)
			} else {
				require.NotNil(t, cur, where)
				cur.nodes = append(cur.nodes, n)
			}
		case "case":
			out = append(out, corpusCase{file: filepath.Base(path), line: strconv.Itoa(ln), source: source,
				name: rest, flavors: flavors})
			cur = &out[len(out)-1]
		case "run":
			require.NotNil(t, cur, where)
			cur.runs = append(cur.runs, corpusWork(t, where, args, kv, cur.flavors))
		case "incoming":
			require.NotNil(t, cur, where)
			cur.in = corpusWork(t, where, append([]string{"in"}, args...), kv, cur.flavors)
			if _, ok := kv["fairsharing"]; ok {
				cur.fairSharing = true
			}
			if s, ok := kv["strategies"]; ok {
				for _, name := range strings.Split(s, ",") {
					var st preempt.FairSharingStrategy
					require.NoError(t, st.UnmarshalText([]byte(name)), where)
					cur.strategies = append(cur.strategies, st)
				}
			}
			if s, ok := kv["submitted"]; ok {
				cur.submitted, cur.hasSubmitted = corpusDuration(t, where, s), true
			}
			if s, ok := kv["pods"]; ok {
				cur.pods, cur.perPod = corpusInt(t, where, s), corpusInt(t, where, kv["per"])
				cur.in.gpus = cur.pods * cur.perPod
			}
			cur.required = kv["required"]
		case "leaf":
			require.NotNil(t, cur, where)
			var leaf []int
			for _, a := range args {
				leaf = append(leaf, corpusInt(t, where, a))
			}
			cur.leaves = append(cur.leaves, leaf)
		case "want":
			require.NotNil(t, cur, where)
			cur.want = corpusIDs(args)
			for i, id := range cur.want {
				if id, reason, ok := strings.Cut(id, ":"); ok {
					if cur.reasons == nil {
						cur.reasons = map[string]string{}
					}
					cur.want[i], cur.reasons[id] = id, reason
				}
			}
			slices.Sort(cur.want)
		case "differs":
			require.NotNil(t, cur, where)
			cur.differs = rest
		case "fleet":
			require.NotNil(t, cur, where)
			cur.fleet, cur.hasFleet = corpusIDs(args), true
		default:
			t.Fatalf("%s: unknown line %q", where, word)
		}
	}
	require.NoError(t, sc.Err())
	for _, c := range out {
		require.NotEmpty(t, c.source, "%s:%s: no source", c.file, c.line)
		require.NotEmpty(t, c.in.queue, "%s:%s: no incoming workload", c.file, c.line)
		require.Equal(t, c.differs != "", c.hasFleet, "%s:%s: a differs line goes with a fleet line", c.file, c.line)
	}
	return out
}

func corpusIDs(args []string) []string {
	if len(args) == 0 || len(args) == 1 && args[0] == "none" {
		return nil
	}
	out := slices.Clone(args)
	slices.Sort(out)
	return out
}

// corpusArgs splits "a b k=v" into positional arguments and key=values;
// a bare key that names a flag (fairsharing, draining) is a key too.
func corpusArgs(s string) (map[string]string, []string) {
	kv := map[string]string{}
	var args []string
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
			continue
		}
		if f == "fairsharing" || f == "draining" {
			kv[f] = ""
			continue
		}
		args = append(args, f)
	}
	return kv, args
}

func corpusInt(t *testing.T, where, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err, where)
	return n
}

func corpusDuration(t *testing.T, where, s string) time.Duration {
	d, err := time.ParseDuration(s)
	require.NoError(t, err, where)
	return d
}

// corpusNode reads "queue NAME [parent=P] [quota=F:N[:bl=B][:ll=L],...]
// [within=...] [reclaim=...] [borrow=LowerPriority] [threshold=N]
// [weight=W]"; a cohort takes only parent, quota and weight.
func corpusNode(t *testing.T, where, kind string, args []string, kv map[string]string) quota.NodeSpec {
	require.Len(t, args, 1, where)
	n := quota.NodeSpec{Name: args[0], Parent: kv["parent"], Kind: quota.Queue}
	if kind == "cohort" {
		n.Kind = quota.Cohort
	}
	if q := kv["quota"]; q != "" {
		for _, entry := range strings.Split(q, ",") {
			parts := strings.Split(entry, ":")
			fq := quota.FlavorQuota{Flavor: parts[0], Nominal: int64(corpusInt(t, where, parts[1]))}
			for _, p := range parts[2:] {
				k, v, _ := strings.Cut(p, "=")
				switch k {
				case "bl":
					fq.BorrowingLimit = quota.LimitOf(int64(corpusInt(t, where, v)))
				case "ll":
					fq.LendingLimit = quota.LimitOf(int64(corpusInt(t, where, v)))
				default:
					t.Fatalf("%s: quota field %q", where, k)
				}
			}
			n.Quotas = append(n.Quotas, fq)
		}
	}
	if w, ok := kv["weight"]; ok {
		v, err := strconv.ParseFloat(w, 64)
		require.NoError(t, err, where)
		n.Weight = &v
	}
	if s := kv["within"]; s != "" {
		require.NoError(t, n.Preemption.WithinQueue.UnmarshalText([]byte(s)), where)
	}
	if s := kv["reclaim"]; s != "" {
		require.NoError(t, n.Preemption.ReclaimWithinCohort.UnmarshalText([]byte(s)), where)
	}
	if s := kv["borrow"]; s != "" {
		require.NoError(t, n.Preemption.BorrowWithinCohort.Policy.UnmarshalText([]byte(s)), where)
	}
	if s, ok := kv["threshold"]; ok {
		th := int32(corpusInt(t, where, s))
		n.Preemption.BorrowWithinCohort.MaxPriorityThreshold = &th
	}
	return n
}

// corpusWork reads "ID queue=Q prio=N gpus=G [flavor=F] [at=D] [draining]
// [nodes=i,j]"; the flavor defaults to the file's first.
func corpusWork(t *testing.T, where string, args []string, kv map[string]string, flavors []string) corpusRun {
	require.Len(t, args, 1, where)
	r := corpusRun{id: args[0], queue: kv["queue"], flavor: kv["flavor"]}
	if r.flavor == "" && len(flavors) > 0 {
		r.flavor = flavors[0]
	}
	if s := kv["prio"]; s != "" {
		r.prio = int32(corpusInt(t, where, s))
	}
	if s := kv["gpus"]; s != "" {
		r.gpus = corpusInt(t, where, s)
	}
	if s := kv["at"]; s != "" {
		r.at = corpusDuration(t, where, s)
	}
	if s := kv["queued"]; s != "" {
		d := corpusDuration(t, where, s)
		r.queued = &d
	}
	if s := kv["nodes"]; s != "" {
		for _, n := range strings.Split(s, ",") {
			r.nodes = append(r.nodes, corpusInt(t, where, n))
		}
	}
	_, r.draining = kv["draining"]
	return r
}
