package kube

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetsched/fleet"
)

// The ConfigMap of the State.
const (
	// StateConfigMap is the ConfigMap, in Config.Namespace, where the
	// leader keeps what the pods do not show.
	StateConfigMap = "fleet-scheduler-state"
	// StateKey is its binaryData key: the State as gzip-compressed JSON.
	StateKey = "state.json.gz"
)

// MaxStateBytes is the most the compressed state may take: a ConfigMap
// holds 1 MiB of data, and some room is left for its metadata. A state
// larger than this is not written (the error is logged): a failover then
// rebuilds from the pods alone.
const MaxStateBytes = 1<<20 - 16<<10

// State is what the controller keeps in the API server beside the pods,
// because the pods do not show it: the host's submission order, where
// every pod of a running gang belongs (a pod deleted while no leader ran
// keeps its place), the admissions that borrow, and of every drain and nomination what fleet.Adoption takes beyond the
// pods' annotations and status: the claims, a move's new place, the
// nomination's nodes and ready time. It is written before the actions
// of a cycle are carried out, so that a leader killed between the two
// leaves what it was about to do, and read back when a leader rebuilds.
type State struct {
	// Seq is the last submission number the controller gave.
	Seq uint64 `json:"seq"`
	// DefragSpent is what automatic defragmentation spent within the
	// last hour (fleet.Scheduler.AdoptDefragSpent), oldest first.
	DefragSpent []fleet.DefragSpend `json:"defragSpent,omitempty"`
	// Work is, per workload key, what its pods do not show.
	Work map[string]WorkState `json:"work,omitempty"`
}

// WorkState is the state kept for one workload.
type WorkState struct {
	// Seq is its submission number (fleet.Adoption.Seq).
	Seq uint64 `json:"seq,omitempty"`
	// Nodes is, for a running gang of several pods, the node of every
	// pod index (the admission's or a replacement's). The pods' own
	// nodes say which of them are still there.
	Nodes []string `json:"nodes,omitempty"`
	// Borrowing is the admission's Borrowing.
	Borrowing bool `json:"borrowing,omitempty"`
	// Flavors is the admission's Flavors: the flavor of each pod set's
	// named resources in a queue whose resource groups split them.
	Flavors []map[string]string `json:"flavors,omitempty"`
	// Drain is its drain in progress.
	Drain *DrainState `json:"drain,omitempty"`
	// Nominated is, for pending work, the node of every pod of its
	// nomination, and ReadyBy the nomination's ReadyBy.
	Nominated []string  `json:"nominated,omitempty"`
	ReadyBy   time.Time `json:"readyBy,omitzero"`
}

// DrainState is a drain in progress: the note its pods carry, its GPUs
// promised to nominations, and a move's new place.
type DrainState struct {
	DrainNote
	// Claims are its GPUs promised to nominations
	// (fleet.AdoptedDrain.Claims).
	Claims []fleet.ClaimView `json:"claims,omitempty"`
	// MoveTo is, for a defragmentation move, its new place.
	MoveTo []fleet.PodAssignment `json:"moveTo,omitempty"`
}

// EncodeState is the state as StateKey holds it: JSON (map keys sorted,
// so equal states encode alike), gzip-compressed.
func EncodeState(st *State) ([]byte, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return compress(raw)
}

func compress(raw []byte) ([]byte, error) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DecodeState reads what EncodeState wrote.
func DecodeState(data []byte) (State, error) {
	var st State
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return st, fmt.Errorf("kube: state: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return st, fmt.Errorf("kube: state: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("kube: state: %w", err)
	}
	return st, nil
}

// workState is what the state keeps of one tracked workload.
func workState(t *tracked) WorkState {
	ws := WorkState{Seq: t.seq}
	if t.running {
		ws.Borrowing, ws.Flavors = t.borrowing, t.flavors
		if len(t.slots) > 1 {
			ws.Nodes = t.slots
		}
		if t.drain != nil {
			ws.Drain = &DrainState{DrainNote: *t.drain, Claims: t.claims, MoveTo: t.moveTo}
		}
	} else if t.nominated != nil {
		ws.Nominated, ws.ReadyBy = t.nominated, t.readyBy
	}
	return ws
}

// stateOf is the state of the work tracked now. c.mu is held.
func (c *Controller) stateOf() State {
	st := State{Seq: c.seq, DefragSpent: c.defragSpent, Work: make(map[string]WorkState, len(c.work))}
	for id, t := range c.work {
		st.Work[id] = workState(t)
	}
	return st
}

// persist writes the state when it differs from what was written last,
// before the actions of a cycle are carried out. A failed write is
// logged and the actions go ahead: holding them back would leave the
// scheduler's decisions undone, and the pods' annotations still carry
// the drains. Only the worker calls it.
func (c *Controller) persist(ctx context.Context) {
	c.mu.Lock()
	if c.s == nil {
		c.mu.Unlock()
		return
	}
	raw, seq, works, changed := c.encodeState()
	c.mu.Unlock()
	if !changed {
		return
	}
	sum := sha256.Sum256(raw)
	if sum == c.stateSum {
		return
	}
	data, err := compress(raw)
	if err != nil {
		c.log.Error("state", "err", err)
		return
	}
	if len(data) > MaxStateBytes {
		// A state left behind would be stale: it is replaced by an empty
		// one, and a failover reads the pods alone.
		c.log.Error("state too large for its ConfigMap: a failover rebuilds from the pods alone",
			"bytes", len(data), "limit", MaxStateBytes, "workloads", works)
		if data, err = EncodeState(&State{Seq: seq}); err != nil {
			return
		}
	}
	if err := c.writeState(ctx, data); err != nil {
		if ctx.Err() == nil {
			c.log.Error("state not written", "configmap", c.cfg.Namespace+"/"+StateConfigMap, "err", err)
		}
		c.mu.Lock()
		c.stateForce = true
		c.mu.Unlock()
		return
	}
	c.stateSum = sum
}

