package slurm_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/internal/importtest"
	"github.com/fleetsched/fleet/importer/slurm"
	"github.com/fleetsched/fleet/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func render(t *testing.T, res *slurm.Result) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(importtest.RenderSpec(t, res.Spec))
	for _, w := range res.Warnings {
		b.WriteString(w.String() + "\n")
	}
	for _, n := range res.Notes {
		b.WriteString("note: " + n.String() + "\n")
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	tests := []struct {
		file, golden string
		opts         slurm.Options
	}{
		{"tree2048.conf", "tree2048.golden", slurm.Options{}},
		{"block_nvl72.conf", "block_nvl72.golden", slurm.Options{GPUsPerNode: 4, Flavor: "GB200"}},
		{"fattree.conf", "fattree.golden", slurm.Options{}},
		{"aws_sim.conf", "aws_sim.golden", slurm.Options{GPUs: map[string]int{"node13": 4, "node23": 4}}},
		{"topology.yaml", "topology_topo1.golden", slurm.Options{}},
		{"topology.yaml", "topology_topo2.golden", slurm.Options{Topology: "topo2"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			res, err := slurm.Parse(read(t, tt.file), tt.opts)
			require.NoError(t, err)
			importtest.Golden(t, tt.golden, render(t, res), *update)
		})
	}
}

func TestTree2048(t *testing.T) {
	res, err := slurm.ParseConf(read(t, "tree2048.conf"), slurm.Options{})
	require.NoError(t, err)
	f, err := topology.New(res.Spec)
	require.NoError(t, err)
	assert.Equal(t, 2048, f.Stats(topology.Root, topology.AllGroups).GPUs)
	assert.Equal(t, []string{"core", "spine", "leaf", "node"}, res.Spec.Levels)
	assert.Empty(t, res.Warnings)
	require.Len(t, res.Notes, 1)
	assert.Equal(t, slurm.WarnIgnoredField, res.Notes[0].Kind)
	assert.Equal(t, uint32(400), res.LinkSpeeds["leaf07"])
	assert.Equal(t, uint32(3200), res.LinkSpeeds["spine3"])
	assert.Equal(t, "default", res.Topology)
}

