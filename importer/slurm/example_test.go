package slurm_test

import (
	"fmt"
	"os"

	"github.com/fleetsched/fleet/importer/slurm"
	"github.com/fleetsched/fleet/topology"
)

func ExampleExpandHostlist() {
	hosts, _ := slurm.ExpandHostlist("rack[1-2]-gpu[08-09],n[1-010]x")
	fmt.Println(len(hosts), hosts[:5])
	// Output: 14 [rack1-gpu08 rack1-gpu09 rack2-gpu08 rack2-gpu09 n1x]
}

func ExampleParseConf() {
	conf := `
SwitchName=s0 Nodes=dev[0-1]
SwitchName=s1 Nodes=dev[2-3]
SwitchName=s2 Nodes=dev4
SwitchName=s3 Switches=s[0-1]
`
	res, err := slurm.ParseConf([]byte(conf), slurm.Options{GPUsPerNode: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range res.Warnings {
		fmt.Println(w)
	}
	f, _ := topology.New(res.Spec)
	_ = f.Render(os.Stdout)
	// Output:
	// warning disjoint: no switch reaches every node; top switches: s2, s3
	// warning padded: line 4: "s2": height 0 padded up to 1
	// s3
	//   s0  88
	//   s1  88
	// s2~pad1
	//   s2  8
	// free 40/40 GPUs, 5 whole nodes free, stranded 0 (0.0%)
}

func ExampleWriteConf() {
	spec := topology.Uniform(topology.UniformSpec{
		Levels: []string{"spine", "leaf", "node"}, Fanout: []int{1, 2, 4}, GPUsPerNode: 8,
	})
	_ = slurm.WriteConf(os.Stdout, spec)
	// Output:
	// # 8 nodes; levels spine > leaf > node
	// SwitchName=leaf-0-0 Nodes=node-0-0-[0-3]
	// SwitchName=leaf-0-1 Nodes=node-0-1-[0-3]
	// SwitchName=spine-0 Switches=leaf-0-[0-1]
}
