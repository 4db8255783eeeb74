package metrics

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// A table is one concern of the review, rendered the same way as Markdown
// (for people) and as CSV (for spreadsheets).
type table struct {
	name    string // CSV name
	title   string // Markdown heading
	columns []column
	rows    [][]value
}

type colKind uint8

const (
	text colKind = iota
	hours
	count
	share
	dollars
	duration
	gpus
	pflop
	fineDollars
)

type column struct {
	name string
	kind colKind
}

type value struct {
	s  string
	v  float64
	na bool // undefined (no data): "-" in Markdown, empty in CSV
}

func txt(s string) value        { return value{s: s} }
func num(v float64) value       { return value{v: v} }
func cnt(n int64) value         { return value{v: float64(n)} }
func dur(d time.Duration) value { return value{v: d.Seconds()} }

func (c column) markdown(x value) string {
	if x.na {
		return "-"
	}
	switch c.kind {
	case text:
		return x.s
	case hours, gpus:
		return strconv.FormatFloat(x.v, 'f', 1, 64)
	case pflop:
		return strconv.FormatFloat(x.v, 'f', 0, 64)
	case count:
		return strconv.FormatFloat(x.v, 'f', 0, 64)
	case share:
		return strconv.FormatFloat(100*x.v, 'f', 1, 64) + "%"
	case dollars:
		return "$" + strconv.FormatFloat(x.v, 'f', 2, 64)
	case fineDollars:
		return "$" + strconv.FormatFloat(x.v, 'f', 4, 64)
	case duration:
		return seconds(x.v).Round(time.Second).String()
	}
	panic("metrics: unknown column kind")
}

func (c column) csv(x value) string {
	if x.na {
		return ""
	}
	if c.kind == text {
		return x.s
	}
	return strconv.FormatFloat(x.v, 'g', -1, 64)
}

func usageRow(key string, u Usage) []value {
	return []value{txt(key), num(u.AllocatedGPUHours), num(u.SampledGPUHours), num(u.UsedGPUHours),
		num(u.UseRate()), num(u.UsefulPFLOP), num(u.IdleGPUHours), num(u.LowMFUGPUHours)}
}

