package preempt

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Drains is the bookkeeping of accepted plans: which GPUs are nominated
// for which beneficiary, which victims it still waits for, and when they
// must be killed. The scheduler drives it; it changes no fleet or tree and
// says, at each step, which GPUs the scheduler must allocate or release in
// the topology (the convention is in the package manual). Every change
// costs O(victims x nodes) of the plans involved. It is not safe for
// concurrent use; the zero value is not ready, use NewDrains.
type Drains struct {
	noms      map[string]*nomination
	victims   map[string]*drainVictim
	nominated map[topology.NodeID]int // promised: reserved + claims on victims still running
	reserved  map[topology.NodeID]int // allocated in the topology on behalf of nominations
	// onNode lists, per node, the tracked victims holding GPUs there, in
	// ID order: Accept looks up only the victims on the target's nodes
	// instead of sorting every tracked victim.
	onNode map[topology.NodeID][]string
}

type nomination struct {
	target   placement.Assignment
	waitOn   []string             // victims not yet exited: its own and those it claims from
	reserved []placement.NodeGPUs // GPUs it holds in the topology, per node
	readyBy  time.Time
}

type drainVictim struct {
	primary  string // beneficiary whose plan chose it; "" once that dissolved
	deadline time.Time
	nodes    []placement.NodeGPUs
	claims   []claim
	reported bool
}

// claim is a part of a victim's GPUs on one node promised to a beneficiary.
type claim struct {
	beneficiary string
	node        topology.NodeID
	gpus        int
}

// NewDrains returns empty bookkeeping.
func NewDrains() *Drains {
	return &Drains{
		noms:      map[string]*nomination{},
		victims:   map[string]*drainVictim{},
		nominated: map[topology.NodeID]int{},
		reserved:  map[topology.NodeID]int{},
		onNode:    map[topology.NodeID][]string{},
	}
}

// Accept records plan: plan.Target's GPUs are nominated for the
// beneficiary at once. Each target node's GPUs come first from the plan's
// own victims there (in eviction order), then from GPUs of victims of
// earlier plans that no nomination claims (in ID order), and the rest from
// free GPUs: that rest is returned, and the scheduler must allocate it in
// the topology now so that nobody else takes it. The scheduler also
// records the beneficiary's quota usage now (it is admitted, waiting for
// its victims). A plan for a beneficiary already nominated, or naming a
// victim already tracked or twice, is refused and nothing changes.
func (d *Drains) Accept(plan Plan, now time.Time) ([]placement.NodeGPUs, error) {
	b := plan.Beneficiary
	if b == "" {
		return nil, &DrainError{ID: b, Detail: "plan without beneficiary"}
	}
	if _, ok := d.noms[b]; ok {
		return nil, &DrainError{ID: b, Detail: "already nominated"}
	}
	// waiting is the set of victims the nomination waits for: the plan's
	// own (which also catches a victim named twice in O(V)) and those of
	// earlier plans it claims from.
	waiting := make(map[string]struct{}, len(plan.Victims))
	for _, v := range plan.Victims {
		_, tracked := d.victims[v.ID]
		_, twice := waiting[v.ID]
		if tracked || twice || v.ID == "" || v.ID == b {
			return nil, &DrainError{ID: v.ID, Detail: "victim already tracked, repeated or invalid"}
		}
		waiting[v.ID] = struct{}{}
	}
	nom := &nomination{target: plan.Target.Clone(), readyBy: plan.ReadyBy}
	fresh := make([]*drainVictim, len(plan.Victims))
	for j, v := range plan.Victims {
		fresh[j] = &drainVictim{primary: b, deadline: v.Deadline, nodes: slices.Clone(v.Nodes)}
		nom.waitOn = append(nom.waitOn, v.ID)
	}
	var reserve []placement.NodeGPUs
	for _, x := range plan.Target.NodeGPUs() {
		need := x.GPUs
		for j := range fresh {
			if need == 0 {
				break
			}
			if g := min(need, fresh[j].unclaimedOn(x.Node)); g > 0 {
				fresh[j].claims = append(fresh[j].claims, claim{b, x.Node, g})
				need -= g
			}
		}
		// Earlier plans' victims on this node, in ID order (a victim
		// elsewhere has nothing unclaimed here).
		for _, id := range d.onNode[x.Node] {
			if need == 0 {
				break
			}
			v := d.victims[id]
			if g := min(need, v.unclaimedOn(x.Node)); g > 0 {
				v.claims = append(v.claims, claim{b, x.Node, g})
				need -= g
				if _, ok := waiting[id]; !ok {
					waiting[id] = struct{}{}
					nom.waitOn = append(nom.waitOn, id)
				}
			}
		}
		d.nominated[x.Node] += x.GPUs
		if need > 0 {
			reserve = append(reserve, placement.NodeGPUs{Node: x.Node, GPUs: need})
			d.reserved[x.Node] += need
		}
	}
	nom.reserved = slices.Clone(reserve)
	for j, v := range plan.Victims {
		d.track(v.ID, fresh[j])
	}
	d.noms[b] = nom
	return reserve, nil
}

