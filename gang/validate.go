package gang

import (
	"fmt"
	"strconv"
	"time"
)

// Validate checks everything that can be checked without knowing the
// fleet, and returns the first problem in field order as a *FieldError
// (nil when the workload is well-formed). The rules:
//
//   - ID and Queue are non-empty; Shape is set.
//
//   - There is at least one pod set; each has a unique non-empty name, a
//     Count of at least 1 and GPUsPerPod of at least 1; the workload's
//     total GPUs are at most MaxGPUs.
//
//   - Durations (grace period, checkpoint interval, expected runtime) are
//     not negative.
//
//   - Pools are non-empty and unique.
//
//   - A segment has both a Size and a Level, or neither; it names an
//     existing pod set (or the workload has just one), and Size divides
//     that pod set's Count.
//
//   - Spread limits are not negative; MaxPerDomain and its Level come
//     together.
//
//   - A pod asks for GPUs in at most one form: GPUsPerPod >= 1, a
//     GPUShare in (0, 1000] or a MIG profile; with none it must list
//     resources (a CPU-only pod). Resources have unique non-empty names
//     and positive amounts. MinCount is 0 or 1..Count.
//
//   - Flavors are non-empty and unique; Flavor, if also set, is one of
//     them.
//
//   - Rank groups (ErrBadRankGroup) have a Size from 1 to the pod set's
//     Count that divides it and a Level; each Size is a larger multiple of
//     the one before. A pod set with rank groups is not also segmented, and
//     the workload has no per-domain spread.
//
// A preferred level without a required one is fine. Level names and pod
// sizes against a real fleet are checked by [Workload.ValidateFor].
func (w *Workload) Validate() error {
	if w == nil {
		return &FieldError{Field: "", Value: nil, Detail: "nil workload", Err: ErrInvalid}
	}
	bad := func(field string, v any, detail string) error {
		return &FieldError{ID: w.ID, Field: field, Value: v, Detail: detail, Err: ErrInvalid}
	}
	if w.ID == "" {
		return bad("id", w.ID, "must not be empty")
	}
	if w.Queue == "" {
		return bad("queue", w.Queue, "must not be empty")
	}
	if !w.Shape.Valid() {
		return bad("shape", w.Shape, "must be inference, training or batch")
	}
	if len(w.PodSets) == 0 {
		return bad("podSets", len(w.PodSets), "must hold at least one pod set")
	}
	// Every check is linear in the pod sets (a workload may have a
	// million): field paths are formatted only on refusal, and duplicate
	// names are found with one pass (see duplicates).
	names := duplicates(len(w.PodSets), func(i int) string { return w.PodSets[i].Name })
	var total int64 // int64: two factors up to MaxGPUs cannot overflow it
	for i := range w.PodSets {
		p := &w.PodSets[i]
		at := func() string { return "podSets[" + strconv.Itoa(i) + "]" }
		switch {
		case p.Name == "":
			return bad(at()+".name", p.Name, "must not be empty")
		case p.Count < 1 || p.Count > MaxGPUs:
			return bad(at()+".count", p.Count, fmt.Sprintf("must be 1 to %d", MaxGPUs))
		case p.GPUsPerPod < 0 || p.GPUsPerPod > MaxGPUs:
			return bad(at()+".gpusPerPod", p.GPUsPerPod, fmt.Sprintf("must be 0 to %d", MaxGPUs))
		}
		if err := w.validatePodSet(i, p); err != nil {
			return err
		}
		if j, dup := names.earlier(i); dup {
			return bad(at()+".name", p.Name, "duplicates podSets["+strconv.Itoa(j)+"].name")
		}
		total += int64(p.Count) * int64(p.GPUsPerPod)
		if total > MaxGPUs {
			return bad(at()+".count", p.Count, fmt.Sprintf("brings the workload above %d GPUs", MaxGPUs))
		}
	}
	flavors := duplicates(len(w.Flavors), func(i int) string { return w.Flavors[i] })
	for i, f := range w.Flavors {
		at := "flavors[" + strconv.Itoa(i) + "]"
		if f == "" {
			return bad(at, f, "must not be empty")
		}
		if j, dup := flavors.earlier(i); dup {
			return bad(at, f, "duplicates flavors["+strconv.Itoa(j)+"]")
		}
	}
	if w.Flavor != "" && len(w.Flavors) > 0 {
		if _, ok := w.Accepts(w.Flavor); !ok {
			return bad("flavor", w.Flavor, "must be one of flavors when both are set")
		}
	}
	if err := w.validateSegment(bad); err != nil {
		return err
	}
	segmented := w.SegmentedPodSet()
	for i := range w.PodSets {
		if err := w.validateRankGroups(i, segmented); err != nil {
			return err
		}
	}
	pools := duplicates(len(w.Pools), func(i int) string { return w.Pools[i] })
	for i, p := range w.Pools {
		at := "pools[" + strconv.Itoa(i) + "]"
		if p == "" {
			return bad(at, p, "must not be empty")
		}
		if j, dup := pools.earlier(i); dup {
			return bad(at, p, "duplicates pools["+strconv.Itoa(j)+"]")
		}
	}
	for _, d := range [...]struct {
		field string
		v     time.Duration
	}{
		{"drain.gracePeriod", w.Drain.GracePeriod},
		{"drain.checkpointInterval", w.Drain.CheckpointInterval},
		{"expectedRuntime", w.ExpectedRuntime},
	} {
		if d.v < 0 {
			return bad(d.field, d.v, "must not be negative")
		}
	}
	sp := w.Spread
	switch {
	case sp.MaxPerNode < 0:
		return bad("spread.maxPerNode", sp.MaxPerNode, "must not be negative (0 = no limit)")
	case sp.MaxPerDomain < 0:
		return bad("spread.maxPerDomain", sp.MaxPerDomain, "must not be negative (0 = no limit)")
	case sp.MaxPerDomain > 0 && sp.Level == "":
		return bad("spread.level", sp.Level, "must name the level that maxPerDomain counts in")
	case sp.MaxPerDomain == 0 && sp.Level != "":
		return bad("spread.maxPerDomain", sp.MaxPerDomain, "must be set when spread.level is")
	}
	return nil
}

