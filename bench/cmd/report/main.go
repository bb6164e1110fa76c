// Command report turns the peer benchmark results (bench/run.sh) and the HTTP
// load results (bench/http.sh) into docs/BENCHMARKS.md and the chart
// docs/benchmarks.svg. Both sections are always generated from the committed
// inputs, so either script can rewrite the document.
//
// Usage:
//
//	report -bench results-latest.txt [-benchstat benchstat-latest.txt] [-notes analysis.md] \
//	    [-sections sections.md] [-http http-latest.json] -out ../docs/BENCHMARKS.md -svg ../docs/benchmarks.svg
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jwksverify/jwksverify/bench/internal/httpres"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run() error {
	benchPath := flag.String("bench", "results-latest.txt", "raw `go test -bench` output")
	statPath := flag.String("benchstat", "", "benchstat output to append (optional)")
	notesPath := flag.String("notes", "", "hand-written analysis to include after the targets (optional; missing file = none)")
	sectionsPath := flag.String("sections", "", "hand-written sections to include before the appendix (optional; missing file = none)")
	httpPath := flag.String("http", "", "bench/http.sh results JSON (optional; missing file = not run)")
	out := flag.String("out", "../docs/BENCHMARKS.md", "markdown file to write")
	svg := flag.String("svg", "../docs/benchmarks.svg", "SVG chart to write")
	flag.Parse()

	f, err := os.Open(*benchPath)
	if err != nil {
		return err
	}
	res, err := parse(f)
	f.Close()
	if err != nil {
		return err
	}
	if len(res.order) == 0 {
		return fmt.Errorf("%s: no benchmark results", *benchPath)
	}
	var stat []byte
	if *statPath != "" {
		if stat, err = os.ReadFile(*statPath); err != nil {
			return err
		}
	}
	var notes []byte
	if *notesPath != "" {
		if notes, err = os.ReadFile(*notesPath); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	var sections []byte
	if *sectionsPath != "" {
		if sections, err = os.ReadFile(*sectionsPath); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	var hr *httpres.Report
	if *httpPath != "" {
		if hr, err = httpres.Read(*httpPath); err != nil && !os.IsNotExist(err) {
			return err
		}
	}

	chart := chartSVG(res)
	rel, err := filepath.Rel(filepath.Dir(*out), *svg)
	if err != nil {
		rel = filepath.Base(*svg)
	}
	var md bytes.Buffer
	writeMarkdown(&md, res, stat, notes, sections, hr, filepath.ToSlash(rel))
	if err := os.WriteFile(*svg, chart, 0o644); err != nil {
		return err
	}
	return os.WriteFile(*out, md.Bytes(), 0o644)
}
