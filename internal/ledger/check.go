package ledger

import (
	"fmt"
	"slices"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// CheckInvariants recounts the books from the records and compares them
// with the fleet and the quota tree. It returns the first difference:
//
//   - on every node, allocated = holders' GPUs + GPUs reserved for
//     nominations, and never more than capacity;
//   - a nomination's target GPUs on a node = what is reserved for it
//     there + what victims still holding GPUs there promise it;
//   - a victim never promises more GPUs of a node than it holds there;
//   - per queue and flavor, quota usage = holders + nominations;
//   - states: holders are Admitted or Draining, a drain record exists
//     exactly for Draining, beneficiaries are Pending, every victim a
//     nomination waits on is draining and promises it GPUs.
//
// It is O(workloads + nodes) and meant for tests.
func (l *Ledger) CheckInvariants() error {
	f, t := l.fleet, l.tree
	if err := l.checkSized(); err != nil {
		return err
	}
	held := make([]int, f.NumNodes())
	claimed := map[string]map[topology.NodeID]int{} // beneficiary -> node -> GPUs promised by victims
	usage := map[[2]int]int64{}                     // queue, flavor -> thousandths of GPU charged
	holders, indexed, numPromised := 0, 0, 0
	for id, r := range l.recs {
		if r.W.ID != id {
			return fmt.Errorf("record %q filed under %q", r.W.ID, id)
		}
		if !r.State.Valid() || r.State.Terminal() {
			return fmt.Errorf("%s: state %s in the books", id, r.State)
		}
		if (r.State == gang.Draining) != (r.Drain != nil) {
			return fmt.Errorf("%s: state %s with drain record %v", id, r.State, r.Drain != nil)
		}
		if (r.State == gang.Draining) != (l.draining[id] != nil) {
			return fmt.Errorf("%s: state %s, in the draining set %v", id, r.State, l.draining[id] != nil)
		}
		if _, ok := l.holders.Get(r); ok != r.State.HoldsGPUs() {
			return fmt.Errorf("%s: state %s, in the holders index %v", id, r.State, ok)
		}
		if len(r.MoveTo.Pods) > 0 && r.State != gang.Draining {
			return fmt.Errorf("%s: state %s with a move", id, r.State)
		}
		if !r.State.HoldsGPUs() {
			continue
		}
		holders++
		if err := r.checkSize(); err != nil {
			return err
		}
		if (len(r.Lost) > 0) != (l.degraded[id] != nil) {
			return fmt.Errorf("%s: %d pods lost, listed as degraded %v", id, len(r.Lost), l.degraded[id] != nil)
		}
		if _, in := l.index.Get(id); in != (len(r.Nodes) > 0) {
			return fmt.Errorf("%s: holds GPUs on %d nodes, indexed %v", id, len(r.Nodes), in)
		} else if in {
			indexed++
		}
		for _, x := range r.Nodes {
			if _, ok := slices.BinarySearch(l.byNode[x.Node], id); !ok {
				return fmt.Errorf("%s: holds GPUs on %s, not listed there", id, f.NodeName(x.Node))
			}
		}
		total := 0
		for _, x := range r.Nodes {
			held[x.Node] += x.GPUs
			total += x.GPUs
		}
		if total+r.lostGPUs() != r.GPUs() {
			return fmt.Errorf("%s: holds %d GPUs and waits for %d, its spec asks for %d", id, total, r.lostGPUs(), r.GPUs())
		}
		for _, c := range r.Charges() {
			if c.Resource == quota.GPU {
				usage[[2]int{int(r.Queue), int(c.Flavor)}] += c.Value
			}
		}
		if err := l.checkCharge(r); err != nil {
			return err
		}
		listed := l.promised.get(id) == r
		if promised := l.draining[id] != nil && r.Drain != nil && r.Drain.Promised(); promised != listed {
			return fmt.Errorf("%s: promised %v, in the promised list %v", id, promised, listed)
		} else if promised {
			numPromised++
		}
		if r.Drain == nil {
			continue
		}
		for _, c := range r.Drain.claims {
			if claimed[c.beneficiary] == nil {
				claimed[c.beneficiary] = map[topology.NodeID]int{}
			}
			// A victim promising GPUs to a nomination is one it waits on:
			// it must not start on GPUs still held.
			if n, ok := l.noms[c.beneficiary]; ok && !slices.Contains(n.WaitOn, id) {
				return fmt.Errorf("%s: promises GPUs to %s, whose nomination does not wait on it", id, c.beneficiary)
			}
			claimed[c.beneficiary][c.node] += c.gpus
			if r.unclaimedOn(c.node) < 0 {
				return fmt.Errorf("%s: promises more GPUs of %s than it holds", id, f.NodeName(c.node))
			}
			if !slices.Contains(r.Drain.Live, c.beneficiary) {
				return fmt.Errorf("%s: promises GPUs to %s, which it does not serve", id, c.beneficiary)
			}
		}
		for j, n := range r.Nodes {
			if j > 0 && r.Nodes[j-1].Node == n.Node {
				continue
			}
			_, listed := slices.BinarySearch(l.onNode[n.Node], id)
			if listed != r.Drain.Promised() {
				return fmt.Errorf("%s: promised %v, listed under %s %v", id, r.Drain.Promised(), f.NodeName(n.Node), listed)
			}
		}
	}
	listed := 0
	for _, ids := range l.byNode {
		listed += len(ids)
	}
	pairs := 0
	l.holders.Ascend(func(r *Record) bool {
		pairs += len(r.podNodes())
		return true
	})
	if listed != pairs {
		return fmt.Errorf("%d holders listed on nodes, %d holder-node pairs", listed, pairs)
	}
	for n, ids := range l.onNode {
		for _, id := range ids {
			r := l.recs[id]
			if r == nil || l.promised.get(id) != r || !slices.ContainsFunc(r.Nodes, func(x placement.NodeGPUs) bool { return x.Node == n }) {
				return fmt.Errorf("%s: listed as a promised victim under %s, where it holds nothing promised", id, f.NodeName(n))
			}
		}
	}
	if !l.promised.ordered() {
		return fmt.Errorf("the promised victims are out of ID order")
	}
	if numPromised != len(l.promised) {
		return fmt.Errorf("%d victims promised, %d in the promised list", numPromised, len(l.promised))
	}
	if holders != l.holders.Len() || indexed != l.index.Len() {
		return fmt.Errorf("holders index has %d entries, the search index %d, %d records hold GPUs", l.holders.Len(), l.index.Len(), holders)
	}
	reserved := make([]int, f.NumNodes())
	for b, n := range l.noms {
		r, ok := l.recs[b]
		if !ok || r.State != gang.Pending {
			return fmt.Errorf("nomination of %q, which is not pending", b)
		}
		usage[[2]int{int(r.Queue), int(r.Flavor)}] += wholeRequest(r.GPUs()).MilliGPUs
		got := map[topology.NodeID]int{}
		for _, x := range n.reserved {
			reserved[x.Node] += x.GPUs
			got[x.Node] += x.GPUs
		}
		for node, g := range claimed[b] {
			got[node] += g
		}
		for _, x := range n.Target.NodeGPUs() {
			if got[x.Node] != x.GPUs {
				return fmt.Errorf("nomination of %q: %d GPUs of %s, reserved and promised %d", b, x.GPUs, f.NodeName(x.Node), got[x.Node])
			}
			delete(got, x.Node)
		}
		if len(got) > 0 {
			return fmt.Errorf("nomination of %q: GPUs reserved or promised off its target", b)
		}
		for _, v := range n.WaitOn {
			x, ok := l.draining[v]
			if !ok || claimed[b] == nil || !slices.ContainsFunc(x.Drain.claims, func(c claim) bool { return c.beneficiary == b }) {
				return fmt.Errorf("nomination of %q waits on %q, which promises it nothing", b, v)
			}
		}
	}
	for b := range claimed {
		if _, ok := l.noms[b]; !ok {
			return fmt.Errorf("GPUs promised to %q, which has no nomination", b)
		}
	}
	moving := make([]int, f.NumNodes())
	l.holders.Ascend(func(r *Record) bool {
		for _, x := range r.MoveTo.NodeGPUs() {
			moving[x.Node] += x.GPUs
		}
		return true
	})
	for n := range topology.NodeID(f.NumNodes()) {
		if reserved[n] != l.reserved[n] {
			return fmt.Errorf("node %s: %d GPUs reserved in the books, nominations hold %d", f.NodeName(n), l.reserved[n], reserved[n])
		}
		if got := held[n] + reserved[n] + moving[n]; got != f.WholeHeld(n) {
			return fmt.Errorf("node %s: %d GPUs held whole, holders %d + reserved %d + moving %d", f.NodeName(n), f.WholeHeld(n), held[n], reserved[n], moving[n])
		}
		if l.scratch.Allocated(n) != f.Allocated(n) || l.scratch.Health(n) != f.Health(n) || l.scratch.MilliUsed(n) != f.MilliUsed(n) {
			return fmt.Errorf("node %s: the mirror has %d allocated (%s), the fleet %d (%s)", f.NodeName(n),
				l.scratch.Allocated(n), l.scratch.Health(n), f.Allocated(n), f.Health(n))
		}
		if f.Allocated(n) > f.Capacity(n) {
			return fmt.Errorf("node %s: allocated %d of %d", f.NodeName(n), f.Allocated(n), f.Capacity(n))
		}
	}
	for q := range quota.NodeID(t.NumNodes()) {
		if !t.IsQueue(q) {
			continue
		}
		for fl := range quota.FlavorID(t.NumFlavors()) {
			if got, want := t.UsageOf(q, fl, quota.GPU), usage[[2]int{int(q), int(fl)}]; got != want {
				return fmt.Errorf("queue %s flavor %s: usage %d thousandths of GPU, holders and nominations %d", t.Name(q), t.FlavorName(fl), got, want)
			}
		}
	}
	return l.checkClaims()
}
