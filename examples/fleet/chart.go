package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fleetsched/fleet/metrics"
	"github.com/fleetsched/fleet/sim"
)

var (
	blue      = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	green     = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	lightGrn  = color.RGBA{R: 152, G: 223, B: 138, A: 255}
	orange    = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	lightOrg  = color.RGBA{R: 255, G: 187, B: 120, A: 255}
	grey      = color.RGBA{R: 210, G: 210, B: 210, A: 255}
	darkGrey  = color.RGBA{R: 90, G: 90, B: 90, A: 255}
	red       = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	lightRed  = color.RGBA{R: 245, G: 180, B: 180, A: 255}
	purple    = color.RGBA{R: 148, G: 103, B: 189, A: 255}
	teamColor = map[string]color.RGBA{sim.QueueInference: blue, sim.QueueResearch: green, sim.QueueBatch: orange}
)

// write puts the Markdown review and the charts of one run in dir.
func write(dir string, p sim.Policy, oc *outcome) error {
	f, err := os.Create(filepath.Join(dir, "review-"+p.String()+".md"))
	if err != nil {
		return err
	}
	if err := metrics.WriteMarkdown(f, oc.rep); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for name, draw := range map[string]func(string, *outcome) error{
		"day": dayChart, "stranded": strandedChart, "capacity-back": capacityBackChart,
		"wait": waitChart, "drains": drainsChart,
	} {
		if err := draw(filepath.Join(dir, name+"-"+p.String()+".png"), oc); err != nil {
			return fmt.Errorf("%s chart: %w", name, err)
		}
	}
	return nil
}

// chart is a plot and its legend entries, which are drawn below the
// plot so they never cover the data.
type chart struct {
	*plot.Plot
	entries []legendEntry
}

type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

func (c *chart) add(name string, thumb plot.Thumbnailer) {
	c.entries = append(c.entries, legendEntry{name, thumb})
}

// newPlot starts a chart. An x axis of "days since the start" gets a tick
// a day and a label every day, 5 or 10 days, by the span.
func newPlot(title, x, y string) *chart {
	pl := plot.New()
	pl.Title.Text = title
	pl.X.Label.Text = x
	pl.Y.Label.Text = y
	pl.Y.Min = 0
	if x == daysAxis {
		pl.X.Tick.Marker = dayTicks{}
	}
	return &chart{Plot: pl}
}

// daysAxis labels the x axis of the charts over the run: day d spans
// [d, d+1), its figures sit at d+0.5.
const daysAxis = "days since the start"

// stepTicks puts a tick every minor and a label every major units.
type stepTicks struct{ minor, major float64 }

