package kube

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// stateShape is a worst case of the state at 2,048 GPUs (256 nodes of 8)
// and 10,000 pods, every workload a gang of two pods (a pod alone keeps
// no places), with names of the given lengths.
type stateShape struct {
	name string
	// running gangs, each draining for two beneficiaries, its GPUs
	// claimed by nominations when claims is set; pending gangs, the
	// first nominated of them nominated.
	running, pending, nominated int
	claims                      bool
	// nsLen and groupLen are the lengths of namespaces and group names
	// (at most 63 each in Kubernetes).
	nsLen, groupLen int
}

// name is a seeded random name of n characters: random, so that
// compression gains nothing from repeated text it would not see.
func name(r *rand.Rand, prefix string, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b strings.Builder
	b.WriteString(prefix)
	for b.Len() < n {
		b.WriteByte(letters[r.IntN(len(letters))])
	}
	return b.String()[:n]
}

func (sh stateShape) build() State {
	r := rand.New(rand.NewPCG(1, 2))
	nodes := make([]string, 256)
	for i := range nodes {
		// GKE's node names: gke-<cluster>-<pool>-<hash>-<suffix>.
		nodes[i] = fmt.Sprintf("gke-fleet-a3-h100-pool-%d-%s-%s", i/64, name(r, "", 8), name(r, "", 4))
	}
	namespaces := make([]string, 24)
	for i := range namespaces {
		namespaces[i] = name(r, "team-", sh.nsLen)
	}
	id := func() (string, string) {
		ns, g := namespaces[r.IntN(len(namespaces))], name(r, "job-", sh.groupLen)
		return ns + "/" + g, g
	}
	// Drains and nominations are decided by cycles: 50 of them, a few
	// seconds apart, at nanosecond times as the wall clock gives them.
	at := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	cycles := make([]time.Time, 50)
	for i := range cycles {
		cycles[i] = at.Add(time.Duration(i)*3*time.Second + time.Duration(r.Int64N(int64(time.Second))))
	}
	stamp := func() time.Time { return cycles[r.IntN(len(cycles))] }
	st := State{Work: map[string]WorkState{}}
	var pending []string
	for i := range sh.pending {
		key, _ := id()
		st.Seq++
		ws := WorkState{Seq: st.Seq}
		if i < sh.nominated {
			ws.Nominated = []string{nodes[r.IntN(256)], nodes[r.IntN(256)]}
			ws.ReadyBy = stamp()
		}
		st.Work[key] = ws
		pending = append(pending, key)
	}
	for i := range sh.running {
		key, _ := id()
		st.Seq++
		since := stamp()
		n0, n1 := nodes[r.IntN(256)], nodes[r.IntN(256)]
		b0, b1 := pending[(2*i)%len(pending)], pending[(2*i+1)%len(pending)]
		d := &DrainState{DrainNote: DrainNote{Reason: "reclaim", Since: since, Deadline: since.Add(120 * time.Second),
			Beneficiaries: []string{b0, b1}, KillAsked: stamp().Add(121 * time.Second)}}
		if sh.claims {
			d.Claims = []fleet.ClaimView{{Beneficiary: b0, Node: n0, GPUs: 1}, {Beneficiary: b1, Node: n1, GPUs: 1}}
		}
		st.Work[key] = WorkState{Seq: st.Seq, Nodes: []string{n0, n1}, Borrowing: true, Drain: d}
	}
	return st
}

// TestStateSize: the worst state at 2,048 GPUs and 10,000 pods fits one
// ConfigMap once compressed, with room to spare.
func TestStateSize(t *testing.T) {
	for _, sh := range []stateShape{
		// 2,048 whole-GPU pods running (1,024 gangs), every one draining
		// with its GPUs claimed; 7,952 pods pending, 2,048 of them
		// nominated on the victims' GPUs.
		{name: "drains=1024/nominated=1024/pending=3976", running: 1024, pending: 3976, nominated: 1024, claims: true, nsLen: 20, groupLen: 32},
		// The same with the longest names Kubernetes allows.
		{name: "drains=1024/nominated=1024/pending=3976/names=63", running: 1024, pending: 3976, nominated: 1024, claims: true, nsLen: 63, groupLen: 63},
		// 8,000 pods sharing GPUs running (4,000 gangs), every one
		// draining for 2,000 pending pods (no claims: work sharing GPUs is
		// reclaimed without nominations).
		{name: "drains=4000/pending=1000/shared", running: 4000, pending: 1000, nsLen: 20, groupLen: 32},
		{name: "drains=4000/pending=1000/shared/names=63", running: 4000, pending: 1000, nsLen: 63, groupLen: 63},
	} {
		t.Run(sh.name, func(t *testing.T) {
			st := sh.build()
			require.Equal(t, 10000, 2*len(st.Work), "pods")
			start := time.Now()
			data, err := EncodeState(&st)
			took := time.Since(start)
			require.NoError(t, err)
			raw, err := json.Marshal(&st)
			require.NoError(t, err)
			t.Logf("%d workloads, 10,000 pods: JSON %d bytes, gzip %d bytes (%.0f%% of the %d-byte limit), encoded in %s",
				len(st.Work), len(raw), len(data), 100*float64(len(data))/MaxStateBytes, MaxStateBytes, took.Round(time.Millisecond))
			assert.Less(t, len(data), MaxStateBytes, "the state does not fit its ConfigMap")
			if sh.nsLen < 63 {
				assert.Less(t, len(data), MaxStateBytes/2, "with names of common lengths, the state takes more than half its ConfigMap")
			}
			back, err := DecodeState(data)
			require.NoError(t, err)
			assert.Equal(t, len(st.Work), len(back.Work))
			for k, ws := range st.Work {
				assert.Equal(t, ws.Seq, back.Work[k].Seq)
				if ws.Drain != nil {
					require.NotNil(t, back.Work[k].Drain)
					assert.True(t, ws.Drain.Deadline.Equal(back.Work[k].Drain.Deadline))
					assert.Equal(t, ws.Drain.Claims, back.Work[k].Drain.Claims)
				}
				assert.Equal(t, ws.Nominated, back.Work[k].Nominated)
				assert.True(t, ws.ReadyBy.Equal(back.Work[k].ReadyBy))
			}
		})
	}
}

