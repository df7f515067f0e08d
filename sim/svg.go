package sim

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Utilisation returns the fraction of hosts busy, averaged over bins equal
// slices of [from, to): x is each bin's start, y its mean utilisation.
func Utilisation(r *Result, from, to float64, bins int) (x, y []float64) {
	if bins <= 0 || !(to > from) {
		return nil, nil
	}
	width := (to - from) / float64(bins)
	busy := make([]float64, bins)
	for k := range r.Jobs {
		s, e := r.Start[k], r.End[k]
		if math.IsNaN(s) {
			continue
		}
		if math.IsNaN(e) {
			e = r.Stop
		}
		s, e = math.Max(s, from), math.Min(e, to)
		if e <= s {
			continue
		}
		n := float64(r.NHosts[k])
		for b := int((s - from) / width); b < bins; b++ {
			lo, hi := from+float64(b)*width, from+float64(b+1)*width
			if lo >= e {
				break
			}
			busy[b] += n * (math.Min(hi, e) - math.Max(lo, s))
		}
	}
	for b := range busy {
		x = append(x, from+float64(b)*width)
		y = append(y, busy[b]/(width*float64(r.Hosts)))
	}
	return x, y
}

// WriteSVG draws, for each result, its utilisation over the whole run and a
// Gantt chart of the window [from, from+span) (hosts down, time across;
// results need Config.Record). A span ≤ 0 shows the first twentieth of the
// run.
func WriteSVG(w io.Writer, rs []*Result, from, span float64) error {
	const W, left, right = 960.0, 70.0, 20.0
	const utilH, ganttH, gap = 120.0, 360.0, 50.0
	panel := utilH + ganttH + 2*gap
	H := panel*float64(len(rs)) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", W, H)
	plotW := W - left - right
	for i, r := range rs {
		y0 := float64(i)*panel + 30
		t0, t1 := math.Inf(1), 0.0
		for k, j := range r.Jobs {
			t0 = math.Min(t0, j.Submit)
			if !math.IsNaN(r.End[k]) {
				t1 = math.Max(t1, r.End[k])
			}
		}
		t1 = math.Max(t1, r.Stop)
		if math.IsInf(t0, 1) || !(t1 > t0) {
			continue
		}
		// Utilisation.
		xs, ys := Utilisation(r, t0, t1, 400)
		fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="14">%s: utilisation over time (%.0f s … %.0f s)</text>`+"\n", left, y0-10, esc(r.Policy), t0, t1)
		fmt.Fprintf(&b, `<path d="M%g %g V%g H%g" stroke="black" fill="none"/>`+"\n", left, y0, y0+utilH, left+plotW)
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">1</text><text x="%g" y="%g" text-anchor="end">0</text>`+"\n", left-4, y0+4, left-4, y0+utilH)
		var d strings.Builder
		for k := range xs {
			px := left + (xs[k]-t0)/(t1-t0)*plotW
			py := y0 + utilH*(1-ys[k])
			if k == 0 {
				fmt.Fprintf(&d, "M%.1f %.1f", px, py)
			} else {
				fmt.Fprintf(&d, " L%.1f %.1f", px, py)
			}
		}
		fmt.Fprintf(&b, `<path d="%s" stroke="#1f77b4" fill="none"/>`+"\n", d.String())
		// Gantt.
		g0 := y0 + utilH + gap
		f, sp := from, span
		if sp <= 0 {
			f, sp = t0, (t1-t0)/20
		}
		fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="14">%s: schedule, %.0f s … %.0f s (%d hosts)</text>`+"\n", left, g0-10, esc(r.Policy), f, f+sp, r.Hosts)
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="#f4f4f4" stroke="black"/>`+"\n", left, g0, plotW, ganttH)
		rowH := ganttH / float64(r.Hosts)
		for k := range r.Jobs {
			if k >= len(r.HostsOf) || r.HostsOf[k] == nil {
				continue
			}
			s, e := r.Start[k], r.End[k]
			if math.IsNaN(e) {
				e = r.Stop
			}
			s, e = math.Max(s, f), math.Min(e, f+sp)
			if e <= s {
				continue
			}
			x := left + (s-f)/sp*plotW
			wd := math.Max((e-s)/sp*plotW, 0.5)
			col := colour(k)
			for _, h := range r.HostsOf[k] {
				fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s</title></rect>`+"\n",
					x, g0+float64(h)*rowH, wd, math.Max(rowH-0.3, 0.3), col, esc(r.Jobs[k].ID))
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// colour gives job k one of a few distinguishable fills.
func colour(k int) string {
	palette := []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}
	return palette[(k*7)%len(palette)]
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
