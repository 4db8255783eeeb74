package slurm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/hosts/host"
)

// A state file reads back what was saved, and one written before
// DrainNote embedded host.DrainRecord (the same JSON names) still reads.
func TestStateFile(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	want := State{Seq: 7, Order: map[string]uint64{"12": 7},
		Drains: map[string]DrainNote{"9": {DrainRecord: host.DrainRecord{Since: t0, Deadline: t0.Add(30 * time.Second),
			Reason: gang.DrainReclaim, Beneficiaries: []string{"12"}, KillAsked: t0.Add(31 * time.Second)},
			Requeue: true, Started: t0.Add(-time.Hour)}},
		Nominated: map[string][]string{"12": {"gpu001"}}, ReadyBy: map[string]time.Time{"12": t0.Add(30 * time.Second)}}
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	require.NoError(t, SaveState(path, &want))
	got, err := LoadState(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	old := `{"seq":7,"order":{"12":7},"drains":{"9":{"since":"2026-11-01T00:00:00Z",` +
		`"deadline":"2026-11-01T00:00:30Z","reason":"reclaim","beneficiaries":["12"],"requeue":true,` +
		`"started":"2026-10-31T23:00:00Z","killAsked":"2026-11-01T00:00:31Z"}},` +
		`"nominated":{"12":["gpu001"]},"readyBy":{"12":"2026-11-01T00:00:30Z"}}`
	require.NoError(t, os.WriteFile(path, []byte(old), 0o644))
	got, err = LoadState(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	empty, err := LoadState(filepath.Join(dir, "missing.json"))
	require.NoError(t, err)
	assert.Equal(t, State{}, empty, "a missing file is the empty state")
}
