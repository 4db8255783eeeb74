package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// String renders the decisions one per line, in the order the host acts on
// them (kill, drain, admit), then the bookings broken by a node failure,
// for logs, tests and bug reports. Times are
// shown as clock times; events are not included.
func (d Decisions) String() string {
	var b strings.Builder
	for _, k := range d.Kill {
		fmt.Fprintf(&b, "kill %s (deadline %s", k.ID, k.Deadline.Format(time.TimeOnly))
		if k.Of != "" {
			fmt.Fprintf(&b, ", pod %s[%d] of %s on %s", k.Pod.PodSet, k.Pod.Index, k.Of, k.Pod.Node)
		}
		if k.Overdue > 0 {
			fmt.Fprintf(&b, ", overdue %s", k.Overdue)
		}
		b.WriteString(")\n")
	}
	for _, x := range d.Drain {
		fmt.Fprintf(&b, "drain %s", x.ID)
		if len(x.Beneficiaries) > 0 {
			fmt.Fprintf(&b, " for %s", strings.Join(x.Beneficiaries, ","))
		}
		fmt.Fprintf(&b, " by %s (%s, lost %.1f GPU-h", x.Deadline.Format(time.TimeOnly), x.Reason, x.LostGPUSeconds/3600)
		if x.Of != "" {
			fmt.Fprintf(&b, "; pod %s[%d] of %s on %s", x.Pod.PodSet, x.Pod.Index, x.Of, x.Pod.Node)
		}
		b.WriteByte(')')
		if len(x.MoveTo) > 0 {
			b.WriteString(" move to")
			for _, n := range x.MoveTo {
				fmt.Fprintf(&b, " %s=%d", n.Node, n.GPUs)
			}
		}
		b.WriteByte('\n')
	}
	for _, id := range d.Failed {
		fmt.Fprintf(&b, "failed %s (no replacement node in time)\n", id)
	}
	for _, x := range d.Replace {
		fmt.Fprintf(&b, "replace %s %s[%d] %s -> %s (%d GPUs, after %s)\n", x.ID, x.PodSet, x.Index, x.OldNode, x.NewNode, x.GPUs, x.Wait)
	}
	for _, g := range d.Grow {
		fmt.Fprintf(&b, "grow %s:", g.ID)
		for _, p := range g.Pods {
			fmt.Fprintf(&b, " %s[%d]@%s=%d", p.PodSet, p.Index, p.Node, p.GPUs)
		}
		b.WriteByte('\n')
	}
	for _, a := range d.Admit {
		fmt.Fprintf(&b, "admit %s queue=%s wait=%s span=%s", a.ID, a.Queue, a.Wait, a.Span)
		if a.Borrowing {
			b.WriteString(" borrowing")
		}
		b.WriteString(":")
		// Whole GPUs per node, in the order placed, then each share and
		// MIG slice on its GPU ("server[0]@h0/gpu3:500m", "1g.10gb#2").
		var order []string
		per := map[string]int{}
		for _, p := range a.Pods {
			if _, ok := per[p.Node]; !ok {
				order = append(order, p.Node)
			}
			per[p.Node] += p.GPUs
		}
		if len(order) > 8 {
			// Large gangs: the node count and the lowest and highest node
			// names (in name order, numbers by value) keep the line readable.
			names := slices.Clone(order)
			slices.SortFunc(names, naturalCompare)
			fmt.Fprintf(&b, " %d GPUs on %d nodes %s..%s", sum(per), len(order), names[0], names[len(names)-1])
		} else {
			for _, n := range order {
				fmt.Fprintf(&b, " %s=%d", n, per[n])
			}
			for _, p := range a.Pods {
				switch {
				case p.MIG != "":
					fmt.Fprintf(&b, " %s[%d]@%s/gpu%d:%s#%d", p.PodSet, p.Index, p.Node, p.GPU, p.MIG, p.Slice)
				case p.Share > 0:
					fmt.Fprintf(&b, " %s[%d]@%s/gpu%d:%dm", p.PodSet, p.Index, p.Node, p.GPU, p.Share)
				}
			}
		}
		b.WriteByte('\n')
	}
	for _, o := range d.Broken {
		fmt.Fprintf(&b, "broken booking %s: %s down in %s, %s", o.Booking, strings.Join(o.Down, ","), strings.Join(o.Broken, ","), o.Remedy)
		if len(o.Replacements) > 0 {
			fmt.Fprintf(&b, " to %s", strings.Join(o.Replacements, ","))
		}
		if o.Short > 0 {
			fmt.Fprintf(&b, " (short %d GPUs)", o.Short)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// String renders an event on one line.
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Time.Format(time.TimeOnly), e.Kind)
	if e.Workload != "" {
		fmt.Fprintf(&b, " %s", e.Workload)
	}
	if e.Node != "" {
		fmt.Fprintf(&b, " node=%s", e.Node)
	}
	switch e.Kind {
	case EventAdmitted:
		fmt.Fprintf(&b, " wait=%s span=%s", e.Wait, e.Span)
	case EventDrainStarted, EventKilled:
		fmt.Fprintf(&b, " reason=%s for=%s deadline=%s", e.Reason, strings.Join(e.Beneficiaries, ","), e.Deadline.Format(time.TimeOnly))
	case EventExited:
		fmt.Fprintf(&b, " exit=%s runtime=%s", e.Exit, e.Runtime)
	case EventNodeDown, EventNodeUp:
		fmt.Fprintf(&b, " health=%s affected=%v", e.Reason, e.Affected)
	case EventQueueChanged:
		fmt.Fprintf(&b, " queue=%s", e.Queue)
	case EventPodsLost:
		fmt.Fprintf(&b, " lost=%d GPUs", e.LostGPUs)
	case EventReplaced:
		fmt.Fprintf(&b, " new=%s after=%s", e.NewNode, e.Wait)
	case EventNominationDissolved:
		fmt.Fprintf(&b, " reason=%q", e.Reason)
	case EventBlockBroken:
		fmt.Fprintf(&b, " booking=%s remedy=%s", e.Booking, e.Reason)
		if e.NewNode != "" {
			fmt.Fprintf(&b, " to=%s", e.NewNode)
		}
	case EventBlockWhole:
		fmt.Fprintf(&b, " booking=%s", e.Booking)
	case EventRelocated:
		fmt.Fprintf(&b, " booking=%s to=%s", e.Booking, e.NewNode)
	}
	return b.String()
}

// naturalCompare orders names as people read them: runs of digits by
// their value, so node-0-0-9 comes before node-0-0-10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digits is the length of the run of ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}
