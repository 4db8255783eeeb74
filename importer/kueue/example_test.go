package kueue_test

import (
	"fmt"

	"github.com/fleetsched/fleet/importer/kueue"
)

func ExampleParse() {
	res, err := kueue.Parse([]byte(`
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohort: gpus
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: 96}
      - {name: nvidia.com/gpu, nominalQuota: 16, borrowingLimit: 8}
`), kueue.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range res.Spec.Nodes {
		fmt.Println(n.Kind, n.Name, n.Parent, n.Quotas)
	}
	for _, n := range res.Notes {
		fmt.Println(n)
	}
	// Output:
	// queue team-a gpus [{h100 16 8 none []}]
	// cohort gpus  []
	// note: line 2: ClusterQueue "team-a": resource cpu of flavor h100 not modelled (nominal 96)
	// note: line 2: Cohort "gpus": implicit cohort: referenced, no Cohort object
	// note: ResourceFlavor "h100": referenced by quotas, no ResourceFlavor object
}
