package preempt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// liveWatch is a cost model and a placement scorer that check, each time
// the search calls them, that the live fleet and tree are as they were
// before the search: host code never sees perturbed state.
type liveWatch struct {
	t     require.TestingT
	e     *env
	fleet string
	tree  bytesOf
	calls int
}

func (w *liveWatch) check() {
	w.calls++
	require.Equal(w.t, w.fleet, w.e.f.String(), "live fleet perturbed during the search")
	var now bytesOf
	now.read(w.e.tree)
	require.Equal(w.t, w.tree, now, "live tree perturbed during the search")
}

func (w *liveWatch) Cost(r *preempt.Running, now time.Time) float64 {
	w.check()
	return preempt.DefaultCost{RestartOverhead: 3 * time.Minute}.Cost(r, now)
}

func (w *liveWatch) Score(*topology.Fleet, *gang.Workload, topology.NodeID) int {
	w.check()
	return 0
}

func TestHostCodeSeesLiveStateUnchanged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e, req, exclude := instance(t, rapid.Bool().Draw(t, "single"))
		w := &liveWatch{t: t, e: e, fleet: e.f.String()}
		w.tree.read(e.tree)
		v := e.view()
		s := preempt.NewSearcher(preempt.Options{Cost: w, Placement: placement.Options{Scorer: w}})
		_, _ = s.Victims(v, req, exclude)
		w.check()
		require.Equal(t, e.f.String(), v.Scratch.String(), "scratch fleet given back")
		require.False(t, s.ScratchDirty())
	})
}

// panicky is a scorer that panics, after filling the node it is asked
// about on the fleet it is shown when fill is set.
type panicky struct{ on, fill bool }

func (p *panicky) Score(f *topology.Fleet, _ *gang.Workload, n topology.NodeID) int {
	if !p.on {
		return 0
	}
	if p.fill {
		_ = f.Allocate(n, f.Free(n))
	}
	panic("scorer failed")
}

func TestPanicInPlacementGivesScratchBack(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, lower))
	e.run("lo", "a", 1, time.Hour, []int{0}, []int{8})
	e.run("hi", "a", 5, time.Hour, []int{1}, []int{8})
	v := e.view()
	p := &panicky{on: true}
	s := preempt.NewSearcher(preempt.Options{Placement: placement.Options{Scorer: p}})
	req := e.req("new", "a", 10, 1, 8, "")
	require.Panics(t, func() { _, _ = s.Victims(v, req, nil) })
	require.Equal(t, e.f.String(), v.Scratch.String(), "the scratch fleet is given back on a panic")
	require.False(t, s.ScratchDirty())
	p.on = false
	plan, err := s.Victims(v, req, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"lo"}, ids(plan))
}

func TestScratchLeftChangedIsRefusedUntilRebuilt(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, lower))
	e.run("lo", "a", 1, time.Hour, []int{0}, []int{8})
	e.run("hi", "a", 5, time.Hour, []int{1}, []int{8})
	v := e.view()
	p := &panicky{on: true, fill: true}
	s := preempt.NewSearcher(preempt.Options{Placement: placement.Options{Scorer: p}})
	req := e.req("new", "a", 10, 1, 8, "")
	require.Panics(t, func() { _, _ = s.Victims(v, req, nil) })
	require.True(t, s.ScratchDirty(), "giving back failed: the Searcher must know")
	p.on = false
	_, err := s.Victims(v, req, nil)
	require.ErrorIs(t, err, preempt.ErrDirtyScratch)
	require.ErrorIs(t, err, preempt.ErrInvalid)
	v.Scratch = e.f.Clone()
	s.ScratchRebuilt()
	plan, err := s.Victims(v, req, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"lo"}, ids(plan))
}

// A scratch fleet that no longer mirrors the live one is refused, not
// used.
func TestScratchOutOfStepIsRefused(t *testing.T) {
	e := newEnv(t, 1, 1, 2, 8, queue("a", "", 16, lower))
	e.run("lo", "a", 1, time.Hour, []int{0}, []int{8})
	e.run("hi", "a", 5, time.Hour, []int{1}, []int{8})
	v := e.view()
	require.NoError(t, v.Scratch.Release(0, 8))
	_, err := preempt.NewSearcher(preempt.Options{}).Victims(v, e.req("new", "a", 10, 1, 8, ""), nil)
	require.ErrorIs(t, err, preempt.ErrInvalid)
}