// track starts tracking victim id and indexes it under its nodes.
func (d *Drains) track(id string, v *drainVictim) {
	d.victims[id] = v
	for j, x := range v.nodes {
		if j > 0 && slices.ContainsFunc(v.nodes[:j], func(y placement.NodeGPUs) bool { return y.Node == x.Node }) {
			continue
		}
		list := d.onNode[x.Node]
		i, _ := slices.BinarySearch(list, id)
		d.onNode[x.Node] = slices.Insert(list, i, id)
	}
}

// untrack stops tracking victim id and removes it from the node index.
func (d *Drains) untrack(id string) {
	v, ok := d.victims[id]
	if !ok {
		return
	}
	delete(d.victims, id)
	for _, x := range v.nodes {
		list := d.onNode[x.Node]
		i, found := slices.BinarySearch(list, id)
		if !found {
			continue // a node listed twice: already removed
		}
		if list = slices.Delete(list, i, i+1); len(list) == 0 {
			delete(d.onNode, x.Node)
		} else {
			d.onNode[x.Node] = list
		}
	}
}

func (v *drainVictim) unclaimedOn(n topology.NodeID) int {
	g := 0
	for _, x := range v.nodes {
		if x.Node == n {
			g += x.GPUs
		}
	}
	for _, c := range v.claims {
		if c.node == n {
			g -= c.gpus
		}
	}
	return g
}

// Claims returns, per node in node order, the GPUs of a tracked victim
// that nominations claim. When the victim exits, the scheduler releases
// in the topology everything it held except these (or releases all and
// allocates these back), then calls VictimExited.
func (d *Drains) Claims(victim string) []placement.NodeGPUs {
	v, ok := d.victims[victim]
	if !ok {
		return nil
	}
	return mergeClaims(v.claims, "")
}

func mergeClaims(cs []claim, only string) []placement.NodeGPUs {
	var out []placement.NodeGPUs
	for _, c := range cs {
		if only != "" && c.beneficiary != only {
			continue
		}
		out = addGPUs(out, c.node, c.gpus)
	}
	return out
}

// addGPUs adds g GPUs of node n to a list kept in node order.
func addGPUs(list []placement.NodeGPUs, n topology.NodeID, g int) []placement.NodeGPUs {
	i, found := slices.BinarySearchFunc(list, n, func(x placement.NodeGPUs, n topology.NodeID) int { return cmp.Compare(x.Node, n) })
	if found {
		list[i].GPUs += g
		return list
	}
	return slices.Insert(list, i, placement.NodeGPUs{Node: n, GPUs: g})
}

// VictimExited records that a tracked victim ended (drained or killed):
// its claimed GPUs now belong to their nominations (they stay allocated in
// the topology, see Claims). It returns the beneficiary whose plan chose
// it ("" when that nomination has dissolved) and whether it was tracked.
func (d *Drains) VictimExited(victim string) (beneficiary string, ok bool) {
	v, ok := d.victims[victim]
	if !ok {
		return "", false
	}
	for _, c := range v.claims {
		nom := d.noms[c.beneficiary]
		nom.reserved = addGPUs(nom.reserved, c.node, c.gpus)
		d.reserved[c.node] += c.gpus
	}
	for _, b := range v.waiters() {
		nom := d.noms[b]
		nom.waitOn = slices.DeleteFunc(nom.waitOn, func(id string) bool { return id == victim })
	}
	d.untrack(victim)
	return v.primary, true
}

// waiters are the nominations waiting for v, in a fixed order.
func (v *drainVictim) waiters() []string {
	var out []string
	if v.primary != "" {
		out = append(out, v.primary)
	}
	for _, c := range v.claims {
		if !slices.Contains(out, c.beneficiary) {
			out = append(out, c.beneficiary)
		}
	}
	return out
}

