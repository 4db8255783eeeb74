package k8s_test

import (
	"fmt"

	"github.com/fleetsched/fleet/importer/k8s"
)

func ExampleImport() {
	nodes, _ := k8s.ParseNodes([]byte(`
- {name: n1, gpus: 8, labels: {cloud.google.com/gce-topology-block: b1, cloud.google.com/gce-topology-subblock: s1, cloud.google.com/gce-topology-host: h1}}
- {name: n2, gpus: 8, labels: {cloud.google.com/gce-topology-block: b2, cloud.google.com/gce-topology-subblock: s1, cloud.google.com/gce-topology-host: h1}}
`), "")
	res, err := k8s.Import(nodes, k8s.GKE())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Spec.Levels)
	for _, n := range res.Spec.Nodes {
		fmt.Println(n.Name, n.Path)
	}
	// Output:
	// [block subblock host node]
	// n1 [b1 b1/s1 b1/s1/h1]
	// n2 [b2 b2/s1 b2/s1/h1]
}
