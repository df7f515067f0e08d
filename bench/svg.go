package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Series is one line of a plot.
type Series struct {
	Name   string
	Colour string
	X, Y   []float64
}

// LinePlot writes a self-contained SVG line chart of the series. With logX
// the x axis is logarithmic (x values must be > 0).
func LinePlot(w io.Writer, title, xlabel, ylabel string, logX bool, series []Series) error {
	const W, H, left, right, top, bottom = 720.0, 440.0, 80.0, 160.0, 40.0, 60.0
	fx := func(x float64) float64 {
		if logX {
			return math.Log10(x)
		}
		return x
	}
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i := range s.X {
			if logX && s.X[i] <= 0 {
				continue
			}
			x0, x1 = math.Min(x0, fx(s.X[i])), math.Max(x1, fx(s.X[i]))
			y0, y1 = math.Min(y0, s.Y[i]), math.Max(y1, s.Y[i])
		}
	}
	if math.IsInf(x0, 0) {
		return fmt.Errorf("bench: nothing to plot")
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	pad := (y1 - y0) * 0.05
	y0, y1 = y0-pad, y1+pad
	px := func(x float64) float64 { return left + (fx(x)-x0)/(x1-x0)*(W-left-right) }
	py := func(y float64) float64 { return H - bottom - (y-y0)/(y1-y0)*(H-top-bottom) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%g" y="24" font-size="15" text-anchor="middle">%s</text>`+"\n", (W-right+left)/2, esc(title))
	// Axes and ticks.
	fmt.Fprintf(&b, `<path d="M%g %g V%g H%g" stroke="black" fill="none"/>`+"\n", left, top, H-bottom, W-right)
	for i := 0; i <= 5; i++ {
		y := y0 + (y1-y0)*float64(i)/5
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">%s</text>`+"\n", left-6, py(y)+4, num(y))
		fmt.Fprintf(&b, `<path d="M%g %g H%g" stroke="#ddd"/>`+"\n", left, py(y), W-right)
	}
	for i := 0; i <= 5; i++ {
		xv := x0 + (x1-x0)*float64(i)/5
		label := xv
		if logX {
			label = math.Pow(10, xv)
		}
		xp := left + float64(i)/5*(W-left-right)
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", xp, H-bottom+18, num(label))
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", (W-right+left)/2, H-14, esc(xlabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (H-bottom+top)/2, esc(ylabel))
	for k, s := range series {
		var d strings.Builder
		for i := range s.X {
			if logX && s.X[i] <= 0 {
				continue
			}
			cmd := "L"
			if d.Len() == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, px(s.X[i]), py(s.Y[i]))
		}
		fmt.Fprintf(&b, `<path d="%s" stroke="%s" stroke-width="2" fill="none"/>`+"\n", strings.TrimSpace(d.String()), s.Colour)
		ly := top + 20 + float64(k)*20
		fmt.Fprintf(&b, `<path d="M%g %g h24" stroke="%s" stroke-width="3"/><text x="%g" y="%g">%s</text>`+"\n",
			W-right+12, ly, s.Colour, W-right+42, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e4:
		return fmt.Sprintf("%.3g", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