// Ticks returns the ticks from min to max.
func (s stepTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for i := math.Ceil(lo / s.minor); i*s.minor <= hi+1e-9; i++ {
		v := i * s.minor
		t := plot.Tick{Value: v}
		if r := math.Mod(v, s.major); math.Abs(r) < 1e-9 || math.Abs(r-s.major) < 1e-9 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// dayTicks is a tick a day, labelled every 1, 5 or 10 days by the span.
type dayTicks struct{}

// Ticks returns the ticks from min to max.
func (dayTicks) Ticks(lo, hi float64) []plot.Tick {
	major := 1.0
	switch {
	case hi-lo > 60:
		major = 10
	case hi-lo > 12:
		major = 5
	}
	return stepTicks{minor: 1, major: major}.Ticks(lo, hi)
}

func line(xys plotter.XYs, c color.Color, width vg.Length, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = width
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return l, nil
}

// layer is one band of the stacked day chart.
type layer struct {
	name  string
	color color.RGBA
	value func(p sim.Point) int
}

// dayChart draws the second simulated day (the first is warm-up) as a
// stacked area, with the inference guarantee and the level down to which
// inference may lend.
func dayChart(path string, oc *outcome) error {
	r := oc.res
	const day = 24 * time.Hour
	from := day
	if time.Duration(r.Hours*float64(time.Hour)) < 2*day {
		from = 0
	}
	var pts []sim.Point
	for _, p := range r.Series {
		if p.At >= from && p.At <= from+day {
			pts = append(pts, p)
		}
	}
	borrowedBatch := func(p sim.Point) int { return min(p.Borrowed, p.Batch) }
	layers := []layer{
		{"inference", blue, func(p sim.Point) int { return p.Inference }},
		{"training, own share", green, func(p sim.Point) int { return p.Training - (p.Borrowed - borrowedBatch(p)) }},
		{"training on lent GPUs", lightGrn, func(p sim.Point) int { return p.Borrowed - borrowedBatch(p) }},
		{"batch on research's unused quota", orange, func(p sim.Point) int { return p.Batch - borrowedBatch(p) }},
		{"batch on lent GPUs", lightOrg, borrowedBatch},
		{"idle", grey, func(p sim.Point) int { return p.Idle }},
	}
	date := r.Start.Add(from)
	pl := newPlot(fmt.Sprintf("Day %d of the run (%s, %s), policy %s", int(from/day)+1, date.Format("Mon 2 Jan 2006"),
		"seed "+fmt.Sprint(r.Seed), r.Policy), "hour of day (UTC)", "GPUs")
	pl.Y.Max = float64(r.GPUs) * 1.02
	pl.X.Min, pl.X.Max = 0, 24
	pl.X.Tick.Marker = stepTicks{minor: 1, major: 3}
	for li := len(layers) - 1; li >= 0; li-- {
		xys := make(plotter.XYs, len(pts))
		for i, p := range pts {
			sum := 0
			for _, l := range layers[:li+1] {
				sum += l.value(p)
			}
			xys[i].X, xys[i].Y = (p.At - from).Hours(), float64(sum)
		}
		ln, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		ln.FillColor = layers[li].color
		ln.LineStyle.Width = 0
		pl.Add(ln)
		pl.add(layers[li].name, ln)
	}
	demand := make(plotter.XYs, len(pts))
	for i, p := range pts {
		demand[i].X, demand[i].Y = (p.At - from).Hours(), float64(p.Demand)
	}
	dl, err := line(demand, color.Black, vg.Points(1), true)
	if err != nil {
		return err
	}
	guarantee := float64(r.InferenceNominal)
	lendFloor := guarantee - 700*float64(r.GPUs)/2048
	gl, err := line(plotter.XYs{{X: 0, Y: guarantee}, {X: 24, Y: guarantee}}, red, vg.Points(1.5), false)
	if err != nil {
		return err
	}
	ll, err := line(plotter.XYs{{X: 0, Y: lendFloor}, {X: 24, Y: lendFloor}}, purple, vg.Points(1.5), true)
	if err != nil {
		return err
	}
	pl.Add(dl, gl, ll)
	pl.add("inference demand", dl)
	pl.add(fmt.Sprintf("inference guarantee (%.0f)", guarantee), gl)
	pl.add(fmt.Sprintf("lends down to %.0f (%.0f lendable)", lendFloor, guarantee-lendFloor), ll)
	return pl.save(path, 9*vg.Inch, 5.5*vg.Inch, 3)
}

// strandedChart draws the stranded GPUs per hour over the run: the hour's
// mean as a line in a band from its least to its most, and down GPUs.
func strandedChart(path string, oc *outcome) error {
	r := oc.res
	pl := newPlot(fmt.Sprintf("Stranded GPUs per hour (free on partly used nodes), policy %s, seed %d", r.Policy, r.Seed), daysAxis, "GPUs")
	type agg struct{ sum, n, lo, hi, down float64 }
	hours := map[int]*agg{}
	var keys []int
	for _, p := range r.Series {
		h := int(p.At / time.Hour)
		a := hours[h]
		if a == nil {
			a = &agg{lo: 1e9}
			hours[h] = a
			keys = append(keys, h)
		}
		v := float64(p.Stranded)
		a.sum += v
		a.n++
		a.lo, a.hi = min(a.lo, v), max(a.hi, v)
		a.down = max(a.down, float64(p.Down))
	}
	slices.Sort(keys)
	var mean, band, down plotter.XYs
	for _, h := range keys {
		a := hours[h]
		x := (float64(h) + 0.5) / 24
		mean = append(mean, plotter.XY{X: x, Y: a.sum / a.n})
		band = append(band, plotter.XY{X: x, Y: a.hi})
		down = append(down, plotter.XY{X: x, Y: a.down})
	}
	for i := len(keys) - 1; i >= 0; i-- {
		band = append(band, plotter.XY{X: (float64(keys[i]) + 0.5) / 24, Y: hours[keys[i]].lo})
	}
	poly, err := plotter.NewPolygon(band)
	if err != nil {
		return err
	}
	poly.Color = lightRed
	poly.LineStyle.Width = 0
	ml, err := line(mean, red, vg.Points(1), false)
	if err != nil {
		return err
	}
	dl, err := line(down, darkGrey, vg.Points(1), false)
	if err != nil {
		return err
	}
	five := 0.05 * float64(r.GPUs)
	fl, err := line(plotter.XYs{{X: 0, Y: five}, {X: r.Hours / 24, Y: five}}, color.Black, vg.Points(1), true)
	if err != nil {
		return err
	}
	pl.Add(poly, ml, dl, fl)
	pl.Y.Max = max(pl.Y.Max, 1.1*five)
	pl.add("stranded, least to most in the hour", poly)
	pl.add("stranded, hourly mean", ml)
	pl.add("down (failed nodes), most in the hour", dl)
	pl.add("5% of the fleet (target)", fl)
	return pl.save(path, 9*vg.Inch, 4.5*vg.Inch, 2)
}

// capacityBackChart draws, per day, how long inference replicas waited
// for capacity taken back from borrowers (or, under the static split,
// for any capacity): the day's median and most, against the 5-minute target.
func capacityBackChart(path string, oc *outcome) error {
	r := oc.res
	days := int(r.Hours/24 + 0.5)
	perDay := make([][]time.Duration, days)
	if len(r.Reclaims) > 0 {
		for _, rc := range r.Reclaims {
			if d := int(rc.At / (24 * time.Hour)); d < days {
				perDay[d] = append(perDay[d], rc.Wait)
			}
		}
	}
	title := "Inference capacity back: wait of replicas admitted on reclaimed GPUs"
	if len(r.Reclaims) == 0 {
		title = "Inference wait for capacity (no lending, nothing to reclaim)"
		// The host's waits are not time-stamped: the report's per-day
		// inference waits stand in.
		for d := range days {
			rep := oc.rec.Report(r.Start.Add(time.Duration(d)*24*time.Hour), r.Start.Add(time.Duration(d+1)*24*time.Hour))
			for _, q := range rep.Waits.ByTeam {
				if q.Key == sim.QueueInference && q.Count > 0 {
					perDay[d] = append(perDay[d], q.P50, q.P99)
				}
			}
		}
	}
	pl := newPlot(fmt.Sprintf("%s, policy %s, seed %d", title, r.Policy, r.Seed), daysAxis, "minutes")
	var med, most plotter.XYs
	for d, ws := range perDay {
		if len(ws) == 0 {
			continue
		}
		slices.Sort(ws)
		x := float64(d) + 0.5
		med = append(med, plotter.XY{X: x, Y: sim.Quantile(ws, 0.5).Minutes()})
		most = append(most, plotter.XY{X: x, Y: ws[len(ws)-1].Minutes()})
	}
	target, err := line(plotter.XYs{{X: 0, Y: 5}, {X: float64(days), Y: 5}}, red, vg.Points(1.5), true)
	if err != nil {
		return err
	}
	pl.Add(target)
	pl.add("target: 5 min", target)
	for _, s := range []struct {
		name string
		xys  plotter.XYs
		c    color.Color
	}{{"daily median", med, blue}, {"daily most", most, darkGrey}} {
		if len(s.xys) == 0 {
			continue
		}
		l, err := line(s.xys, s.c, vg.Points(1.5), false)
		if err != nil {
			return err
		}
		sc, err := plotter.NewScatter(s.xys)
		if err != nil {
			return err
		}
		sc.Color = s.c
		sc.Shape = draw.CircleGlyph{}
		pl.Add(l, sc)
		pl.add(s.name, l)
	}
	pl.Y.Max = max(pl.Y.Max*1.1, 6)
	return pl.save(path, 9*vg.Inch, 4*vg.Inch, 1)
}

// daily is the metrics report of each day of the run.
func daily(oc *outcome) []metrics.Report {
	r := oc.res
	days := int(r.Hours/24 + 0.5)
	out := make([]metrics.Report, days)
	for d := range days {
		out[d] = oc.rec.Report(r.Start.Add(time.Duration(d)*24*time.Hour), r.Start.Add(time.Duration(d+1)*24*time.Hour))
	}
	return out
}

// waitChart draws each team's p90 queue wait per day, on a log scale.
func waitChart(path string, oc *outcome) error {
	r := oc.res
	pl := newPlot(fmt.Sprintf("Queue wait p90 per team per day, policy %s, seed %d", r.Policy, r.Seed), daysAxis, "hours (log scale)")
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	pl.Y.Min, pl.Y.Max = 0.01, 1
	pl.X.Min, pl.X.Max = 0, math.Ceil(r.Hours/24)
	series := map[string]plotter.XYs{}
	for d, rep := range daily(oc) {
		for _, q := range rep.Waits.ByTeam {
			if q.Count == 0 {
				continue
			}
			// Waits under 36 s sit on the floor of the log scale.
			h := max(q.P90.Hours(), 0.01)
			series[q.Key] = append(series[q.Key], plotter.XY{X: float64(d) + 0.5, Y: h})
			pl.Y.Max = max(pl.Y.Max, 2*h)
		}
	}
	for _, q := range []string{sim.QueueInference, sim.QueueResearch, sim.QueueBatch} {
		xys := series[q]
		if len(xys) == 0 {
			continue
		}
		l, err := line(xys, teamColor[q], vg.Points(1.5), false)
		if err != nil {
			return err
		}
		pl.Add(l)
		pl.add(q, l)
	}
	return pl.save(path, 9*vg.Inch, 4*vg.Inch, 1)
}

// drainsChart draws the drains of each day, the kills at the deadline
// among them, and the runs failed nodes ended.
func drainsChart(path string, oc *outcome) error {
	r := oc.res
	pl := newPlot(fmt.Sprintf("Drains per day, policy %s, seed %d", r.Policy, r.Seed), daysAxis, "per day")
	var drains, kills, lost plotter.Values
	for _, rep := range daily(oc) {
		drains = append(drains, float64(rep.Drains.Count))
		kills = append(kills, float64(rep.Drains.DeadlineMisses))
		lost = append(lost, float64(rep.Fleet.NodeLosses))
	}
	w := vg.Points(5)
	for i, s := range []struct {
		name string
		v    plotter.Values
		c    color.Color
	}{{"drains (capacity given back)", drains, blue}, {"killed at the deadline", kills, red}, {"runs ended by failed nodes", lost, darkGrey}} {
		b, err := plotter.NewBarChart(s.v, w)
		if err != nil {
			return err
		}
		b.Color = s.c
		b.LineStyle.Width = 0
		b.Offset = vg.Length(i-1) * w
		b.XMin = 0.5 // day d's bars centred on d+0.5, as the other charts' days
		pl.Add(b)
		pl.add(s.name, b)
	}
	pl.X.Min, pl.X.Max = 0, float64(len(drains))
	return pl.save(path, 9*vg.Inch, 4*vg.Inch, 1)
}
