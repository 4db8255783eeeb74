// Command policy shows what a GPU council reviews before a quota change:
// the published quota policy read from Kueue objects, the fleet read from
// a Slurm topology file or a Kubernetes node list, and every problem
// between the two (guarantees above the fleet's capacity, a flavor with no
// nodes, a cohort cycle), each with its file and object.
//
//	go run ./examples/policy                         # the bundled example
//	go run ./examples/policy -kueue queues.yaml -topology topology.conf
//	go run ./examples/policy -kueue q.yaml -topology nodes.yaml -preset gke
//
// Flags:
//
//	-kueue FILE       Kueue ClusterQueue/Cohort/ResourceFlavor YAML
//	-topology FILE    topology.conf, topology.yaml, or a node list (YAML/JSON)
//	-format F         auto (default), slurm or k8s
//	-preset P         k8s label preset: gke (default), aws, topograph
//	-gpus N           GPUs per Slurm node (default 8)
//	-gpu-flavor F     flavor of Slurm nodes (default h100)
//	-fail             exit 1 when there are problems
package main

import (
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fleetsched/fleet/importer/k8s"
	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/importer/slurm"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

//go:embed testdata/kueue.yaml testdata/topology.conf
var bundled embed.FS

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kueueFile := fs.String("kueue", "", "Kueue objects (YAML)")
	topoFile := fs.String("topology", "", "topology.conf, topology.yaml or a Kubernetes node list")
	format := fs.String("format", "auto", "topology format: auto, slurm or k8s")
	preset := fs.String("preset", "gke", "k8s label preset: gke, aws or topograph")
	gpus := fs.Int("gpus", 8, "GPUs per Slurm node")
	gpuFlavor := fs.String("gpu-flavor", "h100", "flavor of Slurm nodes")
	fail := fs.Bool("fail", false, "exit 1 when there are problems")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	kName, kData, err := load(*kueueFile, "testdata/kueue.yaml")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	tName, tData, err := load(*topoFile, "testdata/topology.conf")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}

	var problems []string
	problem := func(file, format string, args ...any) {
		problems = append(problems, file+": "+fmt.Sprintf(format, args...))
	}

	// Quota.
	res, kerr := kueue.Parse(kData, kueue.Options{})
	if kerr != nil {
		for _, e := range unjoin(kerr) {
			problem(kName, "%v", e)
		}
	}

	// Fleet.
	var labelKeys []string
	if res != nil {
		for _, f := range res.Flavors {
			for k := range f.NodeLabels {
				if !slices.Contains(labelKeys, k) {
					labelKeys = append(labelKeys, k)
				}
			}
		}
		slices.Sort(labelKeys)
	}
	spec, warnings, terr := loadFleet(tData, *format, *preset, *gpus, *gpuFlavor, labelKeys)
	for _, w := range warnings {
		problem(tName, "%s", w)
	}
	if terr != nil {
		problem(tName, "%v", terr)
	}
	var fleet *topology.Fleet
	if terr == nil {
		if fleet, terr = topology.New(spec); terr != nil {
			problem(tName, "%v", terr)
		}
	}

	// Capacity per quota flavor: nodes of that flavor name, or matching
	// the ResourceFlavor's node labels.
	var tree *quota.Tree
	if res != nil {
		var qerr error
		if tree, qerr = quota.New(res.Spec); qerr != nil {
			problem(kName, "%v", qerr)
		}
	}
	var capacity map[string]int64
	if tree != nil && fleet != nil {
		capacity = map[string]int64{}
		for _, f := range tree.Flavors() {
			var labels map[string]string
			for _, rf := range res.Flavors {
				if rf.Name == f {
					labels = rf.NodeLabels
				}
			}
			for _, n := range spec.Nodes {
				if n.Flavor == f || (len(labels) > 0 && matches(n.Labels, labels)) {
					capacity[f] += int64(n.GPUs)
				}
			}
			if capacity[f] == 0 {
				problem(kName, "line %d: ResourceFlavor %q: no node of %s has this flavor%s",
					res.Lines["ResourceFlavor/"+f], f, tName, labelText(labels))
			}
		}
		var ce *quota.CapacityError
		if err := tree.ValidateCapacity(capacity); errors.As(err, &ce) {
			for _, o := range ce.Over {
				problem(kName, "flavor %q: guarantees %d GPUs, the fleet has %d; nominal quota held by %s",
					o.Flavor, o.Guaranteed, o.Capacity, holders(res, o.Flavor))
			}
		}
	}

	if tree != nil {
		fmt.Fprintf(stdout, "## Policy (%s)\n\n", kName)
		_ = tree.RenderCapacity(stdout, capacity)
		fmt.Fprintln(stdout)
	}
	if fleet != nil {
		fmt.Fprintf(stdout, "## Fleet (%s): levels %s\n\n", tName, strings.Join(spec.Levels, " > "))
		_ = fleet.Render(stdout)
		fmt.Fprintln(stdout)
	}
	if res != nil && len(res.Notes) > 0 {
		fmt.Fprintf(stdout, "## Not modelled (%s)\n\n", kName)
		for _, n := range res.Notes {
			fmt.Fprintf(stdout, "- %s\n", n)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "## Problems: %d\n\n", len(problems))
	for _, p := range problems {
		fmt.Fprintf(stdout, "- %s\n", p)
	}
	if len(problems) > 0 && *fail {
		return 1
	}
	return 0
}