// tables lays the report out as the monthly review's tables.
func tables(r Report) []table {
	var ts []table
	usageCols := []column{{"team", text}, {"allocated GPU-h", hours}, {"sampled GPU-h", hours},
		{"used GPU-h (SM)", hours}, {"use rate", share}, {"useful PFLOP", pflop}, {"idle allocated GPU-h", hours},
		{"busy, low-MFU GPU-h", hours}}

	fleet := table{name: "fleet", title: "Fleet: allocation is not use", columns: []column{
		{"healthy GPU-h", hours}, {"allocated GPU-h", hours}, {"allocation rate", share},
		{"used GPU-h (SM)", hours}, {"use rate (sampled)", share}, {"idle allocated GPU-h", hours}}}
	fleet.rows = append(fleet.rows, []value{num(r.Fleet.HealthyGPUHours), num(r.Fleet.AllocatedGPUHours),
		num(r.Fleet.AllocationRate()), num(r.Fleet.UsedGPUHours), num(r.Fleet.UseRate()), num(r.Fleet.IdleGPUHours)})
	ts = append(ts, fleet)

	byTeam := table{name: "usage-by-team", title: "Allocation and use by team", columns: usageCols}
	for _, t := range r.Teams {
		byTeam.rows = append(byTeam.rows, usageRow(t.Team, t.Usage))
	}
	byTeam.rows = append(byTeam.rows, usageRow("fleet", r.Fleet))
	ts = append(ts, byTeam)

	if len(r.Cohorts) > 0 {
		byCohort := table{name: "usage-by-cohort", title: "Allocation and use by cohort (teams rolled up)",
			columns: append([]column{{"cohort", text}}, usageCols[1:]...)}
		for _, c := range r.Cohorts {
			byCohort.rows = append(byCohort.rows, usageRow(c.Team, c.Usage))
		}
		ts = append(ts, byCohort)
	}

	byShape := table{name: "usage-by-shape", title: "Allocation and use by shape", columns: append([]column{{"shape", text}}, usageCols[1:]...)}
	for _, s := range r.Shapes {
		byShape.rows = append(byShape.rows, usageRow(s.Shape.String(), s.Usage))
	}
	byShape.rows = append(byShape.rows, usageRow("fleet", r.Fleet))
	ts = append(ts, byShape)

	waitCols := []column{{"", text}, {"admitted", count}, {"p50", duration}, {"p90", duration}, {"p99", duration}}
	waitRow := func(q Quantiles) []value {
		row := []value{txt(q.Key), cnt(q.Count), dur(q.P50), dur(q.P90), dur(q.P99)}
		if q.Count == 0 {
			row[2].na, row[3].na, row[4].na = true, true, true
		}
		return row
	}
	wt := table{name: "wait-by-team", title: "Queue wait by team", columns: append([]column{{"team", text}}, waitCols[1:]...)}
	for _, q := range r.Waits.ByTeam {
		wt.rows = append(wt.rows, waitRow(q))
	}
	wt.rows = append(wt.rows, waitRow(r.Waits.Fleet))
	ws := table{name: "wait-by-gang-size", title: "Queue wait by gang size", columns: append([]column{{"GPUs", text}}, waitCols[1:]...)}
	for _, q := range r.Waits.ByGangSize {
		ws.rows = append(ws.rows, waitRow(q))
	}
	ts = append(ts, wt, ws)

	pre := table{name: "preemptions", title: "Preemption tax by team and cause", columns: []column{
		{"team", text}, {"cause", text}, {"preemptions", count}, {"killed at deadline", count},
		{"work lost GPU-h", hours}, {"restart GPU-h", hours}, {"lost GPU-h", hours}, {"share of borrowed", share}}}
	taxRow := func(team, cause string, n, kills int64, work, restart float64) []value {
		share := num(ratio(work+restart, r.Fleet.BorrowedGPUHours))
		share.na = r.Fleet.BorrowedGPUHours == 0
		return []value{txt(team), txt(cause), cnt(n), cnt(kills), num(work), num(restart), num(work + restart), share}
	}
	for _, p := range r.Preemptions {
		pre.rows = append(pre.rows, taxRow(p.Team, p.Cause, p.Count, p.Kills, p.LostWorkGPUHours, p.RestartGPUHours))
	}
	pre.rows = append(pre.rows, taxRow("fleet", "all", r.Fleet.Preemptions, r.Fleet.Kills,
		r.Fleet.LostGPUHours-r.Fleet.RestartGPUHours, r.Fleet.RestartGPUHours))
	ts = append(ts, pre)

	nl := table{name: "node-losses", title: "Node losses (not preemptions, not in the tax)", columns: []column{
		{"team", text}, {"runs ended", count}, {"work lost GPU-h", hours}, {"restart GPU-h", hours}, {"lost GPU-h", hours}}}
	for _, p := range r.NodeLosses {
		nl.rows = append(nl.rows, []value{txt(p.Team), cnt(p.Count), num(p.LostWorkGPUHours), num(p.RestartGPUHours), num(p.LostGPUHours)})
	}
	var nlWork, nlRestart float64
	for _, p := range r.NodeLosses {
		nlWork += p.LostWorkGPUHours
		nlRestart += p.RestartGPUHours
	}
	nl.rows = append(nl.rows, []value{txt("fleet"), cnt(r.Fleet.NodeLosses), num(nlWork), num(nlRestart), num(r.Fleet.NodeLostGPUHours)})
	ts = append(ts, nl)

	bor := table{name: "borrowing", title: "Borrowing and preemption tax", columns: []column{
		{"team", text}, {"borrowed GPU-h", hours}, {"lent GPU-h", hours}, {"preemption lost GPU-h", hours}, {"preemption tax", share}}}
	borRow := func(k string, u Usage) []value {
		tax := num(u.PreemptionTax())
		tax.na = u.BorrowedGPUHours == 0
		return []value{txt(k), num(u.BorrowedGPUHours), num(u.LentGPUHours), num(u.LostGPUHours), tax}
	}
	for _, t := range r.Teams {
		bor.rows = append(bor.rows, borRow(t.Team, t.Usage))
	}
	bor.rows = append(bor.rows, borRow("fleet", r.Fleet))
	ts = append(ts, bor)

	dr := table{name: "drains", title: "Drains: decision to capacity back", columns: []column{
		{"drains", count}, {"p50", duration}, {"p99", duration}, {"deadline misses", count}}}
	drainRow := []value{cnt(r.Drains.Count), dur(r.Drains.P50), dur(r.Drains.P99), cnt(r.Drains.DeadlineMisses)}
	drainRow[1].na, drainRow[2].na = r.Drains.Count == 0, r.Drains.Count == 0
	dr.rows = append(dr.rows, drainRow)
	ts = append(ts, dr)

	f := r.Fragmentation
	fr := table{name: "fragmentation", title: "Fragmentation", columns: []column{
		{"observed h", hours}, {"healthy GPUs", gpus}, {"free GPUs", gpus}, {"stranded GPUs", gpus},
		{"stranded share", share}, {"stranded p50", gpus}, {"stranded p99", gpus}}}
	fr.rows = append(fr.rows, []value{num(f.ObservedHours), num(f.HealthyGPUs), num(f.FreeGPUs),
		num(f.StrandedGPUs), num(f.StrandedShare()), num(f.StrandedP50), num(f.StrandedP99)})
	ts = append(ts, fr)

	lb := table{name: "largest-free-block", title: "Largest free block (whole nodes)", columns: []column{
		{"level", text}, {"average", gpus}, {"least", gpus}, {"most", gpus}}}
	for _, l := range f.LargestFreeBlock {
		lb.rows = append(lb.rows, []value{txt(l.Level), num(l.Avg), num(l.Min), num(l.Max)})
	}
	ts = append(ts, lb)

	if len(r.Uplinks) > 0 {
		up := table{name: "uplinks", title: "Gangs crossing each leaf (sharing its uplinks)", columns: []column{
			{"leaf", text}, {"average", gpus}, {"most", gpus}}}
		for _, u := range r.Uplinks {
			up.rows = append(up.rows, []value{txt(u.Leaf), num(u.Avg), num(u.Max)})
		}
		ts = append(ts, up)
	}

	cs := table{name: "cross-spine", title: "Gangs crossing spines", columns: []column{
		{"team", text}, {"gangs admitted", count}, {"GPU-h", hours}}}
	for _, t := range r.Teams {
		cs.rows = append(cs.rows, []value{txt(t.Team), cnt(t.CrossSpineGangs), num(t.CrossSpineGPUHours)})
	}
	cs.rows = append(cs.rows, []value{txt("fleet"), cnt(r.Fleet.CrossSpineGangs), num(r.Fleet.CrossSpineGPUHours)})
	ts = append(ts, cs)

	cost := table{name: "cost", title: "Cost", columns: []column{
		{"team", text}, {"allocated", dollars}, {"idle reservation", dollars}, {"recovered by borrowing", dollars}, {"per useful PFLOP", fineDollars}}}
	costRow := func(k string, u Usage) []value {
		perPFLOP := num(u.DollarsPerPFLOP())
		perPFLOP.na = u.UsefulPFLOP == 0
		return []value{txt(k), num(u.AllocatedDollars), num(u.IdleReservationDollars), num(u.RecoveredDollars), perPFLOP}
	}
	for _, t := range r.Teams {
		cost.rows = append(cost.rows, costRow(t.Team, t.Usage))
	}
	for _, c := range r.Cohorts {
		cost.rows = append(cost.rows, costRow("cohort "+c.Team, c.Usage))
	}
	cost.rows = append(cost.rows, costRow("fleet", r.Fleet))
	ts = append(ts, cost)

	rs := table{name: "right-sizing", title: fmt.Sprintf("Right-sizing inference: fewer replicas, sized to %.0f%% SM activity", 100*r.RightSizeTarget), columns: []column{
		{"team", text}, {"GPU-h beyond need", hours}, {"share of its allocated", share}, {"saving", dollars}}}
	for _, t := range r.Teams {
		if t.RightSizeGPUHours > 0 {
			rs.rows = append(rs.rows, []value{txt(t.Team), num(t.RightSizeGPUHours),
				num(ratio(t.RightSizeGPUHours, t.AllocatedGPUHours)), num(t.RightSizeDollars)})
		}
	}
	if len(rs.rows) > 0 {
		ts = append(ts, rs)
	}
	return ts
}

