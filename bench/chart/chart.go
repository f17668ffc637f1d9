// Package chart draws the PNG line and bar charts of the benchmark reports.
package chart

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line of a chart.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
}

// Axes describe a chart's title and axes.
type Axes struct {
	Title, X, Y string
	LogX, LogY  bool
	// Where the legend goes; the default is the bottom right corner.
	LegendTop, LegendLeft bool
}

var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255},
}

// Lines saves a line chart with points as a 7x4.5 inch PNG.
func Lines(path string, ax Axes, series []Series) error {
	p := plot.New()
	p.Title.Text = ax.Title
	p.X.Label.Text = ax.X
	p.Y.Label.Text = ax.Y
	if ax.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: 2}
	}
	if ax.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: 2}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = ax.LegendTop
	p.Legend.Left = ax.LegendLeft
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("chart %s: series %q has %d x and %d y values", path, s.Name, len(s.X), len(s.Y))
		}
		xys := make(plotter.XYs, len(s.X))
		for j := range s.X {
			xys[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("chart %s: %w", path, err)
		}
		c := palette[i%len(palette)]
		l.Color, pts.Color = c, c
		l.Width = vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(2)
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
	}
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// Bars saves a bar chart of values over labelled categories.
func Bars(path string, ax Axes, labels []string, values []float64) error {
	p := plot.New()
	p.Title.Text = ax.Title
	p.X.Label.Text = ax.X
	p.Y.Label.Text = ax.Y
	if ax.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: 2}
	}
	bars, err := plotter.NewBarChart(plotter.Values(values), vg.Points(max(2, 400/float64(len(values)+1))))
	if err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	bars.Color = palette[0]
	bars.LineStyle.Width = 0
	p.Add(plotter.NewGrid(), bars)
	if len(labels) > 0 {
		p.NominalX(labels...)
	}
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}

// HBars saves a chart of horizontal bars, one a label, top to bottom, with
// a dashed line at ref (none if 0); the value axis runs from lo to hi, and
// a longer bar is cut at hi (a label should then carry its value).
func HBars(path string, ax Axes, labels []string, values []float64, ref, lo, hi float64) error {
	p := plot.New()
	p.Title.Text = ax.Title
	p.X.Label.Text = ax.X
	rev := make(plotter.Values, len(values))
	names := make([]string, len(labels))
	for i := range values { // gonum draws the first bar at the bottom
		rev[len(values)-1-i] = min(values[i], hi)
		names[len(labels)-1-i] = labels[i]
	}
	bars, err := plotter.NewBarChart(rev, vg.Points(14))
	if err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	bars.Horizontal = true
	bars.Color = palette[0]
	bars.LineStyle.Width = 0
	p.Add(plotter.NewGrid(), bars)
	p.NominalY(names...)
	p.X.Min, p.X.Max = lo, hi
	if ref > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: ref, Y: -0.5}, {X: ref, Y: float64(len(values)) - 0.5}})
		if err != nil {
			return fmt.Errorf("chart %s: %w", path, err)
		}
		l.Color = palette[3]
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	return p.Save(8*vg.Inch, vg.Length(1.2+0.28*float64(len(values)))*vg.Inch, path)
}
