// Package httpres is the results file that bench/cmd/httpbench writes and
// bench/cmd/report reads: the HTTP load runs (wrk against the real binary,
// the absolute floor, a bare net/http handler and a golang-jwt + keyfunc
// handler) and the memory
// of a serving process with a full token cache.
package httpres

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// Server names of [Run.Server].
const (
	ServerFloor        = "floor"                 // http.ListenAndServe, a handler that only writes 200: no mux, no timeouts
	ServerBare         = "bare"                  // net/http handler that only checks "Bearer " is there
	ServerJwksverify   = "jwksverify"            // the real binary, token cache on (the default)
	ServerNoCache      = "jwksverify-nocache"    // the real binary, token_cache.max_entries: 0
	ServerBaseline     = "golang-jwt+keyfunc"    // a hand-wired forward-auth handler
	ServerPolicy       = "jwksverify-policy"     // the real binary, token cache on, routes and a scopes+claims policy
	ServerGoGC100      = "jwksverify-gogc100"    // the real binary, token cache on, GOGC=100 in its environment: Go's collector defaults, no GC headroom
	ServerRevocation   = "jwksverify-revocation" // the real binary, token cache on, revocation: {store: memory} with Report.RevocationEntries entries for the issuer, none naming the load's tokens
	ServerGRPCFloor    = "grpc-floor"            // grpc.NewServer with a Check that answers OK (gRPC runs only)
	ServerFloorNoStore = "floor-no-store"        // the floor's handler also setting the header forward-auth must send, Cache-Control: no-store (targeted runs only: -only names it)
)

// Token modes of [Run.Tokens].
const (
	TokensRepeated = "repeated" // one token, sent on every request
	TokensPool     = "pool"     // a pool of distinct tokens, cycled
)

// Report is one run of bench/http.sh.
type Report struct {
	// Date is when the run started (RFC 3339, UTC).
	Date string `json:"date"`
	// Commit is the git commit of the tree that was built (with "-dirty" when modified).
	Commit string `json:"commit"`
	// Go, CPU and NProc describe the machine.
	Go    string `json:"go"`
	CPU   string `json:"cpu"`
	NProc int    `json:"nproc"`
	// LoadAvg is /proc/loadavg at the start, to judge how busy the machine was.
	LoadAvg string `json:"loadavg"`
	// ServerCPUs and ClientCPUs are the taskset CPU lists of servers and wrk.
	ServerCPUs string `json:"server_cpus"`
	ClientCPUs string `json:"client_cpus"`
	// Duration, Connections and Threads are wrk's -d, -c and -t.
	Duration string `json:"duration"`
	// Rounds is how many times each configuration ran, alternately with the
	// others; each [Run] is their [Median].
	Rounds      int `json:"rounds,omitempty"`
	Connections int `json:"connections"`
	Threads     int `json:"threads"`
	// PoolSize is the number of distinct tokens of the pool runs.
	PoolSize int `json:"pool_size"`
	// RevocationEntries is the number of revocation entries in the
	// state_dir of the jwksverify-revocation server (sub, jti and sid
	// entries of the benchmark's issuer, none naming a token sent).
	RevocationEntries int `json:"revocation_entries,omitempty"`
	// Runs are the load runs, in the order they ran.
	Runs []Run `json:"runs"`
	// Memory is the memory of the serving process with a full token cache.
	Memory *Memory `json:"memory,omitempty"`
	// GRPC are the ext_authz Check runs (Non2xx counts answers other than
	// OK, SocketErrors failed calls), in the order they ran.
	GRPC []Run `json:"grpc_runs,omitempty"`
}

// Run is one wrk run against one server.
type Run struct {
	Alg    string `json:"alg"`
	Tokens string `json:"tokens"`
	Server string `json:"server"`
	// RPS is wrk's Requests/sec.
	RPS float64 `json:"rps"`
	// P50Ms, P90Ms and P99Ms are wrk's latency percentiles, in milliseconds.
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	// Requests is the number of completed requests.
	Requests int64 `json:"requests"`
	// Non2xx counts answers other than 2xx/3xx (wrk's "Non-2xx or 3xx responses").
	Non2xx int64 `json:"non_2xx"`
	// SocketErrors counts wrk's connect, read, write and timeout errors.
	SocketErrors int64 `json:"socket_errors"`
	// Rounds is how many wrk runs [Median] combined into this one (0 or 1:
	// a single run), and RPSMin and RPSMax the range of their req/s.
	Rounds int     `json:"rounds,omitempty"`
	RPSMin float64 `json:"rps_min,omitempty"`
	RPSMax float64 `json:"rps_max,omitempty"`
	// RoundRPS is each round's req/s, in the order the rounds ran: round i
	// of every server of a configuration ran in the same turn ([PairedRatio]).
	RoundRPS []float64 `json:"round_rps,omitempty"`
	// CPUMicrosPerReq is the server's CPU time (user and system, every
	// thread) during the run over the requests it answered; for a median,
	// the rounds' median, and RoundCPU each round's ([PairedCPURatio]).
	CPUMicrosPerReq float64   `json:"cpu_us_per_req,omitempty"`
	RoundCPU        []float64 `json:"round_cpu_us_per_req,omitempty"`
}