func (w *Workload) validateSegment(bad func(string, any, string) error) error {
	s := w.Topology.Segment
	switch {
	case s.Size < 0:
		return bad("topology.segment.size", s.Size, "must not be negative (0 = no segments)")
	case s.Size == 0 && (s.Level != "" || s.PodSet != ""):
		return bad("topology.segment.size", s.Size, "must be set when segment level or pod set is")
	case s.Size == 0:
		return nil
	case s.Level == "":
		return bad("topology.segment.level", s.Level, "must name the level each segment fits inside")
	}
	i := w.SegmentedPodSet()
	if i < 0 {
		if s.PodSet == "" {
			return bad("topology.segment.podSet", s.PodSet, "must name a pod set when there are several")
		}
		return bad("topology.segment.podSet", s.PodSet, "names no pod set")
	}
	if n := w.PodSets[i].Count; n%s.Size != 0 {
		return bad("topology.segment.size", s.Size,
			fmt.Sprintf("must divide the %d pods of pod set %q", n, w.PodSets[i].Name))
	}
	return nil
}

// validateRankGroups checks the rank groups of pod set i without the
// fleet; segmented is the workload's segmented pod set (-1: none).
func (w *Workload) validateRankGroups(i, segmented int) error {
	p := &w.PodSets[i]
	if len(p.RankGroups) == 0 {
		return nil
	}
	at := "podSets[" + strconv.Itoa(i) + "].rankGroups"
	fail := func(field string, v any, detail string) error {
		return &FieldError{ID: w.ID, Field: field, Value: v, Detail: detail, Err: ErrBadRankGroup}
	}
	switch {
	case segmented == i:
		return fail(at, len(p.RankGroups), "a segmented pod set takes no rank groups: a required rank group is a segment")
	case w.Spread.MaxPerDomain > 0:
		return fail(at, len(p.RankGroups), "rank groups do not combine with a per-domain spread")
	}
	for j, g := range p.RankGroups {
		gat := at + "[" + strconv.Itoa(j) + "]"
		switch {
		case g.Size < 1:
			return fail(gat+".size", g.Size, "must be at least 1")
		case g.Size > p.Count:
			return fail(gat+".size", g.Size, fmt.Sprintf("must be at most the %d pods of pod set %q", p.Count, p.Name))
		case p.Count%g.Size != 0:
			return fail(gat+".size", g.Size, fmt.Sprintf("must divide the %d pods of pod set %q", p.Count, p.Name))
		case g.Level == "":
			return fail(gat+".level", g.Level, "must name the level each group fits inside")
		case j > 0 && (g.Size <= p.RankGroups[j-1].Size || g.Size%p.RankGroups[j-1].Size != 0):
			return fail(gat+".size", g.Size, fmt.Sprintf("must be a larger multiple of the size before it (%d): groups nest, smallest first", p.RankGroups[j-1].Size))
		}
	}
	return nil
}

