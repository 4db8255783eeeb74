// Package importtest holds what the importers' tests share: a canonical
// text form of a fleet and golden-file comparison.
package importtest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetsched/fleet/topology"
)

// RenderSpec writes a fleet as text in the fleet's own order (domains in
// first-appearance order, nodes grouped under them): the level list, then
// one line per domain, indented by level, and one per node with its GPUs,
// flavor, pool and labels. It fails the test if topology.New refuses spec.
func RenderSpec(t testing.TB, spec topology.Spec) string {
	t.Helper()
	f, err := topology.New(spec)
	if err != nil {
		t.Fatalf("topology.New: %v", err)
	}
	var b strings.Builder
	nv := spec.NVLink
	if nv == "" {
		nv = spec.Levels[len(spec.Levels)-1]
	}
	gpus := 0
	for _, n := range spec.Nodes {
		gpus += n.GPUs
	}
	fmt.Fprintf(&b, "levels: %s  nvlink: %s\n", strings.Join(spec.Levels, " > "), nv)
	fmt.Fprintf(&b, "fleet: %d nodes, %d GPUs\n", len(spec.Nodes), gpus)
	var prev []string
	for id := range f.NumNodes() {
		n := f.NodeSpec(topology.NodeID(id))
		for l, d := range n.Path {
			if prev != nil && slices.Equal(prev[:l+1], n.Path[:l+1]) {
				continue
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", l), d)
		}
		prev = n.Path
		line := fmt.Sprintf("%s%s  %d %s", strings.Repeat("  ", len(n.Path)), n.Name, n.GPUs, n.Flavor)
		if n.Pool != "" {
			line += " pool=" + n.Pool
		}
		for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
			line += fmt.Sprintf(" %s=%s", k, n.Labels[k])
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// Golden compares got with the file testdata/<name>, or rewrites the file
// when update is set.
func Golden(t testing.TB, name, got string, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n--- got\n%s", path, got)
	}
}
