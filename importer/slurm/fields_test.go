package slurm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/slurm"
)

// LinkSpeed is read and kept in Result.LinkSpeeds, but fleet does not model
// it: one WarnIgnoredField per file says so in Result.Notes, in
// topology.conf and topology.yaml alike; it is no Warning and Strict does
// not refuse it, since the fleet is the same with or without it.
func TestLinkSpeedIsWarnedAsIgnoredField(t *testing.T) {
	tests := []struct {
		name  string
		parse func([]byte, slurm.Options) (*slurm.Result, error)
		data  string
		line  int
	}{
		{"conf", slurm.ParseConf, "SwitchName=top Switches=s[0-1]\nSwitchName=s0 Nodes=n[0-1] LinkSpeed=400\nSwitchName=s1 Nodes=n[2-3] LinkSpeed=200\n", 2},
		{"yaml", slurm.ParseYAML, "- topology: t\n  tree:\n    switches:\n      - {switch: top, children: \"s[0-1]\"}\n" +
			"      - {switch: s0, nodes: \"n[0-1]\", link_speed: 400}\n      - {switch: s1, nodes: \"n[2-3]\", link_speed: 200}\n", 0},
	}
	for _, tt := range tests {
		for _, strict := range []bool{false, true} {
			res, err := tt.parse([]byte(tt.data), slurm.Options{Strict: strict})
			require.NoError(t, err, tt.name)
			assert.Equal(t, []slurm.Warning{{Kind: slurm.WarnIgnoredField, Line: tt.line, Name: "s0",
				Detail: "LinkSpeed on 2 of 3 switches is kept in Result.LinkSpeeds; fleet does not model it"}}, res.Notes, tt.name)
			assert.Empty(t, res.Warnings, tt.name)
			assert.Equal(t, map[string]uint32{"s0": 400, "s1": 200}, res.LinkSpeeds, tt.name)
		}
	}

	// No LinkSpeed, no warning.
	res, err := slurm.ParseConf([]byte("SwitchName=s0 Nodes=n[0-1]\n"), slurm.Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Notes)
	assert.Nil(t, res.LinkSpeeds)
}

// A ring topology is ErrUnsupported whichever file describes it, not an
// unknown key in topology.conf.
func TestRingTopologyIsUnsupportedInConfAndYAML(t *testing.T) {
	tests := []struct {
		name  string
		parse func([]byte, slurm.Options) (*slurm.Result, error)
		data  string
		line  int
		obj   string
	}{
		{"conf", slurm.ParseConf, "# a ring\nRingName=ring1 Nodes=n[0-15]\n", 2, "ring1"},
		{"conf lower case", slurm.ParseConf, "ringname=ring1 nodes=n[0-15]\n", 1, "ring1"},
		{"yaml", slurm.ParseYAML, "- topology: ring1\n  ring:\n    rings:\n      - {ring: r, nodes: \"n[0-15]\"}\n", 0, "ring1"},
		{"auto", slurm.Parse, "RingName=ring1 Nodes=n[0-15]\n", 1, "ring1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.parse([]byte(tt.data), slurm.Options{})
			require.ErrorIs(t, err, slurm.ErrUnsupported)
			require.NotErrorIs(t, err, slurm.ErrUnknownKey)
			var pe *slurm.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.line, pe.Line)
			assert.Equal(t, tt.obj, pe.Name)
		})
	}
}
