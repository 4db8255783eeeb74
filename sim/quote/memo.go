package quote

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// MemoWidth is the widest line WriteMemo writes: options beyond what
// fits go to a second table.
const MemoWidth = 100

// labelWidth is the width of the row labels; cells are cellWidth wide.
const (
	labelWidth = 32
	cellWidth  = 13
)

// WriteMemo renders the quote as a Markdown decision memo for the people
// who decide: the request, the options side by side (every figure with
// its unit), the recommendation and its reason, and how it was forecast.
// No line is wider than MemoWidth.
func (q *Quote) WriteMemo(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	r := q.Request
	p("# Booking decision: %s\n\n", r.ID)
	blocks := fmt.Sprintf("%d whole %s", r.Blocks, plural(r.Level, r.Blocks))
	para(&b, fmt.Sprintf("%s asks for %s GPUs (%s) as %s, from %s for %s. The options:", r.Queue,
		count(float64(r.GPUs)), r.Flavor, blocks, r.Start.UTC().Format("Mon 2 Jan 2006 15:04 MST"), days(r.Duration)))
	for _, o := range q.Options {
		d := o.Displaced
		line := fmt.Sprintf("- Option %d: %s; work to drain %s GPUs (%s not preemptible, %s within a guarantee)",
			o.Index, strings.Join(o.DomainNames, ", "), count(float64(d.Blocking+d.Guaranteed+d.Borrowed)),
			count(float64(d.Blocking)), count(float64(d.Guaranteed)))
		if o.Refused != nil {
			line += "; cannot be approved: " + o.Refused.Error()
		}
		b.WriteString(hang(line+".", MemoWidth) + "\n")
	}
	b.WriteString("\n")
	per := (MemoWidth - labelWidth - 2) / (cellWidth + 3)
	for lo := 0; lo < len(q.Options); lo += per {
		q.table(&b, lo, min(lo+per, len(q.Options)))
		b.WriteString("\n")
	}
	p("## Recommendation\n\n")
	if q.Recommended < 0 {
		para(&b, fmt.Sprintf("Approve none: %s.", q.Reason))
	} else {
		o := &q.Options[q.Recommended]
		para(&b, fmt.Sprintf("Approve option %d (%s): %s.", o.Index, strings.Join(o.DomainNames, ", "), q.Reason))
	}
	p("## How this was forecast\n\n")
	d := q.Demand
	p("- Simulated from %s to %s, seed %d, from the fleet as it runs now;\n",
		q.From.UTC().Format("2 Jan 15:04"), q.To.UTC().Format("2 Jan 15:04"), q.Seed)
	p("  each option against a baseline without the booking, same seed and demand.\n")
	p("- Demand: inference %s to %s of the fleet (%s h a day at the trough);\n",
		share(d.InferenceTrough), share(d.InferencePeak), num(d.TroughHours, 0))
	p("  training load %s, median run %s; batch median run %s.\n", share(d.TrainingLoad),
		wait(d.TrainingMedian), wait(d.BatchMedian))
	if q.Lever != "" {
		b.WriteString(hang(fmt.Sprintf("- Before approving each option: %s.", q.Lever), MemoWidth) + "\n")
	}
	ext := "not priced"
	if q.Price.ExternalDollarsPerGPUHour > 0 {
		ext = dollars(q.Price.ExternalDollarsPerGPUHour) + " per GPU-h at an external provider"
	}
	p("- Prices: %s per GPU-h; overflow %s.\n", dollars(q.Price.DollarsPerGPUHour), ext)
	p("- Displaced: GPU-h a team ran less than in the baseline (negative: more), the\n")
	p("  booking's own work apart. Overflow: inference demand left unserved beyond the\n")
	p("  baseline's. Off-peak: work moved into the inference trough.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// table writes options [lo, hi) side by side.
func (q *Quote) table(b *strings.Builder, lo, hi int) {
	opts := q.Options[lo:hi]
	row := func(label string, cell func(o *Option) string) {
		b.WriteString("| " + pad(label, labelWidth))
		for i := range opts {
			b.WriteString(" | " + pad(cell(&opts[i]), cellWidth))
		}
		b.WriteString(" |\n")
	}
	// forecast shows a cell for approvable options only.
	forecast := func(f func(o *Option) string) func(o *Option) string {
		return func(o *Option) string {
			if o.Result == nil {
				return "-"
			}
			return f(o)
		}
	}
	row("", func(o *Option) string {
		s := "Option " + strconv.Itoa(o.Index)
		if lo+indexOf(opts, o) == q.Recommended {
			s += " *"
		}
		return s
	})
	b.WriteString("|" + strings.Repeat("-", labelWidth+2))
	for range opts {
		b.WriteString("|" + strings.Repeat("-", cellWidth+1) + ":")
	}
	b.WriteString("|\n")
	row("Approvable", func(o *Option) string {
		if o.Refused != nil {
			return "no"
		}
		return "yes"
	})
	row("Booked work (GPU-h)", forecast(func(o *Option) string { return count(o.BookedGPUh) }))
	teams := func(title string, f func(t Team) string, skipInference bool) {
		for _, t := range q.teams() {
			if skipInference && t.Inference {
				continue
			}
			row(title+t.Queue, forecast(func(o *Option) string {
				for _, x := range o.Teams {
					if x.Queue == t.Queue {
						return f(x)
					}
				}
				return "-"
			}))
		}
	}
	teams("Displaced GPU-h: ", func(t Team) string { return count(t.DisplacedGPUh) }, false)
	teams("Wait p90: ", func(t Team) string { return wait(t.P90Before) + "->" + wait(t.P90After) }, false)
	teams("Off-peak GPU-h: ", func(t Team) string { return count(t.OffPeakGPUh) }, true)
	row("Inference overflow (GPU-h)", forecast(func(o *Option) string { return count(o.OverflowGPUh) }))
	row("Overflow cost ($)", forecast(func(o *Option) string { return dollars(o.OverflowDollars) }))
	row("Displaced cost ($)", forecast(func(o *Option) string { return dollars(o.DisplacedDollars) }))
	row("Total cost ($)", forecast(func(o *Option) string { return dollars(o.TotalDollars) }))
	b.WriteString("\n* recommended. Wait p90: baseline->option.\n")
}

func indexOf(opts []Option, o *Option) int {
	for i := range opts {
		if &opts[i] == o {
			return i
		}
	}
	return -1
}

// teams lists every team of every forecast once, by name.
func (q *Quote) teams() []Team {
	var out []Team
	for _, o := range q.Options {
		for _, t := range o.Teams {
			found := false
			for _, x := range out {
				found = found || x.Queue == t.Queue
			}
			if !found {
				out = append(out, t)
			}
		}
	}
	return out
}

// pad cuts or pads s to n runes.
func pad(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s + strings.Repeat(" ", n-len(r))
}

// para writes s as a paragraph of lines within MemoWidth.
func para(b *strings.Builder, s string) { b.WriteString(wrap(s, MemoWidth) + "\n\n") }

// hang wraps a list item, continuation lines indented by two spaces.
func hang(s string, width int) string {
	return strings.ReplaceAll(wrap(s, width-2), "\n", "\n  ")
}

// plural is a level's name for n domains: spine, spines; leaf, leaves.
func plural(level string, n int) string {
	switch {
	case n == 1:
		return level
	case strings.HasSuffix(level, "f"):
		return level[:len(level)-1] + "ves"
	}
	return level + "s"
}

// wrap breaks s into lines of at most width runes at spaces.
func wrap(s string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// count renders a figure rounded to a whole number with thousands
// separators: 12,345.
func count(v float64) string {
	n := int64(math.Round(v))
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// dollars renders an amount: $1,234 (cents below $100).
func dollars(v float64) string {
	if math.Abs(v) < 100 {
		return strings.Replace("$"+strconv.FormatFloat(v, 'f', 2, 64), "$-", "-$", 1)
	}
	return strings.Replace("$"+count(v), "$-", "-$", 1)
}

func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// share renders a fraction as a percentage.
func share(v float64) string { return num(100*v, 1) + "%" }

// days renders a window length in days (or hours when shorter).
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	}
	return num(d.Hours(), 1) + " hours"
}

// wait renders a duration compactly: 45s, 12m, 1h05m, 2d03h.
func wait(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}
