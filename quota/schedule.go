package quota

import (
	"fmt"
	"slices"
	"time"
)

// ScheduleSpec is quota that follows the clock, as plain data: rules that
// replace a node's quota of one flavor while their window is in force
// ("batch: 0 GPUs 08:00-20:00 on weekdays", "research: 1,024 GPUs from
// Monday 06:00 to Friday 18:00 for a booking"). Where several rules of the
// same node and flavor are in force, the last one listed wins, so a dated
// exception goes after the weekly rule it overrides. Outside every rule the
// base Spec's quota applies.
type ScheduleSpec struct {
	Rules []ScheduleRule `json:"rules,omitempty"` // the rules, later ones winning
}

// ScheduleRule replaces node Node's quota for Quota.Flavor (nominal,
// borrowing and lending limits, resources) while Window is in force.
type ScheduleRule struct {
	Node   string      `json:"node"`   // the cohort or queue
	Window Window      `json:"window"` // when the rule is in force
	Quota  FlavorQuota `json:"quota"`  // its quota then, for Quota.Flavor
}

// NodeQuota is the quota of one node and flavor in force at an instant.
type NodeQuota struct {
	Node  string      // the cohort or queue
	Quota FlavorQuota // its quota in force
}

// Schedule is a checked ScheduleSpec over a base Spec, read in one
// location. It is immutable and safe to share; it owns no clock: every
// question takes the instant it is about.
type Schedule struct {
	base  *Tree // the base quota, for IDs, names and base values
	loc   *time.Location
	spec  ScheduleSpec
	rules []rule
	// pairs lists every scheduled (node, flavor), in order of first
	// appearance among the rules; byPair[i] the indexes of its rules.
	pairs  []pair
	byPair [][]int
}

type rule struct {
	node   NodeID
	flavor FlavorID
	window Window
	quota  FlavorQuota
}

type pair struct {
	node   NodeID
	flavor FlavorID
}

// NewSchedule checks spec against base and returns the Schedule that reads
// its windows in loc (nil means UTC). It refuses, with a *SpecError naming
// the rule's node, flavor and field (wrapping ErrInvalidSchedule and the
// rule broken): an unknown node or flavor, a flavor the node does not list
// in base, a malformed window, and a quota that SetQuota would refuse.
func NewSchedule(base Spec, spec ScheduleSpec, loc *time.Location) (*Schedule, error) {
	t, err := New(base)
	if err != nil {
		return nil, err
	}
	if loc == nil {
		loc = time.UTC
	}
	s := &Schedule{base: t, loc: loc, spec: cloneScheduleSpec(spec)}
	index := map[pair]int{}
	for i, r := range s.spec.Rules {
		at := fmt.Sprintf("rules[%d].", i)
		bad := func(field, detail string, err error) error {
			return &SpecError{Node: r.Node, Flavor: r.Quota.Flavor, Field: at + field, Detail: detail, Err: fmt.Errorf("%w: %w", ErrInvalidSchedule, err)}
		}
		n, ok := t.Node(r.Node)
		if !ok {
			return nil, bad("node", "", ErrUnknownNode)
		}
		f, ok := t.Flavor(r.Quota.Flavor)
		if !ok {
			return nil, bad("quota.flavor", "", ErrUnknownFlavor)
		}
		if !t.Serves(n, f) {
			return nil, bad("quota.flavor", "the base quota of the node does not list it", ErrFlavorNotServed)
		}
		if field, detail, ok := r.Window.check(); !ok {
			return nil, bad("window."+field, detail, ErrInvalidSchedule)
		}
		// The quota must be one SetQuota accepts on the base tree.
		if err := t.Clone().SetQuota(n, r.Quota); err != nil {
			return nil, bad("quota", err.Error(), err)
		}
		p := pair{n, f}
		k, seen := index[p]
		if !seen {
			k = len(s.pairs)
			index[p] = k
			s.pairs = append(s.pairs, p)
			s.byPair = append(s.byPair, nil)
		}
		s.byPair[k] = append(s.byPair[k], len(s.rules))
		s.rules = append(s.rules, rule{node: n, flavor: f, window: r.Window, quota: r.Quota})
	}
	return s, nil
}

func cloneScheduleSpec(s ScheduleSpec) ScheduleSpec {
	out := ScheduleSpec{Rules: slices.Clone(s.Rules)}
	for i := range out.Rules {
		r := &out.Rules[i]
		r.Window.Days = slices.Clone(r.Window.Days)
		r.Quota.Resources = slices.Clone(r.Quota.Resources)
	}
	return out
}

// Spec returns the rules as given. The caller owns the copy.
func (s *Schedule) Spec() ScheduleSpec { return cloneScheduleSpec(s.spec) }

// Base returns the base quota configuration.
func (s *Schedule) Base() Spec { return s.base.Spec() }

// Location is where the windows' days and times of day are read.
func (s *Schedule) Location() *time.Location { return s.loc }

// inForce returns the rule of pair k in force at t, or -1 when none is.
func (s *Schedule) inForce(k int, t time.Time) int {
	rs := s.byPair[k]
	for i := len(rs) - 1; i >= 0; i-- {
		if s.rules[rs[i]].window.contains(t, s.loc) {
			return rs[i]
		}
	}
	return -1
}