// Median combines rounds of the same configuration (alg, tokens, server),
// run alternately with the other servers: req/s and each latency percentile
// are the medians of the rounds (the upper median for an even count),
// Requests, Non2xx and SocketErrors the sums, and RPSMin/RPSMax the range.
// A single busy moment on a shared machine then moves one round, not the
// result. It panics when rounds is empty.
func Median(rounds []Run) Run {
	med := func(get func(Run) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	out := rounds[0]
	out.RPS = med(func(r Run) float64 { return r.RPS })
	out.P50Ms = med(func(r Run) float64 { return r.P50Ms })
	out.P90Ms = med(func(r Run) float64 { return r.P90Ms })
	out.P99Ms = med(func(r Run) float64 { return r.P99Ms })
	out.CPUMicrosPerReq = med(func(r Run) float64 { return r.CPUMicrosPerReq })
	out.Requests, out.Non2xx, out.SocketErrors = 0, 0, 0
	out.RPSMin, out.RPSMax = rounds[0].RPS, rounds[0].RPS
	out.RoundRPS, out.RoundCPU = nil, nil
	for _, r := range rounds {
		out.RoundRPS = append(out.RoundRPS, r.RPS)
		out.RoundCPU = append(out.RoundCPU, r.CPUMicrosPerReq)
		out.Requests += r.Requests
		out.Non2xx += r.Non2xx
		out.SocketErrors += r.SocketErrors
		out.RPSMin = min(out.RPSMin, r.RPS)
		out.RPSMax = max(out.RPSMax, r.RPS)
	}
	out.Rounds = len(rounds)
	return out
}

// PairedRatio is a's req/s over b's: the median of the rounds' ratios when
// both ran the same rounds (round i of each in the same turn, so that a
// drift of the shared machine between turns cancels), else the ratio of
// their medians. paired says which.
func PairedRatio(a, b *Run) (ratio float64, paired bool) {
	return pairedRatio(a.RoundRPS, b.RoundRPS, a.RPS, b.RPS)
}

// PairedCPURatio is a's requests per server CPU-second over b's: b's CPU
// time per request over a's, paired as [PairedRatio] pairs req/s. Unlike
// req/s it does not count the time the server's core was taken from it (a
// shared VM's steal, another process). 0 when either was not measured.
func PairedCPURatio(a, b *Run) (ratio float64, paired bool) {
	if a.CPUMicrosPerReq == 0 || b.CPUMicrosPerReq == 0 {
		return 0, false
	}
	return pairedRatio(b.RoundCPU, a.RoundCPU, b.CPUMicrosPerReq, a.CPUMicrosPerReq)
}

func pairedRatio(a, b []float64, medA, medB float64) (float64, bool) {
	if len(a) > 0 && len(a) == len(b) {
		v := make([]float64, 0, len(a))
		for i := range a {
			if b[i] > 0 {
				v = append(v, a[i]/b[i])
			}
		}
		if len(v) == len(a) {
			slices.Sort(v)
			return v[len(v)/2], true // as Median takes it
		}
	}
	if medB == 0 {
		return 0, false
	}
	return medA / medB, false
}

// Memory is the resident memory of the real binary serving Issuers issuers
// before and after Entries distinct tokens were verified through /v1/authz
// with token_cache.max_entries set to Entries.
type Memory struct {
	Issuers    int `json:"issuers"`
	Entries    int `json:"entries"`
	TokenBytes int `json:"token_bytes"`
	// MaxBytes is the configured token_cache.max_bytes (room for every entry).
	MaxBytes int64 `json:"max_bytes"`
	// Accepted counts the tokens the server accepted (200).
	Accepted int `json:"accepted"`
	// RSSStartKB is VmRSS after start-up; RSSFullKB after the fill.
	RSSStartKB int64 `json:"rss_start_kb"`
	RSSFullKB  int64 `json:"rss_full_kb"`
	// CacheEntries and CacheBytes are the cache's own counters after the
	// fill, from /metrics (0 when the server does not export them).
	CacheEntries int64 `json:"cache_entries"`
	CacheBytes   int64 `json:"cache_bytes"`
}

// Read loads a report from path.
func Read(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("httpres: %s: %w", path, err)
	}
	return &r, nil
}

// Write stores r at path, indented.
func (r *Report) Write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Find returns the HTTP run for alg, tokens and server, or nil.
func (r *Report) Find(alg, tokens, server string) *Run { return find(r.Runs, alg, tokens, server) }

// FindGRPC returns the gRPC run for alg, tokens and server, or nil.
func (r *Report) FindGRPC(alg, tokens, server string) *Run {
	return find(r.GRPC, alg, tokens, server)
}

func find(runs []Run, alg, tokens, server string) *Run {
	for i := range runs {
		x := &runs[i]
		if x.Alg == alg && x.Tokens == tokens && x.Server == server {
			return x
		}
	}
	return nil
}
