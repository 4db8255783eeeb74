package quota_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// The corpus under testdata/kueue holds the facts of the cases of Kueue's
// flavor assigner tests (kubernetes-sigs/kueue, Apache License 2.0),
// restated in fleet's terms; testdata/kueue/README gives the format and
// the translation. Each case runs through Tree.Assign and must agree with
// Kueue's outcome, or differ exactly as its "differs" line documents (see
// "Differences from Kueue" in docs/sharing.md).

type assignCase struct {
	file, line, source, name string
	spec                     quota.Spec
	usage                    []assignUsage
	sets                     []assignSet
	opts                     quota.AssignOptions
	want, fleet              assignOutcome
	differs                  string
}

type assignUsage struct {
	node, flavor string
	amounts      map[string]int64
}

type assignSet struct {
	name    string
	amounts map[string]int64
	order   []string
	accept  []string // nil: any
}

// assignOutcome is the mode, the borrowing level when given (-1: not
// checked) and, per pod set, each resource's flavor ("-": none).
type assignOutcome struct {
	mode   string
	height int
	sets   map[string]map[string]string
}

func TestKueueFlavorAssignerCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "kueue", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	total, agree := 0, 0
	for _, f := range files {
		for _, c := range parseAssignCorpus(t, f) {
			total++
			t.Run(c.name, func(t *testing.T) {
				got := runAssignCase(t, c)
				where := c.file + ":" + c.line
				if c.differs == "" {
					require.True(t, c.want.matches(got), "%s: Kueue: %v, fleet: %v", where, c.want, got)
					agree++
					return
				}
				require.False(t, c.want.matches(got), "%s: documented as differing (%s) but agrees with Kueue now", where, c.differs)
				require.True(t, c.fleet.matches(got), "%s: differs from Kueue other than documented (%s): %v", where, c.differs, got)
			})
		}
	}
	t.Logf("Kueue flavor assigner corpus: %d cases, %d agree, %d differ as documented", total, agree, total-agree)
}

func (want assignOutcome) matches(got assignOutcome) bool {
	if want.mode != got.mode || want.height >= 0 && want.height != got.height {
		return false
	}
	for ps, res := range want.sets {
		for r, f := range res {
			if got.sets[ps][r] != f {
				return false
			}
		}
	}
	return true
}

