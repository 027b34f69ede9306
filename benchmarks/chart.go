package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var systemColors = map[string]color.RGBA{
	"sluice-1":          {R: 31, G: 119, B: 180, A: 255},
	"sluice-1-dialback": {R: 23, G: 190, B: 207, A: 255},
	"sluice-3":          {R: 44, G: 160, B: 44, A: 255},
	"nats-always":       {R: 255, G: 127, B: 14, A: 255},
	"nats-default":      {R: 148, G: 103, B: 189, A: 255},
	"nats-3":            {R: 214, G: 39, B: 40, A: 255},
	"nats-3-always":     {R: 140, G: 86, B: 75, A: 255},
	"sluice-kafka-1":    {R: 127, G: 127, B: 127, A: 255},
	"kfake":             {R: 188, G: 189, B: 34, A: 255},
}

// errXY is points with asymmetric error bars (min–max around a median).
type errXY struct {
	plotter.XYs
	lo, hi []float64
}

func (e errXY) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

// writeChart draws the throughput bars (medians, min–max whiskers) and the
// latency percentiles into one PNG.
func writeChart(r *report, path string) error {
	o := r.Options
	cols := max(3, len(o.Rates)*len(o.LatSizes))
	rows := 2
	top := []*plot.Plot{
		r.barPanel("Produce throughput (MB/s, acked)", "MB/s", "produce", mbPerSec, true),
		r.barPanel("Produce throughput (k records/s, acked)", "thousand records/s", "produce", func(x result) float64 { return x.RecsPerSec / 1e3 }, false),
		r.barPanel("Consume throughput (MB/s)", "MB/s", "consume", mbPerSec, false),
	}
	for len(top) < cols {
		top = append(top, nil)
	}
	var bottom []*plot.Plot
	for _, size := range o.LatSizes {
		for _, rate := range o.Rates {
			bottom = append(bottom, r.latencyPanel(size, rate))
		}
	}
	for len(bottom) < cols {
		bottom = append(bottom, nil)
	}
	const dpi = 110
	w, h := vg.Length(cols)*6*vg.Inch, vg.Length(rows)*5*vg.Inch+0.7*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	// Heading across the top.
	title := fmt.Sprintf("Sluice %s vs NATS JetStream %s on %d CPUs — medians of %d runs, whiskers min–max; disk dd %.0f MB/s, %.0f fsyncs/s",
		short(r.Sluice.Commit), r.Options.NATSVersion, r.Machine.CPUs, o.Runs, newStat(r.Disk.DD).Med, newStat(r.Disk.Fsync).Med)
	ts := plot.New().Title.TextStyle
	ts.Font.Size = vg.Points(15)
	ts.XAlign = draw.XCenter
	ts.YAlign = draw.YCenter
	dc.FillText(ts, vg.Point{X: w / 2, Y: h - 0.3*vg.Inch}, title)
	body := draw.Crop(dc, 0, 0, 0, -0.7*vg.Inch)
	plots := [][]*plot.Plot{top, bottom}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	canvases := plot.Align(plots, tiles, body)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plainTicks are gonum's default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// plainLogTicks are gonum's log ticks labelled 0.1, 1, 10, ... 100000.
type plainLogTicks struct{}

func (plainLogTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

func short(s string) string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

func styled(p *plot.Plot) {
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.X.Tick.Label.Font.Size = vg.Points(12)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), vg.Points(-4)
	p.Legend.ThumbnailWidth = vg.Points(18)
	p.Add(plotter.NewGrid())
}

// barPanel draws one bar per system per record size, median height, a
// min–max whisker and the median written above.
func (r *report) barPanel(title, ylabel, kind string, f func(result) float64, ddLine bool) *plot.Plot {
	p := plot.New()
	styled(p)
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Tick.Marker = plainTicks{}
	p.X.Label.Text = "record size"
	sizes := r.Options.Sizes
	n := len(r.Systems)
	width := 0.8 / float64(n)
	var ticks plot.ConstantTicks
	top := 0.0
	var lxy plotter.XYs
	var labels []string
	for gi, size := range sizes {
		ticks = append(ticks, plot.Tick{Value: float64(gi), Label: sizeName(size)})
	}
	for si, s := range r.Systems {
		var pts errXY
		var bars []*plotter.Polygon
		for gi, size := range sizes {
			st := r.stat(key{s.Name, kind, size, 0}, f)
			if !st.ok() {
				continue
			}
			x := float64(gi) + (float64(si)-float64(n-1)/2)*width
			poly, _ := plotter.NewPolygon(plotter.XYs{{X: x - width*0.45, Y: 0}, {X: x + width*0.45, Y: 0}, {X: x + width*0.45, Y: st.Med}, {X: x - width*0.45, Y: st.Med}})
			poly.Color = systemColors[s.Name]
			poly.LineStyle.Width = 0
			bars = append(bars, poly)
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: st.Med})
			pts.lo = append(pts.lo, st.Med-st.Min)
			pts.hi = append(pts.hi, st.Max-st.Med)
			top = math.Max(top, st.Max)
			lxy = append(lxy, plotter.XY{X: x, Y: st.Max})
			labels = append(labels, fmtNum(st.Med))
		}
		for _, b := range bars {
			p.Add(b)
		}
		if len(bars) > 0 {
			p.Legend.Add(s.Label, bars[0])
		} else {
			poly, _ := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 0, Y: 0}, {X: 0, Y: 0}})
			poly.Color = systemColors[s.Name]
			p.Legend.Add(s.Label+" (no data)", poly)
		}
		if len(pts.XYs) > 0 {
			eb, err := plotter.NewYErrorBars(pts)
			if err == nil {
				eb.LineStyle.Width = vg.Points(1.2)
				eb.CapWidth = vg.Points(6)
				p.Add(eb)
			}
		}
	}
	if len(lxy) > 0 {
		if l, err := plotter.NewLabels(plotter.XYLabels{XYs: lxy, Labels: labels}); err == nil {
			for i := range l.TextStyle {
				l.TextStyle[i].Font.Size = vg.Points(10)
				l.TextStyle[i].XAlign = draw.XCenter
			}
			l.Offset = vg.Point{Y: vg.Points(3)}
			p.Add(l)
		}
	}
	dd := newStat(r.Disk.DD)
	if ddLine && dd.ok() {
		v := 0.6 * dd.Med
		line, _ := plotter.NewLine(plotter.XYs{{X: -0.5, Y: v}, {X: float64(len(sizes)) - 0.5, Y: v}})
		line.LineStyle.Width = vg.Points(1.5)
		line.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		line.LineStyle.Color = color.RGBA{R: 200, A: 255}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("60%% of dd (%.0f MB/s)", v), line)
		top = math.Max(top, v)
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = -0.5, float64(len(sizes))-0.5
	p.Y.Min = 0
	// Room above the bars for the legend (4-5 lines) and the value labels.
	p.Y.Max = top * 1.6
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	return p
}

