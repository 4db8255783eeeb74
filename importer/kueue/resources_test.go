package kueue_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/quota"
)

const multiResource = `apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: org
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu", "example.com/nic"]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: 1500m, borrowingLimit: "64"}
      - {name: memory, nominalQuota: 2Ti, lendingLimit: 1Ti}
      - {name: nvidia.com/gpu, nominalQuota: 64}
      - {name: example.com/nic, nominalQuota: 8}
    - name: a100
      resources:
      - {name: cpu, nominalQuota: 96}
      - {name: memory, nominalQuota: 512Gi}
      - {name: nvidia.com/gpu, nominalQuota: 16}
      - {name: example.com/nic, nominalQuota: 0}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: org
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: cpu-nodes
      resources:
      - {name: cpu, nominalQuota: 256}
      - {name: memory, nominalQuota: 1Ti}
`

// Quotas of cpu, memory and extended resources of a resource group
// become quota.ResourceQuota entries in fleet units beside the GPU
// quota; a group without GPUs gives its flavors 0 GPUs; resources not
// asked for stay notes.
func TestParseResourceGroups(t *testing.T) {
	const gi, ti = int64(1) << 30, int64(1) << 40
	cases := []struct {
		name      string
		resources []string
		want      map[string][]quota.FlavorQuota // queue -> quotas
		spec      []string                       // Spec.Resources
		notes     int                            // "not modelled" resource notes
	}{
		{
			name: "GPUs only", want: map[string][]quota.FlavorQuota{"team-a": {{Flavor: "h100", Nominal: 64}, {Flavor: "a100", Nominal: 16}}, "team-b": nil},
			notes: 8,
		},
		{
			name: "cpu and memory", resources: []string{"cpu", "memory"}, spec: []string{"cpu", "memory"},
			want: map[string][]quota.FlavorQuota{"team-a": {
				{Flavor: "h100", Nominal: 64, Resources: []quota.ResourceQuota{
					{Name: "cpu", Nominal: 1500, BorrowingLimit: quota.LimitOf(64000)},
					{Name: "memory", Nominal: 2 * ti, LendingLimit: quota.LimitOf(ti)}}},
				{Flavor: "a100", Nominal: 16, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 96000}, {Name: "memory", Nominal: 512 * gi}}},
			}, "team-b": {
				{Flavor: "cpu-nodes", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 256000}, {Name: "memory", Nominal: ti}}},
			}},
			notes: 2,
		},
		{
			name: "an extended resource", resources: []string{"example.com/nic"}, spec: []string{"example.com/nic"},
			want: map[string][]quota.FlavorQuota{"team-a": {
				{Flavor: "h100", Nominal: 64, Resources: []quota.ResourceQuota{{Name: "example.com/nic", Nominal: 8}}},
				{Flavor: "a100", Nominal: 16, Resources: []quota.ResourceQuota{{Name: "example.com/nic", Nominal: 0}}},
			}, "team-b": nil},
			notes: 6,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := kueue.Parse([]byte(multiResource), kueue.Options{Resources: c.resources})
			require.NoError(t, err)
			got := map[string][]quota.FlavorQuota{}
			for _, n := range res.Spec.Nodes {
				if n.Kind == quota.Queue {
					got[n.Name] = n.Quotas
				}
			}
			require.Equal(t, c.want, got)
			require.Equal(t, c.spec, res.Spec.Resources)
			notes := 0
			for _, n := range res.Notes {
				if len(n.Detail) > 9 && n.Detail[:9] == "resource " {
					notes++
				}
			}
			require.Equal(t, c.notes, notes)
			_, err = quota.New(res.Spec)
			require.NoError(t, err)
		})
	}
}

