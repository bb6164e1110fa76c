package main

import (
	"bytes"
	"fmt"
	"html"
	"math"

	"github.com/jwksverify/jwksverify/bench/internal/impls"
)

var implColor = map[string]string{
	impls.Jwksverify: "#1f77b4",
	impls.Cached:     "#9ecae1",
	impls.Baseline:   "#ff7f0e",
	impls.JWX:        "#2ca02c",
	impls.GoJOSE:     "#9467bd",
	impls.Floor:      "#7f7f7f",
}

// chartSVG draws a grouped bar chart of BenchmarkVerify (keys=jwks3): one
// group per algorithm, one bar per implementation, µs on a log scale. It is
// plain SVG text: no fonts or scripts beyond what a browser has.
func chartSVG(res *results) []byte {
	const (
		width, height            = 980.0, 470.0
		left, right, top, bottom = 70.0, 20.0, 46.0, 100.0
	)
	algs := res.values("Verify", "alg")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, alg := range algs {
		for _, impl := range implOrder {
			if b := res.find("Verify", "alg", alg, "impl", impl, "keys", keysForTargets); b != nil && b.ns() > 0 {
				lo, hi = min(lo, b.ns()/1000), max(hi, b.ns()/1000)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0.1, 1
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	plotW, plotH := width-left-right, height-top-bottom
	y := func(usv float64) float64 {
		return top + plotH - (math.Log10(usv)-dlo)/(dhi-dlo)*plotH
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">Time to verify one token (µs, log scale; lower is better)</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%.0f" y="38" fill="#555555">key picked by kid from a 3-key JWKS; signature + exp + nbf + iss + aud; medians of bench/results-latest.txt</text>`+"\n", left)

	// Decade grid and labels.
	for d := dlo; d <= dhi; d++ {
		v := math.Pow(10, d)
		yy := y(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", left, yy, width-right, yy)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#333333">%s</text>`+"\n", left-6, yy+4, decadeLabel(v))
		if d < dhi {
			for m := 2.0; m < 10; m++ {
				ym := y(v * m)
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f2f2f2"/>`+"\n", left, ym, width-right, ym)
			}
		}
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", left, top+plotH, width-right, top+plotH)

	// Bars.
	groupW := plotW / float64(max(len(algs), 1))
	barW := groupW * 0.84 / float64(len(implOrder))
	for gi, alg := range algs {
		gx := left + float64(gi)*groupW + groupW*0.08
		for bi, impl := range implOrder {
			bb := res.find("Verify", "alg", alg, "impl", impl, "keys", keysForTargets)
			if bb == nil || bb.ns() <= 0 {
				continue
			}
			v := bb.ns() / 1000
			x, yy := gx+float64(bi)*barW, y(v)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s µs, %.0f allocs</title></rect>`+"\n",
				x, yy, barW-1, top+plotH-yy, implColor[impl], html.EscapeString(alg), html.EscapeString(impl), us(bb.ns()), bb.allocs())
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#111111">%s</text>`+"\n", left+(float64(gi)+0.5)*groupW, top+plotH+18, html.EscapeString(alg))
	}

	// Legend.
	lx, ly := left, height-bottom+48
	for _, impl := range implOrder {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", lx, ly-10, implColor[impl])
		label := impl
		if impl == impls.Baseline {
			label = "golang-jwt + keyfunc (baseline)"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+17, ly, html.EscapeString(label))
		lx += 20 + 7.2*float64(len([]rune(label))) + 18
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#555555">%s</text>`+"\n", left, height-14, html.EscapeString(machineLine(res)))
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func decadeLabel(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%g ms", v/1000)
	default:
		return fmt.Sprintf("%g µs", v)
	}
}

func machineLine(res *results) string {
	c := res.config
	return fmt.Sprintf("%s, %s cores, %s — one run on a shared machine: see docs/BENCHMARKS.md",
		firstNonEmpty(c["cpu-model"], c["cpu"], "unknown CPU"), firstNonEmpty(c["nproc"], "?"), firstNonEmpty(c["go"], "Go"))
}
