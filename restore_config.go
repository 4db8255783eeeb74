package fleet

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/fleetsched/fleet/quota"
)

// restorable refuses a snapshot Restore cannot honestly apply: an empty
// one (a zero Snapshot, not one a scheduler took), and one taken under a
// Config whose quota differs from cfg's, whose quota in force would
// silently undo the change. Each error says what to do instead.
func (s *Scheduler) restorable(snap Snapshot) error {
	if len(snap.Quota.Nodes) == 0 && snap.Fleet.GPUs == 0 {
		return refuse("restore", "", ErrInvalid, "empty snapshot (no fleet, no quota): "+
			"pass what Scheduler.Snapshot returned, or call New for a fresh scheduler")
	}
	if len(snap.ConfigQuota.Nodes) == 0 {
		return nil // taken before snapshots carried their Config's quota
	}
	was, err := quota.New(snap.ConfigQuota)
	if err != nil {
		return &Error{Op: "restore", Detail: "config quota", Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	if changed := quotaChanges(was.Spec(), s.configQuota.Spec()); len(changed) > 0 {
		return refuse("restore", "", ErrInvalidConfig, "the Config's quota differs from the one the snapshot was "+
			"taken under (%s), and the snapshot's quota in force would override it: Restore with the earlier "+
			"Config, then apply the change with SetQueue", strings.Join(changed, "; "))
	}
	return nil
}

// quotaChanges names what differs between two quota specs: flavors,
// resources, and each node added, removed or edited, in b's order then
// a's.
func quotaChanges(a, b quota.Spec) []string {
	var out []string
	if !reflect.DeepEqual(a.Flavors, b.Flavors) {
		out = append(out, fmt.Sprintf("flavors %v, now %v", a.Flavors, b.Flavors))
	}
	if !reflect.DeepEqual(a.Resources, b.Resources) {
		out = append(out, "resources")
	}
	old := map[string]quota.NodeSpec{}
	for _, n := range a.Nodes {
		old[n.Name] = n
	}
	seen := map[string]bool{}
	for _, n := range b.Nodes {
		seen[n.Name] = true
		o, ok := old[n.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("node %q added", n.Name))
		case !reflect.DeepEqual(o, n):
			out = append(out, fmt.Sprintf("node %q edited", n.Name))
		}
	}
	for _, n := range a.Nodes {
		if !seen[n.Name] {
			out = append(out, fmt.Sprintf("node %q removed", n.Name))
		}
	}
	return out
}