// latencyPanel draws p50/p99/p99.9/max per system at one rate on a log axis.
func (r *report) latencyPanel(size, rate int) *plot.Plot {
	p := plot.New()
	styled(p)
	p.Title.Text = fmt.Sprintf("Produce→consume latency at %s records/s, %s", fmtNum(float64(rate)), sizeName(size))
	p.Y.Label.Text = "ms (log scale)"
	p.X.Label.Text = "percentile"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plainLogTicks{}
	quantiles := []struct {
		name string
		f    func(result) float64
	}{{"p50", p50}, {"p99", p99}, {"p99.9", p999}, {"max", pmax}}
	var ticks plot.ConstantTicks
	for i, q := range quantiles {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: q.name})
	}
	lo, hi := math.Inf(1), 0.0
	n := len(r.Systems)
	for si, s := range r.Systems {
		k := key{s.Name, "latency", size, rate}
		var pts errXY
		for qi, q := range quantiles {
			st := r.stat(k, q.f)
			if !st.ok() || st.Min <= 0 {
				continue
			}
			x := float64(qi) + (float64(si)-float64(n-1)/2)*0.08
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: st.Med})
			pts.lo = append(pts.lo, st.Med-st.Min)
			pts.hi = append(pts.hi, st.Max-st.Med)
			lo, hi = math.Min(lo, st.Min), math.Max(hi, st.Max)
		}
		label := s.Label
		if note := notes(r.group(k)); note != "" && !sustained(r.group(k)) {
			label += " (rate not sustained)"
		}
		if len(pts.XYs) == 0 {
			continue
		}
		line, scatter, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			continue
		}
		c := systemColors[s.Name]
		line.LineStyle.Color, line.LineStyle.Width = c, vg.Points(2)
		scatter.GlyphStyle.Color, scatter.GlyphStyle.Radius = c, vg.Points(3.5)
		scatter.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(line, scatter)
		if eb, err := plotter.NewYErrorBars(pts); err == nil {
			eb.LineStyle.Color = c
			eb.LineStyle.Width = vg.Points(1)
			eb.CapWidth = vg.Points(5)
			p.Add(eb)
		}
		p.Legend.Add(label, line, scatter)
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = -0.4, float64(len(quantiles))-0.6
	if hi > 0 {
		p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
		// About a decade of headroom for the legend.
		p.Y.Max = math.Pow(10, math.Log10(hi)+1.3)
	} else {
		p.Y.Min, p.Y.Max = 0.1, 1000
	}
	return p
}

// sustained reports whether every run sent at (nearly) the asked rate.
func sustained(rs []result) bool {
	for _, x := range rs {
		if x.Capped || x.Achieved < 0.95*float64(x.Rate) {
			return false
		}
	}
	return true
}
