package kueue_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/quota"
)

// A ClusterQueue whose GPUs and cpu/memory sit in different resource
// groups, each with its flavors in order.
const splitGroupsYAML = `apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: {gpu.nvidia.com/model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {gpu.nvidia.com/model: A100}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
spec: {nodeLabels: {instance: spot}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  cohortName: all
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: MayStopSearch}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 8}]
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
  - coveredResources: [cpu, memory]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "64"}, {name: memory, nominalQuota: 256Gi}]
    - name: spot
      resources: [{name: cpu, nominalQuota: "32", lendingLimit: "16"}, {name: memory, nominalQuota: 128Gi}]
`

func TestParseReadsResourceGroupsWithTheirFlavorsInOrder(t *testing.T) {
	res, err := kueue.Parse([]byte(splitGroupsYAML), kueue.Options{Resources: []string{"cpu", "memory"}})
	require.NoError(t, err)
	var q quota.NodeSpec
	for _, n := range res.Spec.Nodes {
		if n.Name == "research" {
			q = n
		}
	}
	assert.Equal(t, []quota.ResourceGroup{
		{GPUs: true, Flavors: []string{"h100", "a100"}},
		{Resources: []string{"cpu", "memory"}, Flavors: []string{"default", "spot"}},
	}, q.ResourceGroups)
	assert.Equal(t, []string{"h100", "a100", "default", "spot"}, res.Spec.Flavors, "cpu flavors are quota flavors too")
	assert.Equal(t, quota.Fungibility{WhenCanBorrow: quota.TryNextFlavor, WhenCanPreempt: quota.Preempt}, q.FlavorFungibility)
	assert.Equal(t, int64(64000), q.Quotas[2].Resources[0].Nominal, "cpu in millicores")
	assert.Zero(t, q.Quotas[2].Nominal, "a cpu flavor has no GPUs")

	tree, err := quota.New(res.Spec)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, kueue.Export(&out, tree.Spec(), kueue.ExportOptions{}))
	back, err := kueue.Parse(out.Bytes(), kueue.Options{Resources: []string{"cpu", "memory"}})
	require.NoError(t, err)
	assert.Equal(t, tree.Spec().Nodes, back.Spec.Nodes, "Export writes the groups back")
	assert.Contains(t, out.String(), "whenCanPreempt: MayStopSearch")

	// The assigner on the imported tree: a launcher takes cpu of
	// "default" only, the workers GPUs of h100 and cpu of "default".
	rq, _ := tree.Node("research")
	cpu, _ := tree.Resource("cpu")
	a := tree.Assign(rq, []quota.PodSetRequest{
		{Resources: []quota.Amount{{Resource: cpu, Value: 2000}}},
		{MilliGPUs: 8000, Resources: []quota.Amount{{Resource: cpu, Value: 32000}}},
	}, quota.AssignOptions{})
	h100, _ := tree.Flavor("h100")
	def, _ := tree.Flavor("default")
	assert.Equal(t, quota.AssignFit, a.Mode)
	assert.Equal(t, []quota.Charge{{Flavor: h100, Resource: quota.GPU, Value: 8000}, {Flavor: def, Resource: cpu, Value: 34000}}, a.Charges)
}

func TestParseKeepsOneGroupImplicit(t *testing.T) {
	const one = `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}, {name: cpu, nominalQuota: 64}]
  - coveredResources: [memory]
    flavors:
    - name: default
      resources: [{name: memory, nominalQuota: 1Gi}]
`
	res, err := kueue.Parse([]byte(one), kueue.Options{Resources: []string{"cpu"}})
	require.NoError(t, err)
	assert.Nil(t, res.Spec.Nodes[0].ResourceGroups, "memory is not modelled: one group is left, the implicit one")
	res, err = kueue.Parse([]byte(one), kueue.Options{Resources: []string{"cpu", "memory"}})
	require.NoError(t, err)
	assert.Len(t, res.Spec.Nodes[0].ResourceGroups, 2)
}
