package preempt_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// drainModel drives a Drains the way the scheduler does (the convention of
// the package manual) and checks that nominated GPUs are never given twice
// and never leak.
type drainModel struct {
	e       *env
	d       *preempt.Drains
	s       *preempt.Searcher
	now     time.Time
	targets map[string]placement.Assignment // accepted, not completed or dissolved
	next    int
}

func (m *drainModel) running(id string) int {
	return slices.IndexFunc(m.e.running, func(r preempt.Running) bool { return r.W.ID == id })
}

func (m *drainModel) exit(t *rapid.T, id string) {
	i := m.running(id)
	require.GreaterOrEqual(t, i, 0, id)
	r := m.e.running[i]
	keep := m.d.Claims(id)
	for _, x := range r.Nodes {
		g := x.GPUs
		for _, k := range keep {
			if k.Node == x.Node {
				g -= k.GPUs
			}
		}
		require.GreaterOrEqual(t, g, 0)
		if g > 0 {
			require.NoError(t, m.e.f.Release(x.Node, g))
		}
	}
	require.NoError(t, m.e.tree.RemoveUsage(r.Queue, r.Flavor, int64(gpusOfTest(r.Nodes))))
	m.e.running = slices.Delete(m.e.running, i, i+1)
	m.d.VictimExited(id)
}

func (m *drainModel) check(t *rapid.T) {
	f := m.e.f
	tracked := map[string]bool{}
	for _, v := range m.d.Victims() {
		tracked[v] = true
	}
	for n := range topology.NodeID(f.NumNodes()) {
		held, heldByVictims := 0, 0
		for _, r := range m.e.running {
			for _, x := range r.Nodes {
				if x.Node == n {
					held += x.GPUs
					if tracked[r.W.ID] {
						heldByVictims += x.GPUs
					}
				}
			}
		}
		promised := 0
		for _, a := range m.targets {
			for _, x := range a.NodeGPUs() {
				if x.Node == n {
					promised += x.GPUs
				}
			}
		}
		require.Equal(t, held+m.d.Reserved(n), f.Allocated(n), "allocated = running + reserved on %d", n)
		require.Equal(t, promised, m.d.Nominated(n), "nominated = accepted targets on %d", n)
		require.LessOrEqual(t, m.d.Nominated(n)-m.d.Reserved(n), heldByVictims, "claims backed by victims on %d", n)
		require.LessOrEqual(t, held-heldByVictims+m.d.Nominated(n), f.Capacity(n), "never double-given on %d", n)
	}
}

func TestDrainsStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := newEnv(t, 1, 2, 2, 8, queue("a", "", 64, lower))
		for n := range 4 {
			left := 8
			for left > 0 {
				g := rapid.IntRange(1, left).Draw(t, "gpus")
				left -= g
				e.run(fmt.Sprintf("r%d-%d", n, left), "a", int32(rapid.IntRange(0, 4).Draw(t, "prio")), time.Hour, []int{n}, []int{g})
			}
		}
		m := &drainModel{e: e, d: preempt.NewDrains(), s: preempt.NewSearcher(preempt.Options{}), now: t0,
			targets: map[string]placement.Assignment{}}
		t.Repeat(map[string]func(*rapid.T){
			"plan": func(t *rapid.T) {
				m.next++
				r := e.req(fmt.Sprintf("b%d", m.next), "a", 10, rapid.IntRange(1, 2).Draw(t, "pods"),
					rapid.SampledFrom([]int{1, 4, 8}).Draw(t, "perPod"), rapid.SampledFrom([]string{"", "leaf"}).Draw(t, "req"))
				r.Now, r.Claims = m.now, m.d
				p, err := m.s.Victims(e.view(), r, nil)
				if err != nil {
					return
				}
				reserve, err := m.d.Accept(p, m.now)
				require.NoError(t, err)
				for _, x := range reserve {
					require.NoError(t, e.f.Allocate(x.Node, x.GPUs))
				}
				require.NoError(t, e.tree.AddUsage(r.Queue, r.Flavor, int64(r.W.GPUs())))
				for _, v := range p.Victims {
					e.running[m.running(v.ID)].Draining = true
				}
				m.targets[p.Beneficiary] = p.Target
			},
			"exit": func(t *rapid.T) {
				var draining []string
				for _, r := range e.running {
					if r.Draining {
						draining = append(draining, r.W.ID)
					}
				}
				if len(draining) == 0 {
					t.Skip("no victim")
				}
				m.exit(t, rapid.SampledFrom(draining).Draw(t, "victim"))
			},
			"deadline": func(t *rapid.T) {
				m.now = m.now.Add(time.Duration(rapid.IntRange(1, 200).Draw(t, "seconds")) * time.Second)
				for _, id := range m.d.Due(m.now) {
					m.exit(t, id) // killed
				}
			},
			"cancel": func(t *rapid.T) {
				bs := m.d.Nominations()
				if len(bs) == 0 {
					t.Skip("no nomination")
				}
				b := rapid.SampledFrom(bs).Draw(t, "beneficiary")
				for _, x := range m.d.Dissolve(b) {
					require.NoError(t, e.f.Release(x.Node, x.GPUs))
				}
				require.NoError(t, e.tree.RemoveUsage(e.q("a"), e.fl, int64(m.targets[b].GPUs())))
				delete(m.targets, b)
			},
			"complete": func(t *rapid.T) {
				for _, b := range m.d.Nominations() {
					if !m.d.Ready(b) {
						continue
					}
					a, err := m.d.Complete(b)
					require.NoError(t, err)
					w := &gang.Workload{ID: b, Queue: "a", Priority: 10,
						PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: a.GPUs()}}}
					e.running = append(e.running, preempt.Running{W: w, Queue: e.q("a"), Flavor: e.fl,
						Nodes: a.NodeGPUs(), Started: m.now})
					delete(m.targets, b)
				}
			},
			"": m.check,
		})
		// Dissolve everything: nothing stays nominated.
		for _, b := range m.d.Nominations() {
			for _, x := range m.d.Dissolve(b) {
				require.NoError(t, e.f.Release(x.Node, x.GPUs))
			}
			delete(m.targets, b)
		}
		for n := range topology.NodeID(e.f.NumNodes()) {
			require.Zero(t, m.d.Nominated(n))
			require.Zero(t, m.d.Reserved(n))
		}
		require.Empty(t, m.d.Victims())
	})
}

func TestDrainsRefusals(t *testing.T) {
	d := preempt.NewDrains()
	p := preempt.Plan{Beneficiary: "b", Victims: []preempt.Victim{{ID: "v", Deadline: t0}}}
	_, err := d.Accept(p, t0)
	require.NoError(t, err)
	_, err = d.Accept(p, t0)
	require.ErrorIs(t, err, preempt.ErrDrain)
	_, err = d.Accept(preempt.Plan{Beneficiary: "c", Victims: []preempt.Victim{{ID: "v"}}}, t0)
	require.ErrorIs(t, err, preempt.ErrDrain)
	_, err = d.Complete("b")
	require.ErrorIs(t, err, preempt.ErrDrain)
	require.Equal(t, []string{"v"}, d.Due(t0))
	require.Empty(t, d.Due(t0))
	b, ok := d.VictimExited("v")
	require.True(t, ok)
	require.Equal(t, "b", b)
	require.True(t, d.Ready("b"))
}
