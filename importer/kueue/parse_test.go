package kueue_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/internal/importtest"
	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/quota"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func parseFile(t *testing.T, name string) *kueue.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	res, err := kueue.Parse(b, kueue.Options{})
	require.NoError(t, err)
	return res
}

func render(t *testing.T, res *kueue.Result) string {
	tree, err := quota.New(res.Spec)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, tree.Render(&b))
	b.WriteString("\n### Priority classes\n\n")
	for _, pc := range res.PriorityClasses {
		fmt.Fprintf(&b, "%s = %d %s\n", pc.Name, pc.Value, pc.Description)
	}
	b.WriteString("\n### Flavors, topologies, local queues\n\n")
	for _, f := range res.Flavors {
		fmt.Fprintf(&b, "flavor %s labels=%v topology=%q\n", f.Name, f.NodeLabels, f.TopologyName)
	}
	for _, tp := range res.Topologies {
		fmt.Fprintf(&b, "topology %s %v\n", tp.Name, tp.Levels)
	}
	for _, lq := range res.LocalQueues {
		fmt.Fprintf(&b, "localqueue %s/%s -> %s\n", lq.Namespace, lq.Name, lq.ClusterQueue)
	}
	b.WriteString("\n### Notes\n\n")
	for _, n := range res.Notes {
		b.WriteString(n.String() + "\n")
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, v := range []string{"v1alpha1", "v1beta1", "v1beta2"} {
		t.Run(v, func(t *testing.T) {
			importtest.Golden(t, v+".golden", render(t, parseFile(t, v+".yaml")), *update)
		})
	}
}

// The three API generations describe the same tree.
func TestVersionsAgree(t *testing.T) {
	want := parseFile(t, "v1beta2.yaml")
	for _, v := range []string{"v1alpha1", "v1beta1"} {
		got := parseFile(t, v+".yaml")
		assert.Equal(t, want.Spec, got.Spec, v)
		assert.Equal(t, want.PriorityClasses, got.PriorityClasses, v)
		assert.Equal(t, want.Flavors, got.Flavors, v)
	}
	s := want.Spec
	assert.Equal(t, []string{"h100"}, s.Flavors)
	require.Len(t, s.Nodes, 6)
	llm := s.Nodes[3]
	assert.Equal(t, "research-llm", llm.Name)
	assert.Equal(t, "research", llm.Parent)
	assert.Equal(t, quota.BorrowLowerPriority, llm.Preemption.BorrowWithinCohort.Policy)
	th, ok := llm.Preemption.BorrowWithinCohort.Threshold()
	assert.True(t, ok)
	assert.Equal(t, int32(100), th)
	assert.Equal(t, 1.5, *llm.Weight)
	assert.Equal(t, 0.5, *s.Nodes[4].Weight)
	bl, ok := llm.Quotas[0].BorrowingLimit.Get()
	assert.True(t, ok)
	assert.Equal(t, int64(256), bl)
}