// ValidateFor runs Validate, then checks the workload against a fleet
// given as plain values, so that this package needs no fleet type:
//
//   - levels names the fleet's levels from the top down, ending with the
//     node level, as the topology package lists them: ["spine", "leaf",
//     "node"].
//   - gpusPerNode is the GPUs of the largest node the workload may land on
//     (of its flavor); below 1 it is unknown and node-size checks are
//     skipped.
//
// It refuses, with ErrUnknownLevel, any level name not in levels, and with
// ErrInvalid a preferred level above the required one, a segment level
// above the required one, or a spread level at or above it. It refuses
// with ErrExceedsNode a pod with more GPUs than a node, a workload required
// to share one node that needs more GPUs than a node has, and a segment
// confined to one node that needs more GPUs than a node has. Rank groups
// name known levels (ErrUnknownLevel), each at or above the level of the
// group before it (ErrBadRankGroup), and a rank group confined to one node
// fits on one (ErrExceedsNode).
func (w *Workload) ValidateFor(levels []string, gpusPerNode int) error {
	if err := w.Validate(); err != nil {
		return err
	}
	fail := func(field string, v any, detail string, err error) error {
		return &FieldError{ID: w.ID, Field: field, Value: v, Detail: detail, Err: err}
	}
	// depth returns the level's index (0 = top), -1 for "" and -2 for a
	// name the fleet does not have.
	depth := func(name string) int {
		if name == "" {
			return -1
		}
		for i, l := range levels {
			if l == name {
				return i
			}
		}
		return -2
	}
	t, sp := w.Topology, w.Spread
	req, pref, seg, spr := depth(t.Required), depth(t.Preferred), depth(t.Segment.Level), depth(sp.Level)
	// Formatted only on refusal: a valid workload costs no allocation here.
	known := func() string { return fmt.Sprintf("the fleet's levels are %q", levels) }
	switch {
	case req == -2:
		return fail("topology.required", t.Required, known(), ErrUnknownLevel)
	case pref == -2:
		return fail("topology.preferred", t.Preferred, known(), ErrUnknownLevel)
	case seg == -2:
		return fail("topology.segment.level", t.Segment.Level, known(), ErrUnknownLevel)
	case spr == -2:
		return fail("spread.level", sp.Level, known(), ErrUnknownLevel)
	case pref >= 0 && pref < req:
		return fail("topology.preferred", t.Preferred,
			fmt.Sprintf("must be at or below the required level %q", t.Required), ErrInvalid)
	case seg >= 0 && seg < req:
		return fail("topology.segment.level", t.Segment.Level,
			fmt.Sprintf("must be at or below the required level %q", t.Required), ErrInvalid)
	case spr >= 0 && req >= 0 && spr <= req:
		return fail("spread.level", sp.Level,
			fmt.Sprintf("must be below the required level %q", t.Required), ErrInvalid)
	}
	for i := range w.PodSets {
		if err := w.rankGroupsFor(i, levels, depth, gpusPerNode); err != nil {
			return err
		}
	}
	if gpusPerNode < 1 {
		return nil
	}
	for i, p := range w.PodSets {
		if p.GPUsPerPod > gpusPerNode {
			return fail("podSets["+strconv.Itoa(i)+"].gpusPerPod", p.GPUsPerPod,
				fmt.Sprintf("a pod never spans nodes and a node has %d GPUs", gpusPerNode), ErrExceedsNode)
		}
	}
	node := len(levels) - 1
	if req >= 0 && req == node && w.GPUs() > gpusPerNode {
		return fail("topology.required", t.Required,
			fmt.Sprintf("the workload needs %d GPUs on one node of %d", w.GPUs(), gpusPerNode), ErrExceedsNode)
	}
	if seg >= 0 && seg == node {
		p := w.PodSets[w.SegmentedPodSet()]
		if need := t.Segment.Size * p.GPUsPerPod; need > gpusPerNode {
			return fail("topology.segment.size", t.Segment.Size,
				fmt.Sprintf("a segment needs %d GPUs on one node of %d", need, gpusPerNode), ErrExceedsNode)
		}
	}
	return nil
}