// Each DAG case of a tree file has a documented policy: a typed warning by
// default, the matching error with Strict.
func TestTreePolicies(t *testing.T) {
	tests := []struct {
		name     string
		conf     string
		opts     slurm.Options
		warnings []slurm.WarningKind
		strict   error // nil: Strict changes nothing
		paths    map[string][]string
	}{
		{
			name:     "multi-parent switch stays under its first parent",
			conf:     "SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n[3-4]\nSwitchName=p Switches=a,b\nSwitchName=q Switches=b\n",
			warnings: []slurm.WarningKind{slurm.WarnMultiParent, slurm.WarnEmptySwitch},
			strict:   slurm.ErrMultiParent,
			paths:    map[string][]string{"n3": {"p", "b"}},
		},
		{
			name:     "multi-homed node stays under its first leaf",
			conf:     "SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n[2-3]\n",
			warnings: []slurm.WarningKind{slurm.WarnMultiHomed, slurm.WarnDisjoint},
			strict:   slurm.ErrMultiHomed,
			paths:    map[string][]string{"n2": {"a"}, "n3": {"b"}},
		},
		{
			name:     "unbalanced branch is padded",
			conf:     "SwitchName=a Nodes=n1\nSwitchName=b Nodes=n2\nSwitchName=m Switches=a\nSwitchName=top Switches=m,b\n",
			warnings: []slurm.WarningKind{slurm.WarnPadded},
			strict:   slurm.ErrUnbalanced,
			paths:    map[string][]string{"n1": {"top", "m", "a"}, "n2": {"top", "b~pad1", "b"}},
		},
		{
			name:     "short root is padded to the top",
			conf:     "SwitchName=a Nodes=n1\nSwitchName=b Nodes=n2\nSwitchName=top Switches=a\n",
			warnings: []slurm.WarningKind{slurm.WarnDisjoint, slurm.WarnPadded},
			strict:   slurm.ErrUnbalanced,
			paths:    map[string][]string{"n1": {"top", "a"}, "n2": {"b~pad1", "b"}},
		},
		{
			name:     "empty leaf switch has no domain",
			conf:     "SwitchName=a Nodes=n1\nSwitchName=e\nSwitchName=top Switches=a,e\n",
			warnings: []slurm.WarningKind{slurm.WarnEmptySwitch},
			paths:    map[string][]string{"n1": {"top", "a"}},
		},
		{
			name:     "uncovered and unknown nodes",
			conf:     "SwitchName=a Nodes=n[1-3]\n",
			opts:     slurm.Options{Nodes: []string{"n1", "n2", "n9"}},
			warnings: []slurm.WarningKind{slurm.WarnUnknownNode, slurm.WarnUncovered},
			strict:   slurm.ErrUnknownNode,
			paths:    map[string][]string{"n1": {"a"}, "n9": {"~unswitched"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := slurm.ParseConf([]byte(tt.conf), tt.opts)
			require.NoError(t, err)
			var kinds []slurm.WarningKind
			for _, w := range res.Warnings {
				kinds = append(kinds, w.Kind)
			}
			assert.Equal(t, tt.warnings, kinds)
			for _, n := range res.Spec.Nodes {
				if want, ok := tt.paths[n.Name]; ok {
					assert.Equal(t, want, n.Path, n.Name)
				}
			}
			opts := tt.opts
			opts.Strict = true
			_, err = slurm.ParseConf([]byte(tt.conf), opts)
			if tt.strict == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.strict)
			var pe *slurm.ParseError
			require.ErrorAs(t, err, &pe)
			assert.NotEmpty(t, pe.Name)
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want error
		line int
	}{
		{"duplicate switch", "SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n", slurm.ErrDuplicate, 2},
		{"no name", "SwitchName= Nodes=n1\n", slurm.ErrNoName, 1},
		{"long name", "SwitchName=" + strings.Repeat("x", 65) + " Nodes=n1\n", slurm.ErrNameTooLong, 1},
		{"nodes and switches", "SwitchName=a Nodes=n1\nSwitchName=b Nodes=n2 Switches=a\n", slurm.ErrMixed, 2},
		{"unknown child", "SwitchName=a Switches=zz\n", slurm.ErrUnknownSwitch, 1},
		{"self child", "\nSwitchName=a Switches=a\n", slurm.ErrSelfChild, 2},
		{"cycle", "SwitchName=x Nodes=n1\nSwitchName=a Switches=b,x\nSwitchName=b Switches=a\n", slurm.ErrCycle, 2},
		{"bad hostlist", "SwitchName=a Nodes=n[3-1]\n", slurm.ErrHostlist, 1},
		{"unknown key", "SwitchName=a Nodes=n1 Speed=3\n", slurm.ErrUnknownKey, 1},
		{"unknown record", "# c\nNodeName=a\n", slurm.ErrUnknownKey, 2},
		{"not key=value", "SwitchName=a Nodes=n1 junk\n", slurm.ErrSyntax, 1},
		{"bad link speed", "SwitchName=a Nodes=n1 LinkSpeed=-1\n", slurm.ErrSyntax, 1},
		{"empty file", "# nothing\n", slurm.ErrEmpty, 0},
		{"only empty switches", "SwitchName=a\n", slurm.ErrNoNodes, 0},
		{"mixed plugins", "SwitchName=a Nodes=n1\nBlockName=b Nodes=n2\n", slurm.ErrMixedPlugins, 2},
		{"duplicate block", "BlockName=b Nodes=n1\nBlockName=b Nodes=n2\n", slurm.ErrDuplicate, 2},
		{"bad block size", "BlockName=b Nodes=n[1-4]\nBlockSizes=4,12\n", slurm.ErrBlockSizes, 2},
		{"decreasing block size", "BlockName=b Nodes=n[1-4]\nBlockSizes=4,16,8\n", slurm.ErrBlockSizes, 2},
		{"block size 2^16", "BlockName=b Nodes=n[1-4]\nBlockSizes=1,65536\n", slurm.ErrBlockSizes, 2},
		{"no block nodes", "BlockName=b\n", slurm.ErrNoNodes, 0},
		{"block key", "BlockName=b Switches=x\n", slurm.ErrUnknownKey, 1},
		{"continued line", "SwitchName=a \\\n  Nodes=n[1-\n", slurm.ErrHostlist, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := slurm.ParseConf([]byte(tt.conf), slurm.Options{})
			require.ErrorIs(t, err, tt.want)
			var pe *slurm.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.line, pe.Line, err.Error())
		})
	}
}

