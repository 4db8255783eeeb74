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
//
// With -trace DIR it runs the study's own protocol on the trace itself
// (openb_node_list_all_node.csv and openb_pod_list_default.csv in DIR,
// from the alibaba/clusterdata repository, cluster-trace-gpu-v2023; its
// licence allows research use, so the files are not part of this
// module): seeds 42 on, each pod list shuffled and topped up by sampling
// to 130% requested, cpu and memory enforced, GPU models as flavors
// (-onegroup: one group, models ignored), on the pod list or a held-out
// variant derived from it (-variant gpuspec, multigpu). It prints the allocation at
// 100-130% per seed and averaged, and the refusals a scan of every node
// finds room for.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fleetsched/fleet/internal/packing"
	"github.com/fleetsched/fleet/placement"
)

func main() {
	seeds := flag.Int("seeds", 2, "seeds per mix (1, 2, ...)")
	trace := flag.String("trace", "", "folder of the openb trace's CSV files: run the study's protocol on it")
	traceSeeds := flag.Int("trace-seeds", 10, "with -trace: seeds from 42 on")
	oneGroup := flag.Bool("onegroup", false, "with -trace: one group of nodes, GPU models ignored")
	plain := flag.Bool("plain", false, "with -trace: best fit, without the Fragmentation ranker")
	variant := flag.String("variant", "default", "with -trace: the pod list as read (default), or a held-out variant derived from it: gpuspec (a third of the GPU pods bound to one model), multigpu (multi-GPU pods repeated to 30% of the GPUs asked)")
	flag.Parse()
	var err error
	if *trace != "" {
		err = runTrace(os.Stdout, *trace, *variant, *traceSeeds, *oneGroup, *plain)
	} else {
		err = run(os.Stdout, *seeds)
	}
	if err != nil {
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

// runTrace runs the study's protocol on the openb trace in dir, on the
// pod list's variant.
func runTrace(out io.Writer, dir, variant string, seeds int, oneGroup, plain bool) error {
	if oneGroup && variant == "gpuspec" {
		return fmt.Errorf("-variant gpuspec binds pods to models: not with -onegroup")
	}
	spec, pods, err := packing.ReadOpenb(dir, oneGroup)
	if err != nil {
		return err
	}
	if pods, err = packing.OpenbVariant(spec, pods, variant); err != nil {
		return err
	}
	fmt.Fprintf(out, "openb (%s): %d nodes, %d pods; allocated share of GPU capacity at each requested share\n", variant, len(spec.Nodes), len(pods))
	fmt.Fprintf(out, "%-9s", "seed")
	for _, l := range packing.Levels() {
		fmt.Fprintf(out, " %6.0f%%", 100*l)
	}
	fmt.Fprintln(out, "   refused  false: share whole cpu-only")
	mean := make([]float64, len(packing.Levels()))
	for seed := uint64(42); seed < 42+uint64(seeds); seed++ {
		p := packing.NewFleetPolicyWith(placement.Options{}, plain)
		r, err := packing.RunProtocol(spec, pods, p, seed)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-9d", seed)
		for i, a := range r.Allocated {
			fmt.Fprintf(out, " %6.2f%%", a)
			mean[i] += a / float64(seeds)
		}
		fmt.Fprintf(out, " %9d  %12d %5d %8d\n", r.NoFits, r.FalseShare, r.FalseWhole, r.FalseCPUOnly)
	}
	fmt.Fprintf(out, "%-9s", "mean")
	for _, a := range mean {
		fmt.Fprintf(out, " %6.2f%%", a)
	}
	fmt.Fprintln(out)
	return nil
}