// rankGroupsFor checks the rank groups of pod set i against the fleet's
// levels and node size (skipped below 1); depth gives a level's index in
// levels, -2 for an unknown name.
func (w *Workload) rankGroupsFor(i int, levels []string, depth func(string) int, gpusPerNode int) error {
	p := &w.PodSets[i]
	node := len(levels) - 1
	prev := node // the smallest group may sit at any level
	for j, g := range p.RankGroups {
		at := "podSets[" + strconv.Itoa(i) + "].rankGroups[" + strconv.Itoa(j) + "]"
		fail := func(field string, v any, detail string, err error) error {
			return &FieldError{ID: w.ID, Field: at + field, Value: v, Detail: detail, Err: err}
		}
		d := depth(g.Level)
		switch {
		case d < 0:
			return fail(".level", g.Level, fmt.Sprintf("the fleet's levels are %q", levels), ErrUnknownLevel)
		case d > prev:
			return fail(".level", g.Level, fmt.Sprintf("must be at or above the level of rankGroups[%d] (%q): groups nest",
				j-1, p.RankGroups[j-1].Level), ErrBadRankGroup)
		case d == node && gpusPerNode > 0 && g.Size*p.GPUsPerPod > gpusPerNode:
			return fail(".size", g.Size, fmt.Sprintf("a group needs %d GPUs on one node of %d",
				g.Size*p.GPUsPerPod, gpusPerNode), ErrExceedsNode)
		}
		prev = d
	}
	return nil
}

// validatePodSet checks one pod set's GPU form, elastic minimum and
// resources.
func (w *Workload) validatePodSet(i int, p *PodSet) error {
	fail := func(field string, v any, detail string, err error) error {
		return &FieldError{ID: w.ID, Field: "podSets[" + strconv.Itoa(i) + "]." + field, Value: v, Detail: detail, Err: err}
	}
	forms := 0
	if p.GPUsPerPod > 0 {
		forms++
	}
	if p.GPUShare != 0 {
		forms++
		if p.GPUShare < 0 || p.GPUShare > MilliGPU {
			return fail("gpuShare", p.GPUShare, "must be a share of one GPU in thousandths, 1 to 1000", ErrBadShare)
		}
	}
	if p.MIG != "" {
		forms++
	}
	switch {
	case forms > 1:
		return fail("gpuShare", p.GPUShare, "a pod asks for whole GPUs, a share or a MIG slice, not several", ErrBadShare)
	case forms == 0 && len(p.Resources) == 0:
		return fail("gpusPerPod", p.GPUsPerPod, "must be at least 1, or the pod must ask for a share, a MIG slice or resources", ErrInvalid)
	case p.MinCount < 0 || p.MinCount > p.Count:
		return fail("minCount", p.MinCount, fmt.Sprintf("must be 1 to count (%d), or 0 for count", p.Count), ErrBadMinCount)
	}
	names := duplicates(len(p.Resources), func(i int) string { return p.Resources[i].Name })
	for i, r := range p.Resources {
		ra := func() string { return "resources[" + strconv.Itoa(i) + "]" }
		switch {
		case r.Name == "":
			return fail(ra()+".name", r.Name, "must not be empty", ErrBadResource)
		case r.Amount <= 0:
			return fail(ra()+".amount", r.Amount, "must be positive", ErrBadResource)
		}
		if j, dup := names.earlier(i); dup {
			return fail(ra()+".name", r.Name, "duplicates resources["+strconv.Itoa(j)+"].name", ErrBadResource)
		}
	}
	return nil
}

// smallList is the length up to which duplicates compares names pairwise:
// below it a map costs more than the comparisons.
const smallList = 16

// dupIndex answers, for each element of a list, which earlier element has
// the same name.
type dupIndex struct {
	key   func(int) string
	first map[string]int // name -> its first index; nil for a small list
}

// duplicates indexes a list of n names given by key: in O(n) with a map
// for a long list, pairwise (without allocating) for a short one.
func duplicates(n int, key func(int) string) dupIndex {
	d := dupIndex{key: key}
	if n > smallList {
		d.first = make(map[string]int, n)
		for i := n - 1; i >= 0; i-- {
			d.first[key(i)] = i
		}
	}
	return d
}

// earlier returns the first index before i whose name equals i's.
func (d dupIndex) earlier(i int) (int, bool) {
	k := d.key(i)
	if d.first != nil {
		j := d.first[k]
		return j, j < i
	}
	for j := range i {
		if d.key(j) == k {
			return j, true
		}
	}
	return 0, false
}