func TestNotes(t *testing.T) {
	res := parseFile(t, "v1beta2.yaml")
	var all []string
	for _, n := range res.Notes {
		all = append(all, n.String())
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{
		`ClusterQueue "prod-inference": resource cpu of flavor h100 not modelled (nominal 19200)`,
		`ClusterQueue "prod-inference": resource memory of flavor h100 not modelled (nominal 240Ti)`,
		`ClusterQueue "batch": field spec.stopPolicy not modelled`,
		`ClusterQueue "batch": resource cpu of flavor default-flavor not modelled`,
		`PriorityClass "system-critical-gpu": scheduling.k8s.io/v1 PriorityClass skipped`,
		`ResourceFlavor "default-flavor": no nvidia.com/gpu quota uses it`,
	} {
		assert.Contains(t, joined, want)
	}
}

func TestQuantities(t *testing.T) {
	doc := func(q string) string {
		return `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: f
      resources:
      - {name: nvidia.com/gpu, nominalQuota: ` + q + `}
`
	}
	tests := []struct {
		q       string
		want    int64
		rounded bool
	}{
		{"8", 8, false}, {`"1k"`, 1000, false}, {"500m", 1, true}, {"1.5", 2, true}, {"1e3", 1000, false}, {`"0.1m"`, 1, true},
	}
	for _, tt := range tests {
		res, err := kueue.Parse([]byte(doc(tt.q)), kueue.Options{})
		require.NoError(t, err, tt.q)
		assert.Equal(t, tt.want, res.Spec.Nodes[0].Quotas[0].Nominal, tt.q)
		rounded := false
		for _, n := range res.Notes {
			rounded = rounded || strings.Contains(n.Detail, "rounded up")
		}
		assert.Equal(t, tt.rounded, rounded, tt.q)
	}
	for _, bad := range []string{"1K", "-1", "abc", "[1]", "1e9999999", `"1e-9999999"`} {
		_, err := kueue.Parse([]byte(doc(bad)), kueue.Options{})
		require.ErrorIs(t, err, kueue.ErrQuantity, bad)
	}
	// Another resource name is the GPU when the options say so.
	res, err := kueue.Parse([]byte(strings.ReplaceAll(doc("4"), "nvidia.com/gpu", "amd.com/gpu")), kueue.Options{Resource: "amd.com/gpu"})
	require.NoError(t, err)
	assert.Equal(t, int64(4), res.Spec.Nodes[0].Quotas[0].Nominal)
}

func TestErrors(t *testing.T) {
	cq := func(name, spec string) string {
		return "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " + name + "}\nspec:\n" + spec
	}
	cohort := func(v, name, parent string) string {
		return "apiVersion: kueue.x-k8s.io/" + v + "\nkind: Cohort\nmetadata: {name: " + name + "}\nspec: {parentName: " + parent + "}\n"
	}
	group := "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: nvidia.com/gpu, nominalQuota: 8%s}\n"
	tests := []struct {
		name, yaml string
		want       error
		kind, obj  string
	}{
		{"syntax", "a: [", kueue.ErrSyntax, "", ""},
		{"not an object", "- a\n", kueue.ErrSyntax, "", ""},
		{"no name", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {}\n", kueue.ErrNoName, "Cohort", ""},
		{"v1alpha1 ClusterQueue", "apiVersion: kueue.x-k8s.io/v1alpha1\nkind: ClusterQueue\nmetadata: {name: a}\n", kueue.ErrVersion, "ClusterQueue", "a"},
		{"unknown version", "apiVersion: kueue.x-k8s.io/v2\nkind: Cohort\nmetadata: {name: a}\n", kueue.ErrVersion, "Cohort", "a"},
		{"duplicate", cq("a", "  {}\n") + "---\n" + cq("a", "  {}\n"), kueue.ErrDuplicate, "ClusterQueue", "a"},
		{"name clash", cq("a", "  cohortName: a\n"), kueue.ErrNameClash, "ClusterQueue", "a"},
		{"cycle", cohort("v1beta2", "cx", "cy") + "---\n" + cohort("v1beta2", "cy", "cx"), kueue.ErrCycle, "Cohort", "cx"},
		{"v1alpha1 parentName", cohort("v1alpha1", "cx", "cy"), kueue.ErrInvalid, "Cohort", "cx"},
		{"strategy", cq("a", "  queueingStrategy: LIFO\n"), kueue.ErrInvalid, "ClusterQueue", "a"},
		{"within Any", cq("a", "  preemption: {withinClusterQueue: Any}\n"), kueue.ErrInvalid, "ClusterQueue", "a"},
		{"borrow without reclaim", cq("a", "  preemption: {borrowWithinCohort: {policy: LowerPriority}}\n"), kueue.ErrInvalid, "ClusterQueue", "a"},
		{"limit without cohort", cq("a", fmt.Sprintf(group, ", borrowingLimit: 2")), kueue.ErrInvalid, "ClusterQueue", "a"},
		{"lending above nominal", cq("a", "  cohortName: c\n"+fmt.Sprintf(group, ", lendingLimit: 9")), quota.ErrLendingAboveQuota, "ClusterQueue", "a"},
		{"resources mismatch", cq("a", "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: nvidia.com/gpu, nominalQuota: 8}\n"), kueue.ErrInvalid, "ClusterQueue", "a"},
		{"resource order", cq("a", "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: nvidia.com/gpu, nominalQuota: 8}\n      - {name: cpu, nominalQuota: 8}\n"), kueue.ErrInvalid, "ClusterQueue", "a"},
		{"no nominal", cq("a", "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: nvidia.com/gpu}\n"), kueue.ErrInvalid, "ClusterQueue", "a"},
		{"negative weight", cq("a", "  fairSharing: {weight: -1}\n"), kueue.ErrInvalid, "ClusterQueue", "a"},
		{"priority value", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: p}\nvalue: 3000000000\n", kueue.ErrInvalid, "WorkloadPriorityClass", "p"},
		{"hostname not last", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: t}\nspec:\n  levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: rack}]\n", kueue.ErrInvalid, "Topology", "t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kueue.Parse([]byte(tt.yaml), kueue.Options{})
			require.ErrorIs(t, err, tt.want)
			var oe *kueue.ObjectError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tt.kind, oe.Kind)
			assert.Equal(t, tt.obj, oe.Name)
			assert.Positive(t, oe.Line)
		})
	}
}

