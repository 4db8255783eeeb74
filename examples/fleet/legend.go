package main

import (
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// save renders the chart as a w x h PNG: the plot on top and its legend
// below, in as many columns as rows need.
func (c *chart) save(path string, w, h vg.Length, rows int) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
	dc := draw.New(img)
	rowH := vg.Points(15)
	strip := vg.Length(rows)*rowH + vg.Points(10)
	c.Plot.Draw(draw.Crop(dc, 0, 0, strip, 0))
	cols := (len(c.entries) + rows - 1) / rows
	if cols > 0 {
		bottom := draw.Crop(dc, vg.Points(40), -vg.Points(10), 0, -(h - strip))
		colW := (bottom.Max.X - bottom.Min.X) / vg.Length(cols)
		for i := range cols {
			l := plot.NewLegend()
			l.Top, l.Left = true, true
			for _, e := range c.entries[i*rows : min(len(c.entries), (i+1)*rows)] {
				l.Add(e.name, e.thumb)
			}
			l.Draw(draw.Crop(bottom, vg.Length(i)*colW, -(vg.Length(cols-i-1) * colW), 0, 0))
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (&vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
