package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/topology"
)

// Every change a victim search reads moves the Version; a checkpoint,
// which only prices victims, does not.
func TestVersionMovesWithEveryChangeButACheckpoint(t *testing.T) {
	l, qa, _ := books(t)
	steps := []struct {
		name  string
		do    func() error
		moves bool
	}{
		{"track", func() error { _, err := l.Track(work("x", 1, 8), qa, 0, ledger.Policy{Preemptible: true}); return err }, true},
		{"admit", func() error { return l.Admit("x", on("x", 8, 0), t0) }, true},
		{"checkpoint", func() error { return l.Checkpoint("x", t0.Add(time.Minute), t0.Add(2*time.Minute)) }, false},
		{"drain", func() error {
			_, err := l.DrainFor("x", t0.Add(2*time.Minute), t0.Add(time.Hour), gang.DrainHost)
			return err
		}, true},
		{"exit", func() error { _, _, err := l.Exit("x", gang.ExitDrained); return err }, true},
	}
	for _, st := range steps {
		v := l.Version()
		require.NoError(t, st.do(), st.name)
		assert.Equal(t, st.moves, l.Version() != v, st.name)
	}
}

// ProtectionEnds is the earliest end of a holder's MinRuntime after now,
// and false once every protection has ended.
func TestProtectionEndsAtTheFirstMinRuntimeToEnd(t *testing.T) {
	l, qa, qb := books(t)
	for _, x := range []struct {
		id      string
		q       int
		started time.Time
		min     time.Duration
	}{{"early", 0, t0, 10 * time.Minute}, {"late", 1, t0.Add(time.Minute), 2 * time.Minute}, {"none", 0, t0, 0}} {
		q := qa
		if x.q == 1 {
			q = qb
		}
		_, err := l.Track(work(x.id, 1, 8), q, 0, ledger.Policy{Preemptible: true, MinRuntime: x.min})
		require.NoError(t, err)
		node := map[string]int{"early": 0, "late": 1, "none": 2}[x.id]
		require.NoError(t, l.Admit(x.id, on(x.id, 8, topology.NodeID(node)), x.started))
	}
	for _, c := range []struct {
		now  time.Duration
		want time.Duration
		ok   bool
	}{{0, 3 * time.Minute, true}, {3 * time.Minute, 10 * time.Minute, true}, {10 * time.Minute, 0, false}} {
		end, ok := l.ProtectionEnds(t0.Add(c.now))
		require.Equal(t, c.ok, ok, "at %s", c.now)
		if ok {
			assert.Equal(t, t0.Add(c.want), end, "at %s", c.now)
		}
	}
}
