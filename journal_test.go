package fleet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/traces"
	"github.com/fleetsched/fleet/topology"
)

// TestJournalReplaysByteForByte records a random run on the reference
// fleet and replays it: the decisions must be byte-identical.
func TestJournalReplaysByteForByte(t *testing.T) {
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	var journal bytes.Buffer
	j := fleet.NewJournal(s, &journal)
	var recorded bytes.Buffer
	enc := json.NewEncoder(&recorded)

	r := rand.New(rand.NewPCG(3, 4))
	sizes := traces.NewSampler(traces.PhillySizes())
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	running := []string{}
	for i := range 400 {
		now = now.Add(time.Duration(r.IntN(120)) * time.Second)
		switch op := r.IntN(10); {
		case op < 5:
			w := mixedWork(r, sizes, fmt.Sprintf("w%d", i))
			_ = j.Submit(now, w)
		case op < 7 && len(running) > 0:
			k := r.IntN(len(running))
			_ = j.Exited(now, running[k], gang.ExitFinished)
			running = append(running[:k], running[k+1:]...)
		case op == 7:
			_, _ = j.SetNodeHealth(now, fmt.Sprintf("node-%d-%d-%d", r.IntN(4), r.IntN(8), r.IntN(8)), topology.Health(r.IntN(3)))
		default:
			d := j.Schedule(now)
			require.NoError(t, j.Err())
			require.NoError(t, enc.Encode(d))
			for _, a := range d.Admit {
				running = append(running, a.ID)
			}
		}
	}
	var replayed bytes.Buffer
	enc2 := json.NewEncoder(&replayed)
	_, err = fleet.Replay(fleet.ReferenceConfig(), bytes.NewReader(journal.Bytes()), func(d fleet.Decisions) {
		require.NoError(t, enc2.Encode(d))
	})
	require.NoError(t, err)
	assert.Greater(t, recorded.Len(), 1000)
	assert.Equal(t, recorded.String(), replayed.String())

	_, err = fleet.Replay(fleet.ReferenceConfig(), bytes.NewReader([]byte("{not json\n")), nil)
	assert.ErrorIs(t, err, fleet.ErrInvalid)
}

// A call the journal cannot record (a time JSON cannot hold) is refused
// as invalid input, and not made.
func TestJournalRefusesACallItCannotRecord(t *testing.T) {
	s := newRef(t)
	var buf bytes.Buffer
	j := fleet.NewJournal(s, &buf)
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	err := j.Submit(far, replica("r", 1))
	require.ErrorIs(t, err, fleet.ErrInvalid)
	assert.Empty(t, s.Snapshot().Pending)
	assert.Zero(t, buf.Len())
}

// A call made through the journal is the call itself: a submission is
// announced as one, and a refused one names the submit that was refused,
// as on the scheduler without a journal.
func TestJournalMakesEachCallAsTheSchedulerWould(t *testing.T) {
	w := gang.Workload{ID: "a", Queue: "research", Shape: gang.Training,
		PodSets: []gang.PodSet{{Name: "w", Count: 1, GPUsPerPod: 1}}}
	bad := w
	bad.ID, bad.Shape = "b", 0
	run := func(submit func(time.Time, gang.Workload) error, schedule func(time.Time) fleet.Decisions) ([]string, string) {
		err := submit(t0, bad)
		require.Error(t, err)
		require.NoError(t, submit(t0, w))
		var events []string
		for _, e := range schedule(t0).Events {
			events = append(events, fmt.Sprintf("%s %s", e.Kind, e.Workload))
		}
		return events, err.Error()
	}
	s, err := fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	wantEvents, wantErr := run(s.Submit, s.Schedule)
	assert.Contains(t, wantEvents, "submitted a")
	assert.Contains(t, wantErr, `submit "b"`)

	s, err = fleet.New(fleet.ReferenceConfig())
	require.NoError(t, err)
	var journal bytes.Buffer
	j := fleet.NewJournal(s, &journal)
	events, errText := run(j.Submit, j.Schedule)
	assert.Equal(t, wantEvents, events)
	assert.Equal(t, wantErr, errText)
}
