package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wrkOutput = `Running 10s test @ http://127.0.0.1:41234/v1/authz
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   645.25us  201.10us   9.80ms   90.00%
    Req/Sec    50.12k     1.20k   52.00k    80.00%
  Latency Distribution
     50%  601.00us
     75%  700.00us
     90%  810.00us
     99%    1.20ms
  501234 requests in 10.00s, 36.33MB read
  Non-2xx or 3xx responses: 12
  Socket errors: connect 0, read 1, write 0, timeout 2
Requests/sec:  50120.12
Transfer/sec:      3.63MB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(wrkOutput)
	if err != nil {
		t.Fatalf("parseWrk() = %v", err)
	}
	tests := []struct {
		name      string
		got, want float64
	}{
		{"rps", r.RPS, 50120.12},
		{"p50", r.P50Ms, 0.601},
		{"p90", r.P90Ms, 0.81},
		{"p99", r.P99Ms, 1.2},
		{"requests", float64(r.Requests), 501234},
		{"non-2xx", float64(r.Non2xx), 12},
		{"socket-errors", float64(r.SocketErrors), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := tt.got - tt.want; d > 1e-9 || d < -1e-9 {
				t.Errorf("parseWrk() %s = %v, want %v", tt.name, tt.got, tt.want)
			}
		})
	}
	if _, err := parseWrk("wrk: connection refused"); err == nil {
		t.Errorf("parseWrk(garbage) = nil error, want an error")
	}
}
