package main

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/bench/internal/httpres"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const sample = `cpu-model: Test CPU
nproc: 2
goos: linux
cpu: Test
BenchmarkVerify/alg=HS256/impl=jwksverify/keys=jwks3-2         	1000	      3000 ns/op	    1900 B/op	      13 allocs/op
BenchmarkVerify/alg=HS256/impl=jwksverify/keys=jwks3-2         	1000	      2000 ns/op	    1900 B/op	      13 allocs/op
BenchmarkVerify/alg=HS256/impl=jwksverify/keys=jwks3-2         	1000	      4000 ns/op	    1900 B/op	      13 allocs/op
BenchmarkVerify/alg=HS256/impl=golang-jwt+keyfunc/keys=jwks3-2 	1000	     10000 ns/op	    4600 B/op	      87 allocs/op
BenchmarkVerify/alg=HS256/impl=floor/keys=jwks3-2              	1000	      1000 ns/op	     544 B/op	       7 allocs/op
BenchmarkVerify/alg=ES256/impl=jwksverify/keys=jwks3-2         	1000	     76000 ns/op	    2768 B/op	      29 allocs/op
BenchmarkVerify/alg=ES256/impl=floor/keys=jwks3-2              	1000	     70000 ns/op	     608 B/op	      11 allocs/op
BenchmarkOverFloor/alg=ES256/keys=jwks3-2     	100	   150000 ns/op	      2000 ns-over-floor
BenchmarkTokenCache/entries=10/budget=ample/impl=jwksverify-cached-2 	100	 300 ns/op	 1500 B/entry	 10 entries-held	 516 token-bytes	 0 B/op	 0 allocs/op
--- FAIL: BenchmarkBroken
PASS
`

func TestParse(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatalf("parse() = %v", err)
	}
	tests := []struct {
		name string
		kv   []string
		unit string
		want float64
	}{
		{"median-of-three", []string{"alg", "HS256", "impl", "jwksverify"}, "ns/op", 3000},
		{"allocs", []string{"alg", "ES256", "impl", "floor"}, "allocs/op", 11},
		{"custom-unit", []string{"budget", "ample"}, "B/entry", 1500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := "Verify"
			if tt.unit == "B/entry" {
				top = "TokenCache"
			}
			got, ok := res.find(top, tt.kv...).median(tt.unit)
			if !ok || got != tt.want {
				t.Errorf("median(%s) = %v, %v, want %v", tt.unit, got, ok, tt.want)
			}
		})
	}
	if got := res.config["cpu-model"]; got != "Test CPU" {
		t.Errorf("config[cpu-model] = %q, want %q", got, "Test CPU")
	}
	if got := res.values("Verify", "alg"); strings.Join(got, ",") != "HS256,ES256" {
		t.Errorf("values(alg) = %v, want [HS256 ES256]", got)
	}
}

func TestReport(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatalf("parse() = %v", err)
	}
	var md bytes.Buffer
	writeMarkdown(&md, res, nil, nil, nil, nil, "benchmarks.svg")
	for _, want := range []string{
		"| uncached HS256 ≤ 0.6× golang-jwt + keyfunc | 0.30× (3.00 µs vs 10.0 µs) | pass |",
		"| uncached ES256 ≤ floor + 5 µs | floor +2.00 µs ± 0 (paired; medians: +6.00 µs) | pass |",
		"| uncached ES256 ≤ 25 allocations | 29 (the floor alone: 11; 18 above it) | **MISS** |",
		"| ≤ 1 KB of heap per cached token | 1500 B per entry",
		"not measured yet: run bench/http.sh",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	var doc struct{ XMLName xml.Name }
	if err := xml.Unmarshal(chartSVG(res), &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Errorf("chartSVG() is not an SVG document: %v, root %q", err, doc.XMLName.Local)
	}
}

// TestReportHTTPRatios checks that the HTTP section and the targets give
// each run's ratio to the absolute floor and to the bare handler.
func TestReportHTTPRatios(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatalf("parse() = %v", err)
	}
	run := func(server string, rps float64) httpres.Run {
		return httpres.Run{Alg: "RS256", Tokens: httpres.TokensRepeated, Server: server, RPS: rps, P99Ms: 1}
	}
	hr := &httpres.Report{Runs: []httpres.Run{
		run(httpres.ServerFloor, 60000), run(httpres.ServerBare, 50000), run(httpres.ServerJwksverify, 45000), run(httpres.ServerBaseline, 15000),
		run(httpres.ServerPolicy, 42000), run(httpres.ServerRevocation, 44100),
	}, RevocationEntries: 100000, GRPC: []httpres.Run{run(httpres.ServerGRPCFloor, 20000), run(httpres.ServerJwksverify, 13000)}}
	var md bytes.Buffer
	writeMarkdown(&md, res, nil, nil, []byte("## Kept by hand\n\ntext"), hr, "benchmarks.svg")
	for _, want := range []string{
		"| HTTP /v1/authz RS256, repeated token ≥ 80% of the bare handler's req/s | 90% (45000 vs 50000 req/s) | pass |",
		"| HTTP /v1/authz RS256, repeated token ≥ 0.85× the absolute floor's req/s | 0.75× (45000 vs 60000 req/s) | **MISS** |",
		"| gRPC Check RS256, repeated token ≥ 0.90× the bare gRPC server's calls/s | 0.65× (13000 vs 20000 calls/s) | **MISS** |",
		"| gRPC Check RS256, repeated token, p99 ≤ 1.5× the bare gRPC server's | 1.00× (1.00 vs 1.00 ms) | pass |",
		"| RS256 | repeated | jwksverify | 45000 | — | 0.75× | 90% | 3.00× |",
		"| RS256 | repeated | floor | 60000 | — | 1.00× |",
		"| HTTP /v1/authz RS256, repeated token, with a scopes+claims policy ≥ 95% of the same run without | 93% (42000 vs 45000 req/s) | **MISS** |",
		"| HTTP /v1/authz RS256, repeated token, with 100000 revocation entries (store: memory) ≥ 97% of the same run without revocation | 98% (44100 vs 45000 req/s) | pass |",
		"| RS256 | repeated | jwksverify-revocation | 44100 | — | 0.73× |",
		"`jwksverify-revocation` the same with `revocation: {store: memory}` and a `state_dir` holding 100000 revocation entries",
		"| RS256 | repeated | jwksverify | 13000 | — | 0.65× |",
		"| RS256 | repeated | grpc-floor | 20000 | — | 1.00× |",
		"## Kept by hand\n\ntext\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}