// Due returns the tracked victims whose deadline has passed at now and
// that Due has not returned before, by deadline then ID: the host kills
// them. Once killed they exit like any victim (VictimExited).
func (d *Drains) Due(now time.Time) []string {
	var out []string
	for id, v := range d.victims {
		if !v.reported && !v.deadline.After(now) {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if c := d.victims[a].deadline.Compare(d.victims[b].deadline); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for _, id := range out {
		d.victims[id].reported = true
	}
	return out
}

// Ready reports whether every victim the beneficiary waits for is gone:
// its whole target is then allocated in the topology on its behalf, and
// the scheduler starts it there and calls Complete.
func (d *Drains) Ready(beneficiary string) bool {
	nom, ok := d.noms[beneficiary]
	return ok && len(nom.waitOn) == 0
}

// Pending returns how many victims the beneficiary still waits for and
// the time by which they are all due.
func (d *Drains) Pending(beneficiary string) (victimsLeft int, readyBy time.Time) {
	nom, ok := d.noms[beneficiary]
	if !ok {
		return 0, time.Time{}
	}
	return len(nom.waitOn), nom.readyBy
}

// Complete ends a ready nomination: the beneficiary starts on the returned
// target, whose GPUs are already allocated in the topology, so the
// scheduler changes nothing there. It is refused when the beneficiary is
// unknown or not ready.
func (d *Drains) Complete(beneficiary string) (placement.Assignment, error) {
	nom, ok := d.noms[beneficiary]
	if !ok || len(nom.waitOn) > 0 {
		return placement.Assignment{}, &DrainError{ID: beneficiary, Detail: "not nominated or not ready"}
	}
	for _, x := range nom.target.NodeGPUs() {
		d.dec(d.nominated, x.Node, x.GPUs)
		d.dec(d.reserved, x.Node, x.GPUs)
	}
	delete(d.noms, beneficiary)
	return nom.target, nil
}

// Dissolve cancels a nomination (the beneficiary was cancelled or admitted
// elsewhere). It returns the GPUs that were allocated on its behalf: the
// scheduler releases them in the topology, so they are free again. Its
// claims on victims still running vanish: those victims' GPUs are released
// when they exit. A victim no other nomination needs stops being tracked
// (it keeps draining; the scheduler handles its exit as any workload's).
func (d *Drains) Dissolve(beneficiary string) []placement.NodeGPUs {
	nom, ok := d.noms[beneficiary]
	if !ok {
		return nil
	}
	for _, x := range nom.target.NodeGPUs() {
		d.dec(d.nominated, x.Node, x.GPUs)
	}
	for _, x := range nom.reserved {
		d.dec(d.reserved, x.Node, x.GPUs)
	}
	for _, id := range nom.waitOn {
		v := d.victims[id]
		v.claims = slices.DeleteFunc(v.claims, func(c claim) bool { return c.beneficiary == beneficiary })
		if v.primary == beneficiary {
			v.primary = ""
		}
		if v.primary == "" && len(v.claims) == 0 {
			d.untrack(id)
		}
	}
	delete(d.noms, beneficiary)
	return nom.reserved
}

func (d *Drains) dec(m map[topology.NodeID]int, n topology.NodeID, g int) {
	m[n] -= g
	switch {
	case m[n] == 0:
		delete(m, n)
	case m[n] < 0:
		panic("preempt: nominated GPUs below zero")
	}
}

// Nominated is the GPUs of node n promised to nominations: those already
// allocated on their behalf (Reserved) plus those victims still hold.
func (d *Drains) Nominated(n topology.NodeID) int { return d.nominated[n] }

// Reserved is the part of Nominated(n) allocated in the topology on
// behalf of nominations (no victim holds it any more).
func (d *Drains) Reserved(n topology.NodeID) int { return d.reserved[n] }

// Beneficiary returns the beneficiary whose plan chose a tracked victim
// ("" once that nomination has dissolved while others still claim it).
func (d *Drains) Beneficiary(victim string) (string, bool) {
	v, ok := d.victims[victim]
	if !ok {
		return "", false
	}
	return v.primary, true
}

// Nominations lists the beneficiaries with a nomination, sorted.
func (d *Drains) Nominations() []string { return slices.Sorted(maps.Keys(d.noms)) }

// Victims lists the tracked victims, sorted.
func (d *Drains) Victims() []string { return slices.Sorted(maps.Keys(d.victims)) }

// Tracked implements Claims: id is a victim some nomination waits for. A
// nil Drains tracks nothing.
func (d *Drains) Tracked(id string) bool {
	if d == nil {
		return false
	}
	_, ok := d.victims[id]
	return ok
}

// Unclaimed implements Claims: of the gpus tracked victim id holds on node
// n, those no nomination claims. An untracked workload's are all
// unclaimed.
func (d *Drains) Unclaimed(id string, n topology.NodeID, gpus int) int {
	if d == nil {
		return gpus
	}
	v, ok := d.victims[id]
	if !ok {
		return gpus
	}
	g := gpus
	for _, c := range v.claims {
		if c.node == n {
			g -= c.gpus
		}
	}
	return max(0, g)
}

// A Drains is the Claims of the accepted nominations it keeps.
var _ Claims = (*Drains)(nil)