func TestBlockLevels(t *testing.T) {
	conf := "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockName=b3 Nodes=n[5-6]\nBlockLevels=0-1\n"
	res, err := slurm.ParseConf([]byte(conf), slurm.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"block-x2", "block", "node"}, res.Spec.Levels)
	assert.Equal(t, []string{"b3", "b3"}, res.Spec.Nodes[5].Path)
	assert.Equal(t, []string{"b[1-2]", "b1"}, res.Spec.Nodes[0].Path)
	require.Len(t, res.Warnings, 1)
	assert.Equal(t, slurm.WarnPartialAggregate, res.Warnings[0].Kind)

	// Without BlockSizes: 2^0..2^4, only as far as needed, silently.
	res, err = slurm.ParseConf([]byte("BlockName=b1 Nodes=n1\nBlockName=b2 Nodes=n2\n"), slurm.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"block-x2", "block", "node"}, res.Spec.Levels)
	assert.Empty(t, res.Warnings)
}

func TestYAMLErrors(t *testing.T) {
	tests := []struct {
		name, yaml, pick string
		want             error
	}{
		{"unknown topology", "- topology: a\n  tree:\n    switches:\n      - switch: s\n        nodes: n1\n", "b", slurm.ErrNoTopology},
		{"no default", "- topology: a\n  flat: true\n- topology: b\n  flat: true\n", "", slurm.ErrNoTopology},
		{"ring", "- topology: r\n  ring:\n    rings:\n      - ring: r1\n        nodes: n[1-4]\n", "", slurm.ErrUnsupported},
		{"two kinds", "- topology: a\n  flat: true\n  block:\n    blocks: []\n", "", slurm.ErrSyntax},
		{"unknown field", "- topology: a\n  tree:\n    switches:\n      - switch: s\n        node: n1\n", "", slurm.ErrSyntax},
		{"duplicate", "- topology: a\n  flat: true\n- topology: a\n  flat: true\n", "a", slurm.ErrDuplicate},
		{"bad hostlist", "- topology: a\n  block:\n    blocks:\n      - block: b\n        nodes: n[1-\n", "", slurm.ErrHostlist},
		{"bad sizes", "- topology: a\n  block:\n    block_sizes: [0]\n    blocks:\n      - block: b\n        nodes: n1\n", "", slurm.ErrBlockSizes},
		{"not a list", "topology: a\n", "", slurm.ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := slurm.ParseYAML([]byte(tt.yaml), slurm.Options{Topology: tt.pick})
			require.ErrorIs(t, err, tt.want)
			var pe *slurm.ParseError
			require.ErrorAs(t, err, &pe)
		})
	}
}

// The reference fleet written as topology.conf reads back as the same fleet.
func TestRoundTripReference(t *testing.T) {
	ref := topology.Reference()
	var buf bytes.Buffer
	require.NoError(t, slurm.WriteConf(&buf, ref))
	assert.Contains(t, buf.String(), "SwitchName=leaf-0-0 Nodes=node-0-0-[0-7]\n")
	assert.Contains(t, buf.String(), "SwitchName=spine-3 Switches=leaf-3-[0-7]\n")
	res, err := slurm.ParseConf(buf.Bytes(), slurm.Options{})
	require.NoError(t, err)
	require.Len(t, res.Warnings, 1) // four spines and no core switch above them
	assert.Equal(t, slurm.WarnDisjoint, res.Warnings[0].Kind)
	assert.Equal(t, ref, res.Spec)

	// And the 2,048-GPU file survives a write and a read too.
	in, err := slurm.ParseConf(read(t, "tree2048.conf"), slurm.Options{})
	require.NoError(t, err)
	buf.Reset()
	require.NoError(t, slurm.WriteConf(&buf, in.Spec))
	out, err := slurm.ParseConf(buf.Bytes(), slurm.Options{})
	require.NoError(t, err)
	assert.Equal(t, in.Spec, out.Spec)
}

