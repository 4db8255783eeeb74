package quota

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Guaranteed returns the sum of every node's nominal quota of flavor f:
// the GPUs the tree promises.
func (t *Tree) Guaranteed(f FlavorID) int64 { return t.nominalSum[f] / milli }

// ValidateCapacity compares the guarantees with the GPUs the fleet has, per
// flavor name. A flavor missing from capacity has none. It returns a
// *CapacityError (wrapping ErrOverPromised) listing, in flavor order, every
// flavor whose nominal quotas add up to more than its capacity: a governance
// error to put in front of whoever hands out quota. Capacity for flavors the
// tree does not know is ignored.
func (t *Tree) ValidateCapacity(capacity map[string]int64) error {
	var over []OverPromise
	for f, name := range t.s.flavors {
		if g, c := t.nominalSum[f]/milli, capacity[name]; g > c {
			over = append(over, OverPromise{Flavor: name, Guaranteed: g, Capacity: c})
		}
	}
	if over != nil {
		return &CapacityError{Over: over}
	}
	return nil
}

// Render writes the published policy as Markdown: each node's quotas,
// limits and weight, each queue's preemption rules, and the guarantees per
// flavor. RenderCapacity adds the comparison with the fleet.
func (t *Tree) Render(w io.Writer) error { return t.RenderCapacity(w, nil) }

// RenderCapacity is Render with a totals table against the fleet's
// capacity per flavor name (nil: no capacity column).
func (t *Tree) RenderCapacity(w io.Writer, capacity map[string]int64) error {
	bw := bufio.NewWriter(w)
	s := t.s

	quotas := [][]string{{"node", "parent", "kind", "flavor", "nominal", "borrowing limit", "lending limit", "weight"}}
	for n := NodeID(0); int(n) < len(s.names); n++ {
		parent := "—"
		if p := s.parent[n]; p != None {
			parent = s.names[p]
		}
		weight := strconv.FormatFloat(t.weight[n], 'g', -1, 64)
		rows := 0
		for f := FlavorID(0); int(f) < len(s.flavors); f++ {
			x := t.at(n, f)
			if !t.served[x] {
				continue
			}
			rows++
			bl, ll := "unlimited", "all"
			if s.parent[n] == None {
				bl, ll = "—", "—"
			}
			if t.borrow[x] != noLimit {
				bl = strconv.FormatInt(t.borrow[x]/milli, 10)
			}
			if t.lend[x] != noLimit {
				ll = fmt.Sprintf("%d (keeps %d)", t.lend[x]/milli, (t.nominal[x]-t.lend[x])/milli)
			}
			quotas = append(quotas, []string{s.names[n], parent, s.kind[n].String(), s.flavors[f],
				strconv.FormatInt(t.nominal[x]/milli, 10), bl, ll, weight})
		}
		if rows == 0 {
			quotas = append(quotas, []string{s.names[n], parent, s.kind[n].String(), "—", "0", "—", "—", weight})
		}
	}
	fmt.Fprintln(bw, "### Quotas")
	fmt.Fprintln(bw)
	writeTable(bw, quotas)

	rules := [][]string{{"queue", "within queue", "reclaim within cohort", "borrow within cohort", "queueing"}}
	for _, q := range s.queues {
		r := t.rules[q]
		bwc := r.BorrowWithinCohort.Policy.String()
		if th, ok := r.BorrowWithinCohort.Threshold(); ok {
			bwc += fmt.Sprintf(" (victims ≤ %d)", th)
		}
		rules = append(rules, []string{s.names[q], r.WithinQueue.String(), r.ReclaimWithinCohort.String(), bwc, t.strategy[q].String()})
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "### Preemption")
	fmt.Fprintln(bw)
	writeTable(bw, rules)

	totals := [][]string{{"flavor", "guaranteed"}}
	if capacity != nil {
		totals[0] = append(totals[0], "capacity", "unpromised")
	}
	for f, name := range s.flavors {
		sum := t.nominalSum[f] / milli
		row := []string{name, strconv.FormatInt(sum, 10)}
		if capacity != nil {
			c := capacity[name]
			spare := strconv.FormatInt(c-sum, 10)
			if c < sum {
				spare = fmt.Sprintf("**over-promised by %d**", sum-c)
			}
			row = append(row, strconv.FormatInt(c, 10), spare)
		}
		totals = append(totals, row)
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "### Totals")
	fmt.Fprintln(bw)
	writeTable(bw, totals)
	return bw.Flush()
}

// writeTable writes rows (the first is the header) as a Markdown table with
// padded columns, so the source reads as well as the rendering.
func writeTable(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c), 3)
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			b.WriteString(" ")
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
			b.WriteString(" |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i, n := range width {
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}
