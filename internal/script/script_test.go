package script

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAndFormatRoundTrip(t *testing.T) {
	text := "# a comment\n\ntick 10s\n----\n00:00:10\n\nmap\n----\nline one\nline two\n"
	blocks, err := Parse(text)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	assert.Equal(t, Block{Comments: []string{"# a comment", ""}, Command: "tick 10s", Want: "00:00:10\n"}, blocks[0])
	assert.Equal(t, "line one\nline two\n", blocks[1].Want)
	assert.Equal(t, text+"\n", Format(blocks, []string{blocks[0].Want, blocks[1].Want}))
}

func TestParseRefusesMalformedScripts(t *testing.T) {
	_, err := Parse("tick 10s\nnot a separator\n")
	assert.ErrorContains(t, err, "line 2")
	_, err = Parse("tick 10s\n")
	assert.ErrorContains(t, err, "no ---- line")
}

func TestRunnerRefusesMalformedCommands(t *testing.T) {
	r, err := NewRunner()
	require.NoError(t, err)
	for _, cmd := range []string{"frobnicate", "tick", "tick soon", "exit a", "exit a vanished",
		"submit id=a pods=1", "submit-many n=x", "observe a sm=high mfu=0"} {
		_, err := r.Exec(cmd)
		assert.Error(t, err, cmd)
	}
	out, err := r.Exec("exit nobody finished")
	require.NoError(t, err)
	assert.Contains(t, out, "error: fleet: unknown workload")
}

func TestShippedScenariosParse(t *testing.T) {
	names := Scenarios()
	assert.Contains(t, names, "inference_spike")
	for _, n := range names {
		text, ok := Scenario(n)
		require.True(t, ok)
		blocks, err := Parse(text)
		require.NoError(t, err, n)
		assert.NotEmpty(t, blocks, n)
	}
	_, ok := Scenario("nope")
	assert.False(t, ok)
}