// encodeState encodes again the workloads whose part of the state
// changed since the last call and, when any did (or work came or went),
// returns the State's JSON, as json.Marshal would write it: a cycle that
// changes nothing costs a comparison per workload. c.mu is held.
func (c *Controller) encodeState() (raw []byte, seq uint64, works int, changed bool) {
	changed = c.stateForce || len(c.work) != c.keptWorks || c.seq != c.keptSeq
	for _, t := range c.work {
		ws := workState(t)
		if t.keptJSON != nil && ws.equal(&t.kept) {
			continue
		}
		t.kept = ws.clone()
		b, err := json.Marshal(&t.kept)
		if err != nil {
			panic("kube: encoding a workload's state: " + err.Error())
		}
		t.keptJSON, changed = b, true
	}
	if !changed {
		return nil, 0, 0, false
	}
	c.stateForce, c.keptWorks, c.keptSeq = false, len(c.work), c.seq
	var b bytes.Buffer
	b.WriteString(`{"seq":`)
	b.WriteString(strconv.FormatUint(c.seq, 10))
	if len(c.defragSpent) > 0 {
		spent, err := json.Marshal(c.defragSpent)
		if err != nil {
			panic("kube: encoding the defragmentation budget: " + err.Error())
		}
		b.WriteString(`,"defragSpent":`)
		b.Write(spent)
	}
	if len(c.work) > 0 {
		b.WriteString(`,"work":{`)
		for i, id := range slices.Sorted(maps.Keys(c.work)) {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(id)
			b.Write(k)
			b.WriteByte(':')
			b.Write(c.work[id].keptJSON)
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes(), c.seq, len(c.work), true
}

// equal reports whether two workload states are the same.
func (ws *WorkState) equal(o *WorkState) bool {
	if ws.Seq != o.Seq || ws.Borrowing != o.Borrowing || !ws.ReadyBy.Equal(o.ReadyBy) ||
		!slices.EqualFunc(ws.Flavors, o.Flavors, maps.Equal) ||
		!slices.Equal(ws.Nodes, o.Nodes) || !slices.Equal(ws.Nominated, o.Nominated) || (ws.Drain == nil) != (o.Drain == nil) {
		return false
	}
	if ws.Drain == nil {
		return true
	}
	a, b := ws.Drain, o.Drain
	return a.Reason == b.Reason && a.Since.Equal(b.Since) && a.Deadline.Equal(b.Deadline) && a.KillAsked.Equal(b.KillAsked) &&
		slices.Equal(a.Beneficiaries, b.Beneficiaries) && slices.Equal(a.Claims, b.Claims) && slices.Equal(a.MoveTo, b.MoveTo)
}

// clone copies the slices the tracked workload may change in place.
func (ws WorkState) clone() WorkState {
	ws.Nodes, ws.Nominated = slices.Clone(ws.Nodes), slices.Clone(ws.Nominated)
	if ws.Drain != nil {
		d := *ws.Drain
		d.Beneficiaries, d.Claims, d.MoveTo = slices.Clone(d.Beneficiaries), slices.Clone(d.Claims), slices.Clone(d.MoveTo)
		ws.Drain = &d
	}
	return ws
}

// writeState creates or updates the state ConfigMap. A conflict (another
// writer since the last read) is retried once over the current version.
func (c *Controller) writeState(ctx context.Context, data []byte) error {
	cms := c.client.CoreV1().ConfigMaps(c.cfg.Namespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: StateConfigMap, Namespace: c.cfg.Namespace, ResourceVersion: c.stateRV,
			Labels: map[string]string{"app.kubernetes.io/managed-by": c.cfg.SchedulerName}},
		BinaryData: map[string][]byte{StateKey: data},
	}
	for try := 0; ; try++ {
		var got *corev1.ConfigMap
		var err error
		if cm.ResourceVersion == "" {
			got, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = apierrors.NewConflict(corev1.Resource("configmaps"), StateConfigMap, err)
			}
		} else {
			got, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			if apierrors.IsNotFound(err) {
				cm.ResourceVersion = ""
				continue
			}
		}
		if err == nil {
			c.stateRV = got.ResourceVersion
			return nil
		}
		if !apierrors.IsConflict(err) || try > 0 {
			return err
		}
		cur, gerr := cms.Get(ctx, StateConfigMap, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			cm.ResourceVersion = ""
		case gerr != nil:
			return gerr
		default:
			cm.ResourceVersion = cur.ResourceVersion
		}
	}
}

// loadState reads the state ConfigMap. A missing one is the empty state;
// an unreadable one is logged and read as empty (the pods alone then
// rebuild the scheduler). Only an API failure is an error.
func (c *Controller) loadState(ctx context.Context) (State, error) {
	cm, err := c.client.CoreV1().ConfigMaps(c.cfg.Namespace).Get(ctx, StateConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		c.stateRV = ""
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("kube: state ConfigMap %s/%s: %w", c.cfg.Namespace, StateConfigMap, err)
	}
	c.stateRV = cm.ResourceVersion
	st, err := DecodeState(cm.BinaryData[StateKey])
	if err != nil {
		c.log.Error("state unreadable: rebuilding from the pods alone", "err", err)
		return State{}, nil
	}
	return st, nil
}
