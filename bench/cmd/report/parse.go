package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results are the parsed benchmark lines of one `go test -bench` output,
// with every -count repetition kept.
type results struct {
	// config holds the "key: value" lines (goos, cpu, and run.sh's nproc, go, commit…).
	config map[string]string
	// byName maps a benchmark name without its -GOMAXPROCS suffix to its samples.
	byName map[string]*bench
	// order is the names in first-seen order.
	order []string
}

// bench is the samples of one benchmark: per unit, one value per repetition.
type bench struct {
	name   string
	top    string            // "Verify", "ScaleKeys", …
	params map[string]string // the key=value parts of the name
	units  map[string][]float64
}

var (
	configLine = regexp.MustCompile(`^([a-z][a-zA-Z0-9_-]*):\s*(.*)$`)
	procSuffix = regexp.MustCompile(`-\d+$`)
)

// parse reads `go test -bench` output (the Go benchmark format).
func parse(r io.Reader) (*results, error) {
	res := &results{config: map[string]string{}, byName: map[string]*bench{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := configLine.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, "Benchmark") {
			res.config[m[1]] = m[2]
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			continue // a name line without values (a failed or skipped benchmark)
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		b := res.byName[name]
		if b == nil {
			b = newBench(name)
			res.byName[name] = b
			res.order = append(res.order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("report: %q: %w", line, err)
			}
			b.units[f[i+1]] = append(b.units[f[i+1]], v)
		}
	}
	return res, sc.Err()
}

func newBench(name string) *bench {
	b := &bench{name: name, params: map[string]string{}, units: map[string][]float64{}}
	parts := strings.Split(strings.TrimPrefix(name, "Benchmark"), "/")
	b.top = parts[0]
	for _, p := range parts[1:] {
		if k, v, ok := strings.Cut(p, "="); ok {
			b.params[k] = v
		}
	}
	return b
}

// find returns the benchmark under top whose parameters include every
// key=value of kv (given as alternating keys and values), or nil.
func (r *results) find(top string, kv ...string) *bench {
	for _, name := range r.order {
		b := r.byName[name]
		if b.top != top {
			continue
		}
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			if b.params[kv[i]] != kv[i+1] {
				ok = false
				break
			}
		}
		if ok {
			return b
		}
	}
	return nil
}

// values returns the distinct values of param among top's benchmarks, in
// first-seen order.
func (r *results) values(top, param string) []string {
	var out []string
	for _, name := range r.order {
		b := r.byName[name]
		if v, ok := b.params[param]; ok && b.top == top && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// median returns the median of unit's samples, and whether there were any.
func (b *bench) median(unit string) (float64, bool) {
	if b == nil {
		return 0, false
	}
	s := slices.Clone(b.units[unit])
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// spread returns the relative half-range of unit's samples ((max-min)/2 over
// the median): a rough ± for people, the CI is in benchstat's output.
func (b *bench) spread(unit string) float64 {
	m, ok := b.median(unit)
	if !ok || m == 0 {
		return 0
	}
	s := b.units[unit]
	return (slices.Max(s) - slices.Min(s)) / 2 / m
}

// ns is the median ns/op, or NaN-free 0 when absent.
func (b *bench) ns() float64 { v, _ := b.median("ns/op"); return v }

// allocs is the median allocs/op.
func (b *bench) allocs() float64 { v, _ := b.median("allocs/op"); return v }

// count returns the number of repetitions of the benchmark.
func (b *bench) count() int {
	if b == nil {
		return 0
	}
	return len(b.units["ns/op"])
}