// Several wrong objects are all reported.
func TestErrorsJoined(t *testing.T) {
	y := "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\nspec: {queueingStrategy: X}\n---\n" +
		"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: b}\nspec: {queueingStrategy: Y}\n"
	_, err := kueue.Parse([]byte(y), kueue.Options{})
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok)
	errs := joined.Unwrap()
	require.Len(t, errs, 2)
	assert.Contains(t, errs[1].Error(), `line 6: ClusterQueue "b"`)
}

// The reference quota tree, written as v1beta2 and read back, is the same.
func TestRoundTrip(t *testing.T) {
	in := parseFile(t, "v1beta2.yaml")
	var buf bytes.Buffer
	require.NoError(t, kueue.Export(&buf, in.Spec, kueue.ExportOptions{PriorityClasses: in.PriorityClasses}))
	out, err := kueue.Parse(buf.Bytes(), kueue.Options{})
	require.NoError(t, err, buf.String())
	assert.Equal(t, in.Spec, out.Spec)
	assert.Equal(t, in.PriorityClasses, out.PriorityClasses)
	assert.Empty(t, out.Notes)

	// A tree with several flavors, root queues and implicit-free cohorts.
	w := 0.0
	th := int32(-5)
	spec := quota.Spec{
		Flavors: []string{"h100", "a100"},
		Nodes: []quota.NodeSpec{
			{Name: "root", Kind: quota.Cohort, Quotas: []quota.FlavorQuota{{Flavor: "a100", Nominal: 16}}},
			{Name: "q1", Parent: "root", Kind: quota.Queue, Weight: &w, QueueingStrategy: quota.StrictFIFO,
				Quotas:     []quota.FlavorQuota{{Flavor: "h100", Nominal: 8, BorrowingLimit: quota.LimitOf(0), LendingLimit: quota.LimitOf(4)}, {Flavor: "a100", Nominal: 0}},
				Preemption: quota.Rules{ReclaimWithinCohort: quota.ReclaimAny, BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}},
			{Name: "alone", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "h100", Nominal: 8}}},
		},
	}
	buf.Reset()
	require.NoError(t, kueue.Export(&buf, spec, kueue.ExportOptions{}))
	out, err = kueue.Parse(buf.Bytes(), kueue.Options{})
	require.NoError(t, err, buf.String())
	assert.Equal(t, spec, out.Spec)

	bad := quota.Spec{Nodes: []quota.NodeSpec{{Name: "q", Kind: quota.Queue, Parent: "nope"}}}
	require.ErrorIs(t, kueue.Export(&buf, bad, kueue.ExportOptions{}), kueue.ErrCannotExport)
}

func FuzzParse(f *testing.F) {
	for _, v := range []string{"v1alpha1", "v1beta1", "v1beta2"} {
		b, err := os.ReadFile(filepath.Join("testdata", v+".yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add([]byte(multiResource), true)
	// A quantity with a huge exponent, refused before any exact arithmetic.
	f.Add([]byte("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  resourceGroups:\n"+
		"  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: f\n      resources:\n"+
		"      - {name: nvidia.com/gpu, nominalQuota: 1e9999999}\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, resources bool) {
		if len(data) > 1<<16 {
			return
		}
		opts := kueue.Options{}
		if resources {
			opts.Resources = []string{"cpu", "memory", "example.com/nic"}
		}
		res, err := kueue.Parse(data, opts)
		if err != nil {
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				var oe *kueue.ObjectError
				if !errors.As(e, &oe) {
					t.Fatalf("untyped error %v", e)
				}
			}
			return
		}
		if _, err := quota.New(res.Spec); err != nil {
			t.Fatalf("result refused by quota.New: %v", err)
		}
		// What Export writes of it, Parse reads again.
		var buf bytes.Buffer
		if err := kueue.Export(&buf, res.Spec, kueue.ExportOptions{}); err != nil {
			return
		}
		if _, err := kueue.Parse(buf.Bytes(), opts); err != nil {
			t.Fatalf("exported spec refused: %v", err)
		}
	})
}
