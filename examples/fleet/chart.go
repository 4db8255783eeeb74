package main

import (
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/fleetsched/fleet/sim"
)

// layer is one band of the stacked day chart.
type layer struct {
	name  string
	color color.RGBA
	value func(p sim.Point) int
}

// dayChart draws the second simulated day (the first is warm-up) as a
// stacked area: inference, training within its own share, training and
// batch on capacity lent by inference, the rest of batch, and idle.
func dayChart(path string, r *sim.Result) error {
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
	// Borrowed capacity is shown as its own band; it is taken from
	// batch first, as batch is the filler, then from training.
	borrowedBatch := func(p sim.Point) int { return min(p.Borrowed, p.Batch) }
	layers := []layer{
		{"inference", color.RGBA{R: 31, G: 119, B: 180, A: 255}, func(p sim.Point) int { return p.Inference }},
		{"training (own share)", color.RGBA{R: 44, G: 160, B: 44, A: 255}, func(p sim.Point) int { return p.Training - (p.Borrowed - borrowedBatch(p)) }},
		{"borrowed training", color.RGBA{R: 152, G: 223, B: 138, A: 255}, func(p sim.Point) int { return p.Borrowed - borrowedBatch(p) }},
		{"batch (own share)", color.RGBA{R: 255, G: 127, B: 14, A: 255}, func(p sim.Point) int { return p.Batch - borrowedBatch(p) }},
		{"borrowed batch", color.RGBA{R: 255, G: 187, B: 120, A: 255}, borrowedBatch},
		{"idle", color.RGBA{R: 210, G: 210, B: 210, A: 255}, func(p sim.Point) int { return p.Idle }},
	}
	pl := plot.New()
	pl.Title.Text = "One day of the fleet, policy " + r.Policy
	pl.X.Label.Text = "hour of day"
	pl.Y.Label.Text = "GPUs"
	pl.Y.Min, pl.Y.Max = 0, float64(r.GPUs)
	pl.Legend.Top = true
	pl.Legend.Left = true
	// Draw from the top band down: each filled line covers everything
	// below it, so the next, lower band paints over its own part.
	for li := len(layers) - 1; li >= 0; li-- {
		xys := make(plotter.XYs, len(pts))
		for i, p := range pts {
			sum := 0
			for _, l := range layers[:li+1] {
				sum += l.value(p)
			}
			xys[i].X = (p.At - from).Hours()
			xys[i].Y = float64(sum)
		}
		ln, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		ln.FillColor = layers[li].color
		ln.LineStyle.Width = 0
		pl.Add(ln)
		pl.Legend.Add(layers[li].name, ln)
	}
	demand := make(plotter.XYs, len(pts))
	for i, p := range pts {
		demand[i].X, demand[i].Y = (p.At - from).Hours(), float64(p.Demand)
	}
	dl, err := plotter.NewLine(demand)
	if err != nil {
		return err
	}
	dl.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	pl.Add(dl)
	pl.Legend.Add("inference demand", dl)
	return pl.Save(8*vg.Inch, 4.5*vg.Inch, path)
}

// strandedChart draws the stranded GPUs (free on partly used nodes) and
// the down GPUs over the whole run.
func strandedChart(path string, r *sim.Result) error {
	pl := plot.New()
	pl.Title.Text = "Stranded GPUs, policy " + r.Policy
	pl.X.Label.Text = "day"
	pl.Y.Label.Text = "GPUs"
	pl.Y.Min = 0
	stranded := make(plotter.XYs, len(r.Series))
	down := make(plotter.XYs, len(r.Series))
	for i, p := range r.Series {
		x := p.At.Hours() / 24
		stranded[i].X, stranded[i].Y = x, float64(p.Stranded)
		down[i].X, down[i].Y = x, float64(p.Down)
	}
	sl, err := plotter.NewLine(stranded)
	if err != nil {
		return err
	}
	sl.Color = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	dl, err := plotter.NewLine(down)
	if err != nil {
		return err
	}
	dl.Color = color.RGBA{R: 100, G: 100, B: 100, A: 255}
	five := plotter.NewFunction(func(float64) float64 { return 0.05 * float64(r.GPUs) })
	five.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	pl.Add(sl, dl, five)
	// Keep the 5% target line in view even when stranding stays below it.
	pl.Y.Max = max(pl.Y.Max, 0.06*float64(r.GPUs))
	pl.Legend.Add("stranded", sl)
	pl.Legend.Add("down (failed nodes)", dl)
	pl.Legend.Add("5% of the fleet", five)
	pl.Legend.Top = true
	return pl.Save(8*vg.Inch, 3.5*vg.Inch, path)
}