// load reads path, or the bundled file when path is empty.
func load(path, bundledName string) (string, []byte, error) {
	if path == "" {
		b, err := bundled.ReadFile(bundledName)
		return "examples/policy/" + bundledName, b, err
	}
	b, err := os.ReadFile(path)
	return filepath.Base(path), b, err
}

func loadFleet(data []byte, format, preset string, gpus int, flavor string, keep []string) (topology.Spec, []string, error) {
	if format == "auto" {
		format = "slurm"
		t := strings.TrimSpace(string(data))
		if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") || strings.Contains(t, "\nitems:") ||
			strings.Contains(t, "labels:") || strings.Contains(t, "\"labels\"") {
			format = "k8s"
		}
	}
	var warnings []string
	switch format {
	case "slurm":
		res, err := slurm.Parse(data, slurm.Options{GPUsPerNode: gpus, Flavor: flavor})
		if err != nil {
			return topology.Spec{}, nil, err
		}
		for _, w := range res.Warnings {
			warnings = append(warnings, w.String())
		}
		return res.Spec, warnings, nil
	case "k8s":
		nodes, err := k8s.ParseNodes(data, "")
		if err != nil {
			return topology.Spec{}, nil, err
		}
		opts, err := k8s.Preset(preset, nodes)
		if err != nil {
			return topology.Spec{}, nil, err
		}
		opts.KeepLabels = keep
		res, err := k8s.Import(nodes, opts)
		if err != nil {
			return topology.Spec{}, nil, err
		}
		for _, w := range res.Warnings {
			warnings = append(warnings, w.String())
		}
		return res.Spec, warnings, nil
	}
	return topology.Spec{}, nil, fmt.Errorf("unknown format %q", format)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func labelText(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	var parts []string
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return " or its node labels " + strings.Join(parts, ",")
}

// holders lists the objects holding nominal quota of a flavor, with lines.
func holders(res *kueue.Result, flavor string) string {
	var out []string
	for _, n := range res.Spec.Nodes {
		for _, q := range n.Quotas {
			if q.Flavor == flavor && q.Nominal > 0 {
				kind := "ClusterQueue"
				if n.Kind == quota.Cohort {
					kind = "Cohort"
				}
				out = append(out, fmt.Sprintf("%s %q (line %d, %d)", kind, n.Name, res.Lines[kind+"/"+n.Name], q.Nominal))
			}
		}
	}
	return strings.Join(out, ", ")
}