func (s *Schedule) quotaOf(k int, t time.Time) FlavorQuota {
	if r := s.inForce(k, t); r >= 0 {
		return s.rules[r].quota
	}
	p := s.pairs[k]
	return s.base.Quota(p.node, p.flavor)
}

// At returns the quota in force at t of every scheduled node and flavor, in
// order of first appearance among the rules: the rule in force, or the base
// quota. Applying each with Tree.SetQuota brings a tree built from the base
// to the quota of that instant. The caller owns the slice.
func (s *Schedule) At(t time.Time) []NodeQuota {
	out := make([]NodeQuota, len(s.pairs))
	for k, p := range s.pairs {
		q := s.quotaOf(k, t)
		q.Resources = slices.Clone(q.Resources)
		out[k] = NodeQuota{Node: s.base.Name(p.node), Quota: q}
	}
	return out
}

// SpecAt returns the base Spec with the quota in force at t.
func (s *Schedule) SpecAt(t time.Time) Spec {
	tree := s.base.Clone()
	for k, p := range s.pairs {
		if err := tree.SetQuota(p.node, s.quotaOf(k, t)); err != nil {
			panic("quota: a checked schedule rule refused: " + err.Error())
		}
	}
	return tree.Spec()
}

// Nominal returns the nominal quota of the node and flavor called node and
// flavor in force at t, and false when the base has no such pair.
func (s *Schedule) Nominal(node, flavor string, t time.Time) (int64, bool) {
	n, ok1 := s.base.Node(node)
	f, ok2 := s.base.Flavor(flavor)
	if !ok1 || !ok2 || !s.base.Serves(n, f) {
		return 0, false
	}
	for k, p := range s.pairs {
		if p == (pair{n, f}) {
			return s.quotaOf(k, t).Nominal, true
		}
	}
	return s.base.Nominal(n, f), true
}

// Guaranteed returns the sum of the nominal quotas of every node for the
// flavor called flavor in force at t: what the tree promises at that
// instant. It is 0 for an unknown flavor.
func (s *Schedule) Guaranteed(flavor string, t time.Time) int64 {
	f, ok := s.base.Flavor(flavor)
	if !ok {
		return 0
	}
	sum := s.base.nominalSum[f] / milli
	for k, p := range s.pairs {
		if p.flavor == f {
			if r := s.inForce(k, t); r >= 0 {
				sum += s.rules[r].quota.Nominal - s.base.Nominal(p.node, f)
			}
		}
	}
	return sum
}

// NextChange returns the first instant after t where some rule's window
// opens or closes, and false when no rule ever changes again. A boundary
// need not change a value (a rule may hand over to an equal one), but every
// change of value falls on a boundary: checking the quota at t and at
// each boundary checks every instant.
func (s *Schedule) NextChange(after time.Time) (time.Time, bool) {
	var best time.Time
	for i := range s.rules {
		if c, ok := s.rules[i].window.next(after, s.loc); ok && (best.IsZero() || c.Before(best)) {
			best = c
		}
	}
	return best, !best.IsZero()
}

// Horizon returns an instant after which the schedule only repeats what it
// did in the week before: every dated bound of every rule has passed (counted
// from from) and a further eight days are covered. Checking from from to the
// horizon checks every future instant.
func (s *Schedule) Horizon(from time.Time) time.Time {
	last := from
	for _, r := range s.rules {
		for _, b := range [2]time.Time{r.window.From, r.window.Until} {
			if b.After(last) {
				last = b
			}
		}
	}
	return last.AddDate(0, 0, 8)
}

// ValidateCapacity checks that the guarantees in force never exceed the
// fleet's capacity per flavor name, at from and at every change up to the
// horizon (so at every instant from from on). It returns the first
// instant where one does, as a *ScheduleCapacityError wrapping
// ErrOverPromised, naming the node whose rule changed there. Its cost
// grows with the boundaries between from and the horizon: pass the
// present, not the zero time.
func (s *Schedule) ValidateCapacity(capacity map[string]int64, from time.Time) error {
	horizon := s.Horizon(from)
	for t, ok := from, true; ok && t.Before(horizon); t, ok = s.NextChange(t) {
		for f, name := range s.base.s.flavors {
			if g, c := s.Guaranteed(name, t), capacity[name]; g > c {
				return &ScheduleCapacityError{Node: s.changedAt(FlavorID(f), t), Flavor: name, At: t, Guaranteed: g, Capacity: c}
			}
		}
	}
	return nil
}

// changedAt names the node of flavor f whose quota in force differs just
// before t and at t, the last such in rule order; "" when none does.
func (s *Schedule) changedAt(f FlavorID, t time.Time) string {
	name := ""
	before := t.Add(-time.Nanosecond)
	for k, p := range s.pairs {
		if p.flavor == f && s.quotaOf(k, t).Nominal != s.quotaOf(k, before).Nominal {
			name = s.base.Name(p.node)
		}
	}
	return name
}
