package httpres_test

import (
	"math"
	"testing"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/bench/internal/httpres"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMedian(t *testing.T) {
	run := func(rps, p99 float64, reqs int64) httpres.Run {
		return httpres.Run{Alg: "RS256", Tokens: "pool", Server: "bare", RPS: rps, P50Ms: p99 / 3, P90Ms: p99 / 2, P99Ms: p99, Requests: reqs, Non2xx: 1}
	}
	tests := []struct {
		name     string
		rounds   []httpres.Run
		wantRPS  float64
		wantP99  float64
		wantReqs int64
		wantMin  float64
		wantMax  float64
	}{
		{"one", []httpres.Run{run(100, 3, 10)}, 100, 3, 10, 100, 100},
		{"three-outlier-low", []httpres.Run{run(100, 1, 10), run(40, 9, 4), run(110, 2, 11)}, 100, 2, 25, 40, 110},
		{"two-upper-median", []httpres.Run{run(100, 1, 10), run(120, 2, 12)}, 120, 2, 22, 100, 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := httpres.Median(tt.rounds)
			if got.RPS != tt.wantRPS || got.P99Ms != tt.wantP99 || got.Requests != tt.wantReqs {
				t.Errorf("Median() = rps %v p99 %v requests %d, want %v %v %d", got.RPS, got.P99Ms, got.Requests, tt.wantRPS, tt.wantP99, tt.wantReqs)
			}
			if got.RPSMin != tt.wantMin || got.RPSMax != tt.wantMax || got.Rounds != len(tt.rounds) {
				t.Errorf("Median() range %v–%v rounds %d, want %v–%v %d", got.RPSMin, got.RPSMax, got.Rounds, tt.wantMin, tt.wantMax, len(tt.rounds))
			}
			if got.Non2xx != int64(len(tt.rounds)) || got.Alg != "RS256" || got.Server != "bare" {
				t.Errorf("Median() = %+v, want the rounds' sums and labels", got)
			}
		})
	}
}

func TestPairedRatio(t *testing.T) {
	mk := func(rps ...float64) *httpres.Run {
		r := httpres.Median(func() []httpres.Run {
			var out []httpres.Run
			for _, v := range rps {
				out = append(out, httpres.Run{RPS: v})
			}
			return out
		}())
		return &r
	}
	tests := []struct {
		name       string
		a, b       *httpres.Run
		want       float64
		wantPaired bool
	}{
		// The machine halves its speed in round 2: the ratio of medians
		// (40/60) mixes rounds, the paired one does not.
		{"drift", mk(40, 20, 44), mk(50, 25, 60), 0.8, true},
		{"one round", mk(30), mk(60), 0.5, true},
		{"rounds differ", mk(30, 40), mk(60), 40.0 / 60, false},
		{"no rounds", &httpres.Run{RPS: 30}, &httpres.Run{RPS: 60}, 0.5, false},
		{"zero", &httpres.Run{RPS: 30}, &httpres.Run{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, paired := httpres.PairedRatio(tt.a, tt.b)
			if math.Abs(got-tt.want) > 1e-9 || paired != tt.wantPaired {
				t.Errorf("PairedRatio = %v, %v; want %v, %v", got, paired, tt.want, tt.wantPaired)
			}
		})
	}
}

func TestPairedCPURatio(t *testing.T) {
	mk := func(cpu ...float64) *httpres.Run {
		var rounds []httpres.Run
		for _, c := range cpu {
			rounds = append(rounds, httpres.Run{RPS: 1, CPUMicrosPerReq: c})
		}
		r := httpres.Median(rounds)
		return &r
	}
	// a costs 20 µs where b costs 16: 0.8× b's requests per CPU-second,
	// whatever the machine did to both in round 2.
	if got, paired := httpres.PairedCPURatio(mk(20, 40, 25), mk(16, 32, 20)); math.Abs(got-0.8) > 1e-9 || !paired {
		t.Errorf("PairedCPURatio = %v, %v; want 0.8, true", got, paired)
	}
	if got, _ := httpres.PairedCPURatio(&httpres.Run{RPS: 1}, mk(16)); got != 0 {
		t.Errorf("PairedCPURatio without a measurement = %v, want 0", got)
	}
}