func (want assignOutcome) String() string {
	var b strings.Builder
	b.WriteString(want.mode)
	if want.height >= 0 {
		fmt.Fprintf(&b, " height=%d", want.height)
	}
	for _, ps := range slices.Sorted(mapKeys(want.sets)) {
		fmt.Fprintf(&b, " %s:", ps)
		for _, r := range slices.Sorted(mapKeys(want.sets[ps])) {
			fmt.Fprintf(&b, " %s=%s", r, want.sets[ps][r])
		}
	}
	return b.String()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// resourceOf names a corpus resource in the tree: "gpu" is GPUs.
func resourceOf(t *testing.T, tr *quota.Tree, name string) quota.ResourceID {
	if name == "gpu" {
		return quota.GPU
	}
	r, ok := tr.Resource(name)
	require.True(t, ok, "resource %q", name)
	return r
}

func runAssignCase(t *testing.T, c assignCase) assignOutcome {
	tr, err := quota.New(c.spec)
	require.NoError(t, err, "%s:%s", c.file, c.line)
	for _, u := range c.usage {
		n, ok := tr.Node(u.node)
		require.True(t, ok, u.node)
		f, ok := tr.Flavor(u.flavor)
		require.True(t, ok, u.flavor)
		var ch []quota.Charge
		for r, v := range u.amounts {
			ch = append(ch, quota.Charge{Flavor: f, Resource: resourceOf(t, tr, r), Value: v})
		}
		require.NoError(t, tr.AddCharges(n, ch), "%s:%s usage", c.file, c.line)
	}
	q, ok := tr.Node("cq")
	require.True(t, ok, "every case assigns for queue cq")
	var sets []quota.PodSetRequest
	for _, s := range c.sets {
		var ps quota.PodSetRequest
		for _, r := range s.order {
			if id := resourceOf(t, tr, r); id == quota.GPU {
				ps.MilliGPUs = s.amounts[r]
			} else {
				ps.Resources = append(ps.Resources, quota.Amount{Resource: id, Value: s.amounts[r]})
			}
		}
		if s.accept != nil {
			ps.GPUFlavors = []quota.FlavorID{}
			for _, a := range s.accept {
				f, ok := tr.Flavor(a)
				require.True(t, ok, a)
				ps.GPUFlavors = append(ps.GPUFlavors, f)
			}
		}
		sets = append(sets, ps)
	}
	a := tr.Assign(q, sets, c.opts)
	out := assignOutcome{mode: a.Mode.String(), height: a.Height, sets: map[string]map[string]string{}}
	for i, s := range c.sets {
		res := map[string]string{}
		for _, r := range s.order {
			res[r] = "-"
			if i >= len(a.PodSets) {
				continue
			}
			if g := tr.GroupOf(q, resourceOf(t, tr, r)); g >= 0 && a.PodSets[i][g].Flavor != quota.NoFlavor {
				res[r] = tr.FlavorName(a.PodSets[i][g].Flavor)
			}
		}
		out.sets[s.name] = res
	}
	return out
}

// corpusAmount reads a Kubernetes-style quantity in fleet units: cpu in
// millicores, GPUs in thousandths, memory in bytes, others as counts.
func corpusAmount(t *testing.T, where, res, s string) int64 {
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}} {
		if strings.HasSuffix(s, suf.s) {
			s, mult = strings.TrimSuffix(s, suf.s), suf.m
		}
	}
	milli := false
	if strings.HasSuffix(s, "m") {
		s, milli = strings.TrimSuffix(s, "m"), true
	}
	v, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "%s: quantity %q", where, s)
	switch {
	case milli:
		require.True(t, res == "cpu" || res == "gpu", "%s: millis of %s", where, res)
		return v
	case res == "cpu" || res == "gpu":
		return v * 1000
	}
	return v * mult
}