func TestWriteConfRefuses(t *testing.T) {
	flat := topology.Spec{Levels: []string{"node"}, Nodes: []topology.NodeSpec{{Name: "n1", GPUs: 8}}}
	require.ErrorIs(t, slurm.WriteConf(&bytes.Buffer{}, flat), slurm.ErrCannotExport)
	clash := topology.Spec{Levels: []string{"a", "b", "node"}, Nodes: []topology.NodeSpec{{Name: "n1", Path: []string{"x", "x"}, GPUs: 8}}}
	require.ErrorIs(t, slurm.WriteConf(&bytes.Buffer{}, clash), slurm.ErrCannotExport)
	space := topology.Spec{Levels: []string{"a", "node"}, Nodes: []topology.NodeSpec{{Name: "n1", Path: []string{"x y"}, GPUs: 8}}}
	require.ErrorIs(t, slurm.WriteConf(&bytes.Buffer{}, space), slurm.ErrCannotExport)
	hash := topology.Spec{Levels: []string{"a", "node"}, Nodes: []topology.NodeSpec{{Name: "n#1", Path: []string{"x"}, GPUs: 8}}}
	require.ErrorIs(t, slurm.WriteConf(&bytes.Buffer{}, hash), slurm.ErrCannotExport)
}

func TestOptionsRefused(t *testing.T) {
	_, err := slurm.ParseConf([]byte("SwitchName=a Nodes=n1\n"), slurm.Options{GPUs: map[string]int{"n1": 0}})
	require.ErrorIs(t, err, slurm.ErrInvalidOptions)
	_, err = slurm.ParseConf([]byte("SwitchName=a Nodes=n1\n"), slurm.Options{LevelNames: []string{"x", "y"}})
	require.ErrorIs(t, err, slurm.ErrInvalidOptions)
}

func checkParseErr(t *testing.T, err error) {
	if err == nil {
		return
	}
	var pe *slurm.ParseError
	var se *topology.SpecError
	if !errors.As(err, &pe) && !errors.As(err, &se) {
		t.Fatalf("untyped error: %v", err)
	}
	if pe != nil && pe.Line == 0 && pe.Name == "" && !errors.Is(err, slurm.ErrEmpty) && !errors.Is(err, slurm.ErrNoNodes) {
		t.Fatalf("error without a line or name: %v", err)
	}
}

func FuzzParseConf(f *testing.F) {
	for _, name := range []string{"tree2048.conf", "block_nvl72.conf", "fattree.conf", "aws_sim.conf"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Add([]byte("SwitchName=a Switches=b\nSwitchName=b Switches=a\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		if len(data) > 1<<16 {
			return
		}
		res, err := slurm.ParseConf(data, slurm.Options{Strict: strict})
		checkParseErr(t, err)
		if err == nil {
			if _, err := topology.New(res.Spec); err != nil {
				t.Fatalf("result does not build: %v", err)
			}
		}
	})
}

func FuzzParseYAML(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "topology.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, "")
	f.Add(b, "topo2")
	f.Fuzz(func(t *testing.T, data []byte, pick string) {
		if len(data) > 1<<16 {
			return
		}
		_, err := slurm.ParseYAML(data, slurm.Options{Topology: pick})
		if err == nil {
			return
		}
		var pe *slurm.ParseError
		var se *topology.SpecError
		if !errors.As(err, &pe) && !errors.As(err, &se) {
			t.Fatalf("untyped error: %v", err)
		}
	})
}