// WriteMarkdown renders the report as the monthly utilisation review: one
// table per concern, a row per team and the fleet's totals last.
func WriteMarkdown(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Fleet utilisation review, %s to %s\n", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))
	for _, t := range tables(r) {
		fmt.Fprintf(&b, "\n## %s\n\n", t.title)
		head := make([]string, len(t.columns))
		rule := make([]string, len(t.columns))
		for i, c := range t.columns {
			head[i] = c.name
			rule[i] = "---"
			if c.kind != text {
				rule[i] = "---:"
			}
		}
		fmt.Fprintf(&b, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(rule, "|"))
		for _, row := range t.rows {
			cells := make([]string, len(row))
			for i, x := range row {
				cells[i] = t.columns[i].markdown(x)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV writes the report's tables as long-format data: one record per
// cell, as table,row,column,value, where row is the row's first cell
// (team, shape, cause...) and durations are in seconds and shares are
// fractions.
func WriteCSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"table", "row", "column", "value"}); err != nil {
		return err
	}
	for _, t := range tables(r) {
		for _, row := range t.rows {
			key, first := "", 0
			if t.columns[0].kind == text {
				key, first = row[0].s, 1
				if t.name == "preemptions" {
					key, first = row[0].s+"/"+row[1].s, 2
				}
			}
			for i := first; i < len(row); i++ {
				if err := cw.Write([]string{t.name, key, t.columns[i].name, t.columns[i].csv(row[i])}); err != nil {
					return err
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteHourlyCSV writes the hourly series for charts: one record per
// bucket, average GPUs over it, then the largest free block per level.
func WriteHourlyCSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	head := []string{"start", "inference_allocated", "inference_used", "training", "batch", "borrowed", "idle", "stranded", "free", "healthy"}
	for _, l := range r.Fragmentation.LargestFreeBlock {
		head = append(head, "largest_free_block_"+l.Level)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, p := range r.Hourly {
		rec := []string{p.Start.Format(time.RFC3339), f(p.InferenceAllocated), f(p.InferenceUsed), f(p.Training),
			f(p.Batch), f(p.Borrowed), f(p.Idle), f(p.Stranded), f(p.Free), f(p.Healthy)}
		for _, v := range p.LargestFreeBlock {
			rec = append(rec, f(v))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