// parseAssignCorpus reads one corpus file (see testdata/kueue/README).
func parseAssignCorpus(t *testing.T, path string) []assignCase {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []assignCase
	var c *assignCase
	source := ""
	nodes := map[string]int{}
	flush := func() {
		if c != nil {
			out = append(out, *c)
		}
	}
	outcome := func(where string, args []string) assignOutcome {
		o := assignOutcome{mode: args[0], height: -1, sets: map[string]map[string]string{}}
		for _, a := range args[1:] {
			k, v, ok := strings.Cut(a, "=")
			require.True(t, ok && k == "height", "%s: %q", where, a)
			o.height, err = strconv.Atoi(v)
			require.NoError(t, err, where)
		}
		return o
	}
	assigned := func(where string, o *assignOutcome, args []string) {
		res := map[string]string{}
		for _, a := range args[1:] {
			k, v, ok := strings.Cut(a, "=")
			require.True(t, ok, "%s: %q", where, a)
			res[k] = v
		}
		o.sets[args[0]] = res
	}
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, ln)
		cmd, args := fields[0], fields[1:]
		if cmd != "source" && cmd != "case" {
			require.NotNil(t, c, "%s: %s outside a case", where, cmd)
		}
		switch cmd {
		case "source":
			source = strings.Join(args, " ")
		case "case":
			flush()
			c = &assignCase{file: path, line: strconv.Itoa(ln), source: source, name: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "case"))}
			nodes = map[string]int{}
		case "cohort", "queue":
			n := quota.NodeSpec{Name: args[0], Kind: quota.Cohort}
			if cmd == "queue" {
				n.Kind = quota.Queue
			}
			for _, a := range args[1:] {
				k, v, ok := strings.Cut(a, "=")
				require.True(t, ok, "%s: %q", where, a)
				switch k {
				case "parent":
					n.Parent = v
				case "whenCanBorrow":
					require.NoError(t, n.FlavorFungibility.WhenCanBorrow.UnmarshalText([]byte(v)), where)
				case "whenCanPreempt":
					require.NoError(t, n.FlavorFungibility.WhenCanPreempt.UnmarshalText([]byte(v)), where)
				case "reclaim":
					require.NoError(t, n.Preemption.ReclaimWithinCohort.UnmarshalText([]byte(v)), where)
				case "borrowWithinCohort":
					require.NoError(t, n.Preemption.BorrowWithinCohort.Policy.UnmarshalText([]byte(v)), where)
				default:
					t.Fatalf("%s: unknown key %q", where, k)
				}
			}
			nodes[n.Name] = len(c.spec.Nodes)
			c.spec.Nodes = append(c.spec.Nodes, n)
		case "group":
			// group NODE res=R,R | FLAVOR R=Q[:bl=Q][:ll=Q]... | FLAVOR ...
			i, ok := nodes[args[0]]
			require.True(t, ok, "%s: unknown node %q", where, args[0])
			n := &c.spec.Nodes[i]
			parts := strings.Split(strings.Join(args[1:], " "), "|")
			covered := strings.TrimPrefix(strings.TrimSpace(parts[0]), "res=")
			var g quota.ResourceGroup
			for _, r := range strings.Split(covered, ",") {
				if r == "gpu" {
					g.GPUs = true
					continue
				}
				g.Resources = append(g.Resources, r)
				if !slices.Contains(c.spec.Resources, r) {
					c.spec.Resources = append(c.spec.Resources, r)
				}
			}
			for _, p := range parts[1:] {
				fs := strings.Fields(p)
				fq := quota.FlavorQuota{Flavor: fs[0]}
				if !slices.Contains(c.spec.Flavors, fs[0]) {
					c.spec.Flavors = append(c.spec.Flavors, fs[0])
				}
				for _, e := range fs[1:] {
					items := strings.Split(e, ":")
					r, nominal, ok := strings.Cut(items[0], "=")
					require.True(t, ok, "%s: %q", where, e)
					var bl, ll quota.Limit
					for _, it := range items[1:] {
						k, v, ok := strings.Cut(it, "=")
						require.True(t, ok && (k == "bl" || k == "ll"), "%s: %q", where, it)
						amt := corpusAmount(t, where, r, v)
						if r == "gpu" {
							amt /= 1000
						}
						if k == "bl" {
							bl = quota.LimitOf(amt)
						} else {
							ll = quota.LimitOf(amt)
						}
					}
					amt := corpusAmount(t, where, r, nominal)
					if r == "gpu" {
						fq.Nominal, fq.BorrowingLimit, fq.LendingLimit = amt/1000, bl, ll
						continue
					}
					fq.Resources = append(fq.Resources, quota.ResourceQuota{Name: r, Nominal: amt, BorrowingLimit: bl, LendingLimit: ll})
				}
				n.Quotas = append(n.Quotas, fq)
				g.Flavors = append(g.Flavors, fs[0])
			}
			n.ResourceGroups = append(n.ResourceGroups, g)
		case "usage":
			u := assignUsage{node: args[0], flavor: args[1], amounts: map[string]int64{}}
			for _, a := range args[2:] {
				k, v, ok := strings.Cut(a, "=")
				require.True(t, ok, "%s: %q", where, a)
				u.amounts[k] = corpusAmount(t, where, k, v)
			}
			c.usage = append(c.usage, u)
		case "fairsharing":
			c.opts.FairSharing = true
		case "podset":
			s := assignSet{name: args[0], amounts: map[string]int64{}}
			for _, a := range args[1:] {
				k, v, ok := strings.Cut(a, "=")
				require.True(t, ok, "%s: %q", where, a)
				if k == "accept" {
					s.accept = []string{}
					if v != "none" {
						s.accept = strings.Split(v, ",")
					}
					continue
				}
				s.amounts[k] = corpusAmount(t, where, k, v)
				s.order = append(s.order, k)
			}
			c.sets = append(c.sets, s)
		case "want":
			c.want = outcome(where, args)
		case "assign":
			assigned(where, &c.want, args)
		case "differs":
			c.differs = strings.Join(args, " ")
		case "fleet":
			c.fleet = outcome(where, args)
		case "fleet-assign":
			assigned(where, &c.fleet, args)
		default:
			t.Fatalf("%s: unknown directive %q", where, cmd)
		}
	}
	require.NoError(t, sc.Err())
	flush()
	return out
}
