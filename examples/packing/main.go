// Command packing replays GPU-sharing workload mixes on a heterogeneous
// fleet under the protocol of the fragmentation study of USENIX ATC'23:
// pods arrive one by one and never finish until 130% of the fleet's GPU
// capacity is requested. It prints, for each mix and seed, the share of
// GPU capacity allocated at 100-130% requested under the fleet's
// built-in policy (the Placer with placement.Fragmentation) and the
// BestFit, FirstFit and Random baselines, all on the same arrivals.
//
// The fleet has the node kinds and counts of the study's public node list
// (Alibaba cluster-trace-gpu-v2023); the pods are synthetic, drawn with
// the proportions of its pod list and of the study's variants of it (see
// internal/packing).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fleetsched/fleet/internal/packing"
)

func main() {
	seeds := flag.Int("seeds", 2, "seeds per mix (1, 2, ...)")
	flag.Parse()
	if err := run(os.Stdout, *seeds); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(out io.Writer, seeds int) error {
	fmt.Fprintln(out, "allocated share of GPU capacity at each requested share")
	for _, m := range packing.Mixes() {
		for seed := 1; seed <= seeds; seed++ {
			rows, err := packing.Compare(m, uint64(seed), 20000)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "\nmix %s, seed %d\n%s", m.Name, seed, packing.Table(rows))
		}
	}
	return nil
}