// trackedOf is the tracked workloads a state describes, as the
// controller would hold them.
func trackedOf(st State) map[string]*tracked {
	work := map[string]*tracked{}
	for id, ws := range st.Work {
		t := &tracked{seq: ws.Seq, borrowing: ws.Borrowing, flavors: ws.Flavors, nominated: ws.Nominated, readyBy: ws.ReadyBy}
		if len(ws.Nodes) > 0 {
			t.running, t.slots = true, slices.Clone(ws.Nodes)
		}
		if ws.Drain != nil {
			note := ws.Drain.DrainNote
			t.drain, t.claims, t.moveTo = &note, ws.Drain.Claims, ws.Drain.MoveTo
		}
		work[id] = t
	}
	return work
}

// TestEncodeState: the state encoded workload by workload is the
// State's JSON, and is assembled again only when a workload's part
// changed (in place, too) or work came or went.
func TestEncodeState(t *testing.T) {
	st := stateShape{running: 40, pending: 60, nominated: 20, claims: true, nsLen: 12, groupLen: 16}.build()
	c := &Controller{work: trackedOf(st), seq: st.Seq}
	same := func() {
		t.Helper()
		want, err := json.Marshal(c.stateOf())
		require.NoError(t, err)
		raw, _, _, changed := c.encodeState()
		require.True(t, changed)
		assert.JSONEq(t, string(want), string(raw))
		assert.Equal(t, string(want), string(raw), "the order of json.Marshal")
		_, _, _, changed = c.encodeState()
		assert.False(t, changed, "assembled again with nothing changed")
	}
	same()
	var running, pending string
	for _, id := range slices.Sorted(maps.Keys(c.work)) {
		if c.work[id].running && running == "" {
			running = id
		}
		if !c.work[id].running && pending == "" {
			pending = id
		}
	}
	c.work[running].slots[1] = "gpu-replacement"
	same()
	// An admission in a queue whose resource groups split cpu from GPUs
	// keeps the flavor of each pod set's cpu.
	c.work[running].flavors = []map[string]string{{"cpu": "spot"}}
	same()
	note := *c.work[running].drain
	note.KillAsked = note.Deadline.Add(time.Second)
	c.work[running].drain = &note
	same()
	delete(c.work, pending)
	same()
	c.work[pending] = &tracked{seq: 999}
	c.seq = 999
	same()
	// A cycle's defragmentation moves are counted against the hour's
	// budget, and forgotten an hour later.
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	c.noteDefragSpend(at, []fleet.Drain{{ID: "m", Reason: gang.DrainDefrag, LostGPUSeconds: 120}, {ID: "v", LostGPUSeconds: 50}})
	assert.Equal(t, []fleet.DefragSpend{{At: at, LostGPUSeconds: 120}}, c.defragSpent)
	same()
	c.noteDefragSpend(at.Add(time.Minute), nil)
	_, _, _, changed := c.encodeState()
	assert.False(t, changed, "a cycle without moves changes nothing")
	c.noteDefragSpend(at.Add(time.Hour), nil)
	assert.Empty(t, c.defragSpent, "an hour after the move")
	same()
}

// BenchmarkEncodeStateUnchanged is a cycle's cost of the state when
// nothing in it changed, at 5,000 workloads (10,000 pods).
func BenchmarkEncodeStateUnchanged(b *testing.B) {
	st := stateShape{running: 1024, pending: 3976, nominated: 1024, claims: true, nsLen: 20, groupLen: 32}.build()
	c := &Controller{work: trackedOf(st), seq: st.Seq}
	c.encodeState()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, _, changed := c.encodeState(); changed {
			b.Fatal("changed")
		}
	}
}

// BenchmarkEncodeStateOneChange is its cost when one drain changed: one
// workload encoded again, the whole assembled and compressed.
func BenchmarkEncodeStateOneChange(b *testing.B) {
	st := stateShape{running: 1024, pending: 3976, nominated: 1024, claims: true, nsLen: 20, groupLen: 32}.build()
	c := &Controller{work: trackedOf(st), seq: st.Seq}
	c.encodeState()
	var victim *tracked
	for _, id := range slices.Sorted(maps.Keys(c.work)) {
		if c.work[id].drain != nil {
			victim = c.work[id]
			break
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		note := *victim.drain
		note.KillAsked = note.Deadline.Add(time.Duration(i))
		victim.drain = &note
		raw, _, _, changed := c.encodeState()
		if !changed {
			b.Fatal("unchanged")
		}
		if _, err := compress(raw); err != nil {
			b.Fatal(err)
		}
	}
}
