package slurm

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replayHost runs a host against a session recorded from the real
// cluster (FLEET_SLURM_RECORD) until its reads are used up, and returns
// the replay.
func replayHost(t *testing.T, session string) *Replay {
	t.Helper()
	f, err := os.Open(session)
	require.NoError(t, err)
	defer f.Close()
	calls, err := ReadSession(f)
	require.NoError(t, err)
	r := NewReplay(calls)
	h, err := New(testConfig(""), Options{
		Slurm: &Commands{Runner: r, TopologyFile: "testdata/topology.conf", Location: time.UTC},
		Quota: referenceQuota(), Clock: r,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	for r.Left("squeue") {
		_, err := h.Cycle(context.Background())
		require.NoError(t, err)
	}
	return r
}

// The host replayed against a recorded session runs the very commands
// it ran on the cluster: every ReqNodeList, release, requeuehold and
// Comment, and nothing else.
func TestReplay(t *testing.T) {
	for _, tc := range []struct {
		session string
		want    []string // commands the session must hold
	}{
		{"testdata/chosen.session", []string{"scontrol update JobId=", "ReqNodeList=", "scontrol release"}},
		{"testdata/reclaim.session", []string{"scontrol requeuehold", "Comment=fleet: drained (reclaim)"}},
	} {
		t.Run(tc.session, func(t *testing.T) {
			r := replayHost(t, tc.session)
			assert.Empty(t, r.Missed(), "commands the recorded host did not run")
			assert.Empty(t, r.Unused(), "commands the recorded host ran and this one did not")
			var all []string
			for _, c := range r.calls {
				all = append(all, strings.Join(c.Args, " "))
			}
			for _, w := range tc.want {
				assert.Contains(t, strings.Join(all, "\n"), w)
			}
		})
	}
}

// A replay answers each command once, in any order among equal words,
// and reports what it does not hold.
func TestReplayMatching(t *testing.T) {
	r := NewReplay([]Call{
		{Args: []string{"squeue"}, Out: "a"},
		{Args: []string{"scontrol", "release", "1"}},
		{Args: []string{"squeue"}, Out: "b"},
		{Args: []string{"scancel", "2"}, Err: "exit status 1"},
		{Args: []string{"now"}, Out: "2026-01-02T03:04:05Z"},
	})
	ctx := context.Background()
	out, err := r.Run(ctx, "squeue")
	require.NoError(t, err)
	assert.Equal(t, "a", string(out))
	_, err = r.Run(ctx, "scancel", "2")
	assert.ErrorIs(t, err, ErrCommand)
	out, _ = r.Run(ctx, "squeue")
	assert.Equal(t, "b", string(out))
	_, err = r.Run(ctx, "squeue")
	assert.ErrorIs(t, err, ErrNotRecorded)
	assert.Equal(t, []string{"squeue"}, r.Missed())
	assert.Equal(t, []string{"scontrol release 1"}, r.Unused())
	assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), r.Now().UTC())
	assert.False(t, r.Left("squeue"))
}