// Bad quotas of modelled resources and bad options are typed errors.
func TestParseResourceGroupsRefused(t *testing.T) {
	cq := func(cpu string) string {
		return "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  resourceGroups:\n" +
			"  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n" +
			"      - {name: cpu, nominalQuota: " + cpu + "}\n      - {name: nvidia.com/gpu, nominalQuota: 8}\n"
	}
	cases := []struct {
		name  string
		input string
		opts  kueue.Options
		err   error
	}{
		{"negative cpu", cq(`"-1"`), kueue.Options{Resources: []string{"cpu"}}, kueue.ErrQuantity},
		{"cpu beyond quota's bound", cq(`"2e12"`), kueue.Options{Resources: []string{"cpu"}}, kueue.ErrQuantity},
		{"not a quantity", cq("lots"), kueue.Options{Resources: []string{"cpu"}}, kueue.ErrQuantity},
		{"a bad quantity not asked for is a note", cq(`"-1"`), kueue.Options{}, nil},
		{"empty name", cq("1"), kueue.Options{Resources: []string{""}}, kueue.ErrInvalidOption},
		{"repeated name", cq("1"), kueue.Options{Resources: []string{"cpu", "cpu"}}, kueue.ErrInvalidOption},
		{"the GPU resource", cq("1"), kueue.Options{Resources: []string{"nvidia.com/gpu"}}, kueue.ErrInvalidOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := kueue.Parse([]byte(c.input), c.opts)
			if c.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, c.err)
			var oe *kueue.ObjectError
			require.ErrorAs(t, err, &oe)
		})
	}
}

// The reference configuration read with cpu and memory: quota.New takes
// it, and the batch queue's CPU-only group is a flavor of 0 GPUs.
func TestParseTestdataWithResources(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "v1beta2.yaml"))
	require.NoError(t, err)
	res, err := kueue.Parse(b, kueue.Options{Resources: []string{"cpu", "memory"}})
	require.NoError(t, err)
	_, err = quota.New(res.Spec)
	require.NoError(t, err)
	require.Equal(t, []string{"cpu", "memory"}, res.Spec.Resources)
	var batch []quota.FlavorQuota
	for _, n := range res.Spec.Nodes {
		if n.Name == "batch" {
			batch = n.Quotas
		}
	}
	require.Contains(t, batch, quota.FlavorQuota{Flavor: "default-flavor", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 512000}}})
}

// Export writes resource quotas in one group with the GPU, and Parse reads
// them back; a flavor's missing resource comes back as 0, not borrowed.
func TestExportResourcesRoundTrip(t *testing.T) {
	spec := quota.Spec{Flavors: []string{"h100", "cpu-nodes"}, Resources: []string{"cpu", "memory", "example.com/nic"},
		Nodes: []quota.NodeSpec{
			{Name: "org", Kind: quota.Cohort},
			{Name: "a", Kind: quota.Queue, Parent: "org", Quotas: []quota.FlavorQuota{
				{Flavor: "h100", Nominal: 64, LendingLimit: quota.LimitOf(32), Resources: []quota.ResourceQuota{
					{Name: "cpu", Nominal: 1500, BorrowingLimit: quota.LimitOf(64000)}, {Name: "memory", Nominal: 1 << 40}}},
				{Flavor: "cpu-nodes", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 256000}}},
			}},
			{Name: "b", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "h100", Nominal: 8}}},
		}}
	var buf bytes.Buffer
	require.NoError(t, kueue.Export(&buf, spec, kueue.ExportOptions{}))
	res, err := kueue.Parse(buf.Bytes(), kueue.Options{Resources: []string{"cpu", "memory", "example.com/nic"}})
	require.NoError(t, err)
	want := map[string][]quota.FlavorQuota{
		"org": nil,
		"a": {
			{Flavor: "h100", Nominal: 64, LendingLimit: quota.LimitOf(32), Resources: []quota.ResourceQuota{
				{Name: "cpu", Nominal: 1500, BorrowingLimit: quota.LimitOf(64000)}, {Name: "memory", Nominal: 1 << 40}}},
			{Flavor: "cpu-nodes", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 256000}, {Name: "memory", BorrowingLimit: quota.LimitOf(0)}}},
		},
		"b": {{Flavor: "h100", Nominal: 8}},
	}
	got := map[string][]quota.FlavorQuota{}
	for _, n := range res.Spec.Nodes {
		got[n.Name] = n.Quotas
	}
	require.Equal(t, want, got)
	require.Equal(t, []string{"cpu", "memory"}, res.Spec.Resources, "no quota names the nic")
	require.Contains(t, buf.String(), "1500m")
}
