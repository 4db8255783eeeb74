package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
)

// snapshotTaker keeps the figures of every snapshot it receives.
type snapshotTaker struct{ figures []fleet.Figures }

func (o *snapshotTaker) Events([]fleet.Event) error     { return nil }
func (o *snapshotTaker) Usage(time.Time, []Usage) error { return nil }
func (o *snapshotTaker) Snapshot(s fleet.Snapshot) error {
	o.figures = append(o.figures, s.Figures())
	return nil
}

// figuresTaker keeps the figures it receives and counts the snapshots.
type figuresTaker struct {
	snapshotTaker
	snapshots int
}

func (o *figuresTaker) Snapshot(fleet.Snapshot) error { o.snapshots++; return nil }
func (o *figuresTaker) Figures(f fleet.Figures) error { o.figures = append(o.figures, f); return nil }

// A FiguresObserver receives, at every sample, the figures of the
// snapshot an Observer would have received, and no snapshot; the run is
// the same. Check mode compares Scheduler.Figures with the snapshot's
// after every cycle too.
func TestFiguresObserverSeesTheSnapshotsFigures(t *testing.T) {
	t.Parallel()
	failing := short(Borrow, 5)
	failing.FailuresPerGPUDay = 5e-3
	defrag := short(Borrow, 6)
	defrag.Fleet = FleetConfig(defrag.GPUs, Borrow)
	defrag.Fleet.Policy.DefragBudget = 20
	cases := []struct {
		name      string
		cfg       Config
		unhealthy bool // nodes fail during the run
	}{
		{"static", short(Static, 4), false},
		{"borrow with node failures", failing, true},
		{"borrow with defragmentation", defrag, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snaps, figs := &snapshotTaker{}, &figuresTaker{}
			a, b := tc.cfg, tc.cfg
			a.Observer, b.Observer = snaps, figs
			ra, rb := run(t, a), run(t, b)
			assert.Empty(t, ra.Violations)
			assert.Empty(t, rb.Violations)
			require.NotEmpty(t, snaps.figures)
			assert.Zero(t, figs.snapshots, "the simulator took a Snapshot for a FiguresObserver")
			require.Equal(t, len(snaps.figures), len(figs.figures))
			for i := range snaps.figures {
				require.Equal(t, snaps.figures[i], figs.figures[i], "sample %d at %s", i, snaps.figures[i].Time)
			}
			assert.Equal(t, text(t, ra), text(t, rb), "observing figures changed the run")
			// The samples cover what the figures hold.
			u, n, c, br := varied(figs.figures)
			assert.Equal(t, tc.unhealthy, u > 0, "samples with unhealthy nodes")
			assert.Positive(t, n, "samples with GPUs nominated")
			assert.Positive(t, c, "samples with gangs across leaves")
			assert.Positive(t, br, "samples with a queue borrowing")
		})
	}
}

// varied reports what the figures exercised: samples with unhealthy
// nodes, with GPUs nominated, with gangs crossing leaves, with borrowing.
func varied(fs []fleet.Figures) (unhealthy, nominated, crossings, borrowed int) {
	for _, f := range fs {
		if len(f.Fleet.Unhealthy) > 0 {
			unhealthy++
		}
		if f.Nominated > 0 {
			nominated++
		}
		if len(f.Fleet.Crossings) > 0 {
			crossings++
		}
		for _, q := range f.Queues {
			for _, fl := range q.Flavors {
				if q.IsQueue && fl.Borrowed > 0 {
					borrowed++
				}
			}
		}
	}
	return
}
