package preempt_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/topology"
)

// avoidEnv is 2 spines x 2 leaves x 2 nodes x 8 GPUs, every node held by
// one workload of queue a; spine 0's work is the cheapest to evict.
func avoidEnv(t *testing.T) *env {
	e := newEnv(t, 2, 2, 2, 8, queue("a", "", 64, lower))
	for n := range 8 {
		age := time.Hour
		if n < 4 {
			age = time.Minute // spine 0: little unsaved work
		}
		e.run(fmt.Sprintf("w%d", n), "a", 10, age, []int{n}, []int{8})
	}
	return e
}

func domainAt(t *testing.T, f *topology.Fleet, level string, i int) topology.DomainID {
	l, ok := f.Level(level)
	require.True(t, ok)
	lo, hi := f.DomainsAt(l)
	require.Less(t, i, int(hi-lo))
	return lo + topology.DomainID(i)
}

// onNodes reports whether the plan's target or victims use a node of d.
func targetIn(f *topology.Fleet, p preempt.Plan, d topology.DomainID) bool {
	lo, hi := f.Nodes(d)
	for _, pod := range p.Target.Pods {
		if pod.Node >= lo && pod.Node < hi {
			return true
		}
	}
	return false
}

func TestAvoidPlacesOutsideAvoidedDomains(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pods     int
		required string
		avoid    func(f *topology.Fleet) []topology.DomainID
		wantIn   func(f *topology.Fleet) topology.DomainID // where the plan lands
	}{
		{"spine gang, spine 0 avoided", 4, "spine",
			func(f *topology.Fleet) []topology.DomainID { return []topology.DomainID{domainAt(t, f, "spine", 0)} },
			func(f *topology.Fleet) topology.DomainID { return domainAt(t, f, "spine", 1) }},
		{"leaf gang, a leaf of spine 0 avoided", 2, "leaf",
			func(f *topology.Fleet) []topology.DomainID { return []topology.DomainID{domainAt(t, f, "leaf", 0)} },
			func(f *topology.Fleet) topology.DomainID { return domainAt(t, f, "leaf", 1) }},
		{"no required level, spine 0 avoided", 3, "",
			func(f *topology.Fleet) []topology.DomainID { return []topology.DomainID{domainAt(t, f, "spine", 0)} },
			func(f *topology.Fleet) topology.DomainID { return domainAt(t, f, "spine", 1) }},
		{"leaf gang, nested avoided domains", 2, "leaf",
			func(f *topology.Fleet) []topology.DomainID {
				return []topology.DomainID{domainAt(t, f, "leaf", 1), domainAt(t, f, "spine", 0)}
			},
			func(f *topology.Fleet) topology.DomainID { return domainAt(t, f, "spine", 1) }},
		{"leaf gang, three of four leaves avoided", 2, "leaf",
			func(f *topology.Fleet) []topology.DomainID {
				return []topology.DomainID{domainAt(t, f, "leaf", 2), domainAt(t, f, "leaf", 0), domainAt(t, f, "leaf", 1)}
			},
			func(f *topology.Fleet) topology.DomainID { return domainAt(t, f, "leaf", 3) }},
		{"no required level, three of four leaves avoided", 2, "",
			func(f *topology.Fleet) []topology.DomainID {
				return []topology.DomainID{domainAt(t, f, "leaf", 1), domainAt(t, f, "leaf", 3), domainAt(t, f, "leaf", 0)}
			},
			func(f *topology.Fleet) topology.DomainID { return domainAt(t, f, "leaf", 2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := avoidEnv(t)
			r := e.req("new", "a", 20, tc.pods, 8, tc.required)
			p, err := victims(t, e, r, nil)
			require.NoError(t, err)
			avoid := tc.avoid(e.f)
			require.True(t, targetIn(e.f, p, avoid[len(avoid)-1]) || len(avoid) > 1, "the cheapest plan uses the domain to avoid")
			r.Avoid = avoid
			p, err = victims(t, e, r, nil)
			require.NoError(t, err)
			for _, d := range avoid {
				assert.False(t, targetIn(e.f, p, d), "target in avoided domain %d: %v", d, p.Target.Pods)
			}
			want := tc.wantIn(e.f)
			lo, hi := e.f.Nodes(want)
			for _, pod := range p.Target.Pods {
				assert.True(t, pod.Node >= lo && pod.Node < hi, "pod on node %d outside domain %d", pod.Node, want)
			}
			assert.Len(t, p.Victims, tc.pods, "one victim per pod: no useless victim")
		})
	}
}

func TestAvoidEverywhereFindsNoPlan(t *testing.T) {
	e := avoidEnv(t)
	r := e.req("new", "a", 20, 4, 8, "spine")
	r.Avoid = []topology.DomainID{domainAt(t, e.f, "spine", 0), domainAt(t, e.f, "spine", 1)}
	_, err := victims(t, e, r, nil)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	assert.True(t, errors.Is(err, preempt.ErrNoPlan))

	// A gang that fits on free GPUs inside the avoided domain only finds
	// no plan without victims there either.
	e = newEnv(t, 2, 1, 1, 8, queue("a", "", 64, lower))
	e.run("w", "a", 30, time.Hour, []int{1}, []int{8})
	r = e.req("new", "a", 20, 1, 8, "")
	r.Avoid = []topology.DomainID{domainAt(t, e.f, "spine", 0)}
	_, err = victims(t, e, r, nil)
	require.ErrorAs(t, err, &np)

	r.Avoid = []topology.DomainID{topology.DomainID(e.f.NumDomains())}
	_, err = victims(t, e, r, nil)
	require.ErrorAs(t, err, &np)
	assert.Equal(t, preempt.WhyInvalid, np.Why)
}

func TestAvoidOnThePlacingPath(t *testing.T) {
	// Spread sends the gang down the placing path.
	e := avoidEnv(t)
	r := e.req("new", "a", 20, 2, 8, "")
	r.W.Spread = gang.Spread{MaxPerNode: 1}
	r.Avoid = []topology.DomainID{domainAt(t, e.f, "spine", 0)}
	p, err := victims(t, e, r, nil)
	require.NoError(t, err)
	assert.False(t, targetIn(e.f, p, r.Avoid[0]), "%v", p.Target.Pods)
}

// TestAvoidedFirstLeafLeavesTheRestOfItsSpine: with the first leaf of
// spine 0 avoided, the spine's other leaf still counts: a gang that must
// stay in one spine fits on that leaf's free node without a victim,
// though the other spine's work could be evicted to make room.
func TestAvoidedFirstLeafLeavesTheRestOfItsSpine(t *testing.T) {
	e := newEnv(t, 2, 2, 1, 8, queue("a", "", 64, lower))
	e.run("w0", "a", 10, time.Minute, []int{0}, []int{8})
	for n := 2; n < 4; n++ {
		e.run(fmt.Sprintf("w%d", n), "a", 10, time.Minute, []int{n}, []int{8})
	}
	r := e.req("new", "a", 20, 1, 8, "spine")
	r.Avoid = []topology.DomainID{domainAt(t, e.f, "leaf", 0)}
	p, err := victims(t, e, r, nil)
	require.NoError(t, err)
	assert.Empty(t, p.Victims)
	assert.Equal(t, []placement.NodeGPUs{{Node: 1, GPUs: 8}}, p.Target.NodeGPUs())
}
