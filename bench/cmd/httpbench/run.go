package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jwksverify/jwksverify/bench/internal/fixture"
	"github.com/jwksverify/jwksverify/bench/internal/httpres"
	"github.com/jwksverify/jwksverify/revoke"
)

// runOpts are the flags of the run subcommand.
type runOpts struct {
	bin, out, workDir       string
	algs                    []string
	pool                    int
	duration                string
	rounds                  int
	conns, threads          int
	serverCPUs, clientCPUs  string
	memIssuers, memEntries  int
	skipLoad, skipMemory    bool
	skipGRPC                bool
	only                    map[string]bool // server names to run; nil: all
	revocations             int
	commit, cpuModel, goVer string
}

// runAll is the run subcommand: it measures what its flags ask for and
// writes the results file, keeping from the previous one what this run
// skips.
func runAll(args []string) error {
	o, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if o.workDir == "" {
		d, err := os.MkdirTemp("", "httpbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.workDir = d
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	rep := newReport(o)
	if err := measure(ctx, o, self, rep); err != nil {
		return err
	}
	printRatios(os.Stderr, rep)
	return rep.Write(o.out)
}

// printRatios writes the paired req/s ratios of rep's runs ([httpres.PairedRatio]):
// each HTTP run of the binary with revocations or a policy over the plain
// binary's, the plain binary's over the absolute floor's, and each gRPC
// run over the bare gRPC server's; the ones whose runs are both there.
// A targeted run (-only) reads its answer here.
func printRatios(w io.Writer, rep *httpres.Report) {
	line := func(label string, a, b *httpres.Run) {
		if a == nil || b == nil || b.RPS == 0 {
			return
		}
		r, _ := httpres.PairedRatio(a, b)
		fmt.Fprintf(w, "ratio  %-6s %-8s %-48s %6.3f  (%.0f / %.0f req/s, %d rounds)\n", a.Alg, a.Tokens, label, r, a.RPS, b.RPS, a.Rounds)
	}
	for _, r := range rep.Runs {
		switch r.Server {
		case httpres.ServerRevocation, httpres.ServerPolicy:
			line("http "+r.Server+" ÷ "+httpres.ServerJwksverify, &r, rep.Find(r.Alg, r.Tokens, httpres.ServerJwksverify))
		case httpres.ServerJwksverify, httpres.ServerFloorNoStore:
			line("http "+r.Server+" ÷ "+httpres.ServerFloor, &r, rep.Find(r.Alg, r.Tokens, httpres.ServerFloor))
		}
	}
	for _, r := range rep.GRPC {
		if r.Server != httpres.ServerGRPCFloor {
			line("grpc "+r.Server+" ÷ "+httpres.ServerGRPCFloor, &r, rep.FindGRPC(r.Alg, r.Tokens, httpres.ServerGRPCFloor))
		}
	}
}

// parseRunFlags reads the flags of the run subcommand.
func parseRunFlags(args []string) (runOpts, error) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var o runOpts
	var algs string
	fs.StringVar(&o.bin, "bin", "./jwksverify", "the jwksverify binary to load")
	fs.StringVar(&o.out, "out", "http-latest.json", "results file to write")
	fs.StringVar(&o.workDir, "dir", "", "work directory for configs, tokens, scripts and logs (default: a new temp dir)")
	fs.StringVar(&algs, "algs", "RS256,ES256,HS256", "algorithms, comma-separated")
	fs.IntVar(&o.pool, "pool", 10000, "distinct tokens in the pool runs")
	fs.StringVar(&o.duration, "d", "6s", "wrk -d of each run")
	fs.IntVar(&o.rounds, "rounds", 3, "runs of each configuration, taken in turns; the report keeps their median")
	fs.IntVar(&o.conns, "c", 32, "wrk -c")
	fs.IntVar(&o.threads, "t", 1, "wrk -t")
	fs.StringVar(&o.serverCPUs, "server-cpus", "0", "taskset CPU list of the servers")
	fs.StringVar(&o.clientCPUs, "client-cpus", "1", "taskset CPU list of wrk")
	fs.IntVar(&o.memIssuers, "mem-issuers", 10, "issuers of the memory run")
	fs.IntVar(&o.memEntries, "mem-entries", 100000, "token cache entries of the memory run (distinct tokens sent)")
	fs.BoolVar(&o.skipLoad, "skip-load", false, "skip the wrk runs")
	fs.BoolVar(&o.skipMemory, "skip-memory", false, "skip the memory run")
	fs.BoolVar(&o.skipGRPC, "skip-grpc", false, "skip the gRPC Check runs")
	var only string
	fs.StringVar(&only, "only", "", "server names to run, comma-separated, over HTTP and gRPC (default: all): "+strings.Join(knownServers(), ", "))
	fs.IntVar(&o.revocations, "revocations", 100000, "revocation entries in the state_dir of the "+httpres.ServerRevocation+" server")
	fs.StringVar(&o.commit, "commit", "", "git commit to record")
	fs.StringVar(&o.cpuModel, "cpu", "", "CPU model to record")
	fs.StringVar(&o.goVer, "go", runtime.Version(), "Go version to record")
	_ = fs.Parse(args)
	o.algs = strings.Split(algs, ",")
	if _, err := time.ParseDuration(o.duration); err != nil {
		return o, fmt.Errorf("-d: %w", err)
	}
	if o.rounds < 1 {
		return o, fmt.Errorf("-rounds: %d, want at least 1", o.rounds)
	}
	if o.revocations < 10 {
		return o, fmt.Errorf("-revocations: %d, want at least 10", o.revocations)
	}
	if only != "" {
		o.only = map[string]bool{}
		for _, name := range strings.Split(only, ",") {
			name = strings.TrimSpace(name)
			if !slices.Contains(knownServers(), name) {
				return o, fmt.Errorf("-only: unknown server %q (known: %s)", name, strings.Join(knownServers(), ", "))
			}
			o.only[name] = true
		}
	}
	return o, nil
}

// httpServers are the servers of the HTTP runs, in the order of each turn.
// The floor, the binary, the binary with a policy and with revocations run
// back to back in every round: their ratios are targets, and the shared
// machine drifts within a minute.
var httpServers = []string{httpres.ServerFloor, httpres.ServerFloorNoStore, httpres.ServerJwksverify, httpres.ServerRevocation, httpres.ServerPolicy, httpres.ServerGoGC100, httpres.ServerBare, httpres.ServerNoCache, httpres.ServerBaseline}

// grpcServers are the servers of the gRPC Check runs.
var grpcServers = []string{httpres.ServerGRPCFloor, httpres.ServerJwksverify, httpres.ServerNoCache}

// knownServers are the names -only accepts.
func knownServers() []string {
	out := slices.Clone(httpServers)
	for _, s := range grpcServers {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// optIn are the servers that run only when -only names them: measurements
// that explain a ratio, not targets.
var optIn = []string{httpres.ServerFloorNoStore}

// selected returns the servers of all that -only keeps: without -only,
// every one but the opt-in ones.
func (o runOpts) selected(all []string) []string {
	var out []string
	for _, s := range all {
		if (o.only == nil && !slices.Contains(optIn, s)) || o.only[s] {
			out = append(out, s)
		}
	}
	return out
}

// newReport is the report of a run with o, before any measurement: the
// machine and the settings, and from the previous results file what o
// skips.
func newReport(o runOpts) *httpres.Report {
	load, _ := os.ReadFile("/proc/loadavg")
	rep := &httpres.Report{
		Date:        time.Now().UTC().Format(time.RFC3339),
		Commit:      o.commit,
		Go:          o.goVer,
		CPU:         o.cpuModel,
		NProc:       runtime.NumCPU(),
		LoadAvg:     strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "),
		ServerCPUs:  o.serverCPUs,
		ClientCPUs:  o.clientCPUs,
		Duration:    o.duration,
		Rounds:      o.rounds,
		Connections: o.conns,
		Threads:     o.threads,
		PoolSize:    o.pool,
	}
	if !o.skipLoad && slices.Contains(o.selected(httpServers), httpres.ServerRevocation) {
		rep.RevocationEntries = o.revocations
	}
	if prev, err := httpres.Read(o.out); err == nil {
		// Keep what this invocation does not measure.
		if o.skipLoad {
			rep.Runs = prev.Runs
		}
		if o.skipMemory {
			rep.Memory = prev.Memory
		}
		if o.skipGRPC {
			rep.GRPC = prev.GRPC
		}
		if o.skipLoad {
			rep.RevocationEntries = prev.RevocationEntries
		}
	}
	return rep
}

// measure runs the HTTP, gRPC and memory measurements o asks for with the
// binary self and adds them to rep.
func measure(ctx context.Context, o runOpts, self string, rep *httpres.Report) error {
	// Each algorithm's files (tokens, pool, configs) are made once, for its
	// HTTP and its gRPC runs.
	load := !o.skipLoad && len(o.selected(httpServers)) > 0
	grpcLoad := !o.skipGRPC && len(o.selected(grpcServers)) > 0
	for _, alg := range o.algs {
		if !load && !grpcLoad {
			break
		}
		f, err := prepare(o, alg)
		if err != nil {
			return fmt.Errorf("%s: %w", alg, err)
		}
		if load {
			runs, err := loadRuns(ctx, o, self, f)
			if err != nil {
				return fmt.Errorf("%s: %w", alg, err)
			}
			rep.Runs = append(rep.Runs, runs...)
		}
		if grpcLoad {
			runs, err := grpcRuns(ctx, o, self, f)
			if err != nil {
				return fmt.Errorf("%s: %w", alg, err)
			}
			rep.GRPC = append(rep.GRPC, runs...)
		}
	}
	if !o.skipMemory {
		m, err := memoryRun(ctx, o)
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		rep.Memory = m
	}
	return nil
}

// algFiles are the files of one algorithm's runs.
type algFiles struct {
	c                           fixture.Case
	jwks, secret                string
	token, pool                 string // token files
	repeatedLua, poolLua        string
	cachedConfig, nocacheConfig string
	policyConfig                string
	revocationConfig            string // "" when the run has no revocation server
	valid, tampered             string
	revoked                     string // a valid token whose jti is revoked
}

func prepare(o runOpts, alg string) (*algFiles, error) {
	c, err := fixture.CaseByName(alg)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.workDir, c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f := &algFiles{c: c}
	path := func(name string) string { return filepath.Join(dir, name) }
	write := func(name string, data []byte) (string, error) {
		p := path(name)
		return p, os.WriteFile(p, data, 0o600)
	}
	if f.jwks, err = write("jwks.json", fixture.JWKS(c, fixture.Decoys())); err != nil {
		return nil, err
	}
	keySource := fmt.Sprintf("    jwks_file: %s\n", f.jwks)
	if c.Symmetric() {
		if f.secret, err = write("secret", fixture.Secret()); err != nil {
			return nil, err
		}
		keySource = fmt.Sprintf("    secret_file: %s\n    secret_kid: %s\n", f.secret, c.Kid)
	}
	now := time.Now()
	f.valid = fixture.Mint(c, fixture.Claims(now, fixture.Issuer, 0))
	f.tampered = tamper(f.valid)
	if f.token, err = write("token", []byte(f.valid+"\n")); err != nil {
		return nil, err
	}
	var pool strings.Builder
	for i := range o.pool {
		pool.WriteString(fixture.Mint(c, fixture.Claims(now, fixture.Issuer, i+1)))
		pool.WriteByte('\n')
	}
	if f.pool, err = write("pool", []byte(pool.String())); err != nil {
		return nil, err
	}
	if f.repeatedLua, err = write("repeated.lua", []byte(fmt.Sprintf(repeatedLua, f.token))); err != nil {
		return nil, err
	}
	if f.poolLua, err = write("pool.lua", []byte(fmt.Sprintf(poolLua, f.pool))); err != nil {
		return nil, err
	}
	cfg := func(cache int) string {
		return fmt.Sprintf("listen: LISTEN\ngrpc_listen: GRPC\ntoken_cache: {max_entries: %d}\nissuers:\n  - issuer: %s\n%s    audiences: [%s]\n    algorithms: [%s]\n",
			cache, fixture.Issuer, keySource, fixture.Audience, c.Alg)
	}
	if f.cachedConfig, err = write("cached.yaml", []byte(cfg(100000))); err != nil {
		return nil, err
	}
	if f.nocacheConfig, err = write("nocache.yaml", []byte(cfg(0))); err != nil {
		return nil, err
	}
	if f.policyConfig, err = write("policy.yaml", []byte(cfg(100000)+policyYAML)); err != nil {
		return nil, err
	}
	if !o.skipLoad && slices.Contains(o.selected(httpServers), httpres.ServerRevocation) {
		state := path("revocation-state")
		if err := revoke.WriteMemoryLog(state, revocations(o.revocations), now, 24*time.Hour); err != nil {
			return nil, err
		}
		if f.revocationConfig, err = write("revocation.yaml", []byte(cfg(100000)+fmt.Sprintf("state_dir: %s\nrevocation: {store: memory}\n", state))); err != nil {
			return nil, err
		}
		claims := fixture.Claims(now, fixture.Issuer, 0)
		claims["jti"] = revokedJTI(0)
		f.revoked = fixture.Mint(c, claims)
	}
	return f, nil
}

// revocations are n entries of the benchmark's issuer, as an IdP's logouts
// and an operator's switches leave them: 10 sid entries (fewer below 30),
// 40 % jti entries and the rest sub entries, none naming the subject or a jti of the tokens
// the load sends (the answer stays 200: the run measures the lookup, not a
// refusal).
func revocations(n int) []revoke.Entry {
	es := make([]revoke.Entry, 0, n)
	sids := min(10, n/3)
	jtis := n * 2 / 5
	for i := range sids {
		es = append(es, revoke.Entry{Issuer: fixture.Issuer, Kind: revoke.KindSID, Value: fmt.Sprintf("revoked-session-%02d", i), Source: revoke.SourceBackchannelLogout})
	}
	for i := range jtis {
		es = append(es, revoke.Entry{Issuer: fixture.Issuer, Kind: revoke.KindJTI, Value: revokedJTI(i), Source: revoke.SourceSSFPush})
	}
	for i := range n - sids - jtis {
		es = append(es, revoke.Entry{Issuer: fixture.Issuer, Kind: revoke.KindSub, Value: fmt.Sprintf("revoked-user-%07d", i), Source: revoke.SourceAdmin})
	}
	return es
}

// revokedJTI is the jti of the i-th jti entry of [revocations].
func revokedJTI(i int) string { return fmt.Sprintf("revoked-token-%07d", i) }

// tamper changes one character in the middle of token's signature.
func tamper(token string) string {
	b := []byte(token)
	i := strings.LastIndexByte(token, '.') + 10
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// policyYAML is the policy configuration of the jwksverify-policy server:
// the routes of docs/POLICIES.md, read from nginx's headers. The load's
// GET /orders/1 takes the orders-read route (scopes any of two, one claim
// matcher); other paths fall to admin, which the fixture's tokens do not
// satisfy (the sanity check proves the policy runs).
const policyYAML = `forward_auth: {proxy: nginx}
policies:
  - name: orders-read
    scopes: {any: [orders:read, orders:write]}
    claims: [{claim: azp, any_of: [orders-web, orders-cli]}]
  - {name: orders-write, scopes: {all: [orders:write]}}
  - {name: admin, scopes: {all: [admin]}}
routes:
  - {methods: [POST, PUT, PATCH, DELETE], path: /orders/**, policy: orders-write}
  - {path: /orders/**, policy: orders-read}
default_policy: admin
`

// originalRequest is the original request every load run sends, as nginx
// sets it on its auth subrequest (docs/POLICIES.md). Every server gets the
// same headers; only jwksverify-policy reads them.
var originalRequest = [][2]string{
	{"X-Original-Method", "GET"},
	{"X-Original-URI", "/orders/1"},
	{"X-Original-Host", "shop.example.com"},
}

// The wrk scripts. The token files are read once per wrk thread.
const repeatedLua = `local f = assert(io.open(%q))
local token = f:read("*l")
f:close()
wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. token
wrk.headers["X-Original-Method"] = "GET"
wrk.headers["X-Original-URI"] = "/orders/1"
wrk.headers["X-Original-Host"] = "shop.example.com"
`

const poolLua = `local tokens = {}
for line in io.lines(%q) do
  if #line > 0 then tokens[#tokens + 1] = "Bearer " .. line end
end
local i = 0
request = function()
  i = i %% #tokens + 1
  return wrk.format("GET", "/v1/authz", { ["Authorization"] = tokens[i],
    ["X-Original-Method"] = "GET", ["X-Original-URI"] = "/orders/1", ["X-Original-Host"] = "shop.example.com" })
end
`

func loadRuns(ctx context.Context, o runOpts, self string, f *algFiles) ([]httpres.Run, error) {
	return inTurns(ctx, o, f.c.Alg, "", o.selected(httpServers), func(tokens, server string) (*httpres.Run, error) {
		return oneRun(ctx, o, self, f, tokens, server)
	})
}

// inTurns runs each server with the repeated token and with the pool,
// o.rounds times: the servers take turns, round after round, so that a busy
// moment of the shared machine lands on one round of each, not on one
// server. It returns each configuration's [httpres.Median], labelling the
// progress lines with alg and kind ("" for HTTP).
func inTurns(ctx context.Context, o runOpts, alg, kind string, servers []string, run func(tokens, server string) (*httpres.Run, error)) ([]httpres.Run, error) {
	var out []httpres.Run
	for _, tokens := range []string{httpres.TokensRepeated, httpres.TokensPool} {
		rounds := make(map[string][]httpres.Run, len(servers))
		for round := 1; round <= o.rounds; round++ {
			for _, server := range servers {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				r, err := run(tokens, server)
				if err != nil {
					return nil, fmt.Errorf("%s%s %s: %w", kind, tokens, server, err)
				}
				fmt.Fprintf(os.Stderr, "%-6s %-8s %s%-22s round %d  %9.0f req/s  p50 %.2f ms  p99 %.2f ms  non-2xx %d  errors %d\n",
					alg, tokens, kind, server, round, r.RPS, r.P50Ms, r.P99Ms, r.Non2xx, r.SocketErrors)
				rounds[server] = append(rounds[server], *r)
			}
		}
		for _, server := range servers {
			m := httpres.Median(rounds[server])
			fmt.Fprintf(os.Stderr, "%-6s %-8s %s%-22s median   %9.0f req/s  p50 %.2f ms  p99 %.2f ms  (%.0f–%.0f req/s)\n",
				alg, tokens, kind, server, m.RPS, m.P50Ms, m.P99Ms, m.RPSMin, m.RPSMax)
			out = append(out, m)
		}
	}
	return out, nil
}

func oneRun(ctx context.Context, o runOpts, self string, f *algFiles, tokens, server string) (*httpres.Run, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var args []string
	var ready string
	switch server {
	case httpres.ServerFloor:
		args, ready = []string{self, "serve-floor", "-listen", addr}, "/healthz"
	case httpres.ServerFloorNoStore:
		args, ready = []string{self, "serve-floor", "-listen", addr, "-no-store"}, "/healthz"
	case httpres.ServerBare:
		args, ready = []string{self, "serve-bare", "-listen", addr}, "/healthz"
	case httpres.ServerBaseline:
		args, ready = []string{self, "serve-keyfunc", "-listen", addr, "-jwks", f.jwks, "-issuer", fixture.Issuer, "-alg", f.c.Alg}, "/healthz"
	case httpres.ServerJwksverify, httpres.ServerGoGC100, httpres.ServerNoCache, httpres.ServerPolicy, httpres.ServerRevocation:
		cfg := f.cachedConfig
		switch server {
		case httpres.ServerNoCache:
			cfg = f.nocacheConfig
		case httpres.ServerPolicy:
			cfg = f.policyConfig
		case httpres.ServerRevocation:
			cfg = f.revocationConfig
		}
		p, err := withListen(cfg, addr, "")
		if err != nil {
			return nil, err
		}
		args, ready = []string{o.bin, "serve", "--config", p}, "/readyz"
		if server == httpres.ServerGoGC100 {
			args = append([]string{"env", "GOGC=100"}, args...)
		}
	}
	logPath := filepath.Join(o.workDir, f.c.Name, fmt.Sprintf("%s-%s.log", server, tokens))
	p, err := startServer(ctx, o.serverCPUs, logPath, args)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	base := "http://" + addr
	if err := waitReady(ctx, base+ready); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	if err := sanity(base, f, server != httpres.ServerBare && server != httpres.ServerFloor && server != httpres.ServerFloorNoStore, server == httpres.ServerPolicy, server == httpres.ServerRevocation); err != nil {
		return nil, err
	}
	script := f.repeatedLua
	if tokens == httpres.TokensPool {
		script = f.poolLua
	}
	cpu0, err := p.cpuTime()
	if err != nil {
		return nil, err
	}
	r, err := wrk(ctx, o, script, base+"/v1/authz")
	if err != nil {
		return nil, err
	}
	cpu1, err := p.cpuTime()
	if err != nil {
		return nil, fmt.Errorf("server died during the run: %w (log: %s)", err, logPath)
	}
	if err := p.alive(); err != nil {
		return nil, fmt.Errorf("server died during the run: %w (log: %s)", err, logPath)
	}
	if r.Requests > 0 {
		r.CPUMicrosPerReq = float64((cpu1 - cpu0).Microseconds()) / float64(r.Requests)
	}
	r.Alg, r.Tokens, r.Server = f.c.Alg, tokens, server
	return r, nil
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ: 100 on
// every Linux architecture Go runs on).
const clockTicks = 100

// cpuTime is the CPU time the server has used so far, all its threads, user
// and system (/proc/PID/stat utime + stime).
func (p *proc) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields counted from 3 start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", p.cmd.Process.Pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", p.cmd.Process.Pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// withListen writes a copy of the config at path with the listen address
// set, and the gRPC one (empty: gRPC off).
func withListen(path, addr, grpcAddr string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	p := strings.TrimSuffix(path, ".yaml") + "-" + strings.ReplaceAll(addr, ":", "_") + ".yaml"
	cfg := strings.Replace(string(b), "LISTEN", addr, 1)
	cfg = strings.Replace(cfg, "GRPC", `"`+grpcAddr+`"`, 1)
	return p, os.WriteFile(p, []byte(cfg), 0o600)
}

// sanity checks that the server accepts the valid token and, when it
// verifies, rejects a tampered one, and when it has policies, refuses the
// valid token on a path whose policy it does not satisfy, and when it has
// revocations, refuses a token whose jti is revoked: a load run of a
// failing path measures nothing, and a policy or revocation run that never
// runs its stage measures the wrong thing.
func sanity(base string, f *algFiles, verifies, policies, revocations bool) error {
	check := func(token string, want int, uri ...string) error {
		req, err := http.NewRequest(http.MethodGet, base+"/v1/authz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		for _, h := range originalRequest {
			req.Header.Set(h[0], h[1])
		}
		if len(uri) > 0 {
			req.Header.Set("X-Original-URI", uri[0])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("sanity check: GET /v1/authz = %d, want %d", resp.StatusCode, want)
		}
		return nil
	}
	if err := check(f.valid, http.StatusOK); err != nil {
		return err
	}
	if verifies {
		if err := check(f.tampered, http.StatusUnauthorized); err != nil {
			return err
		}
	}
	if policies {
		if err := check(f.valid, http.StatusForbidden, "/admin"); err != nil {
			return err
		}
	}
	if revocations {
		return check(f.revoked, http.StatusUnauthorized)
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// proc is a server process started by this program.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  *os.File
}

// startServer starts args pinned to cpus with taskset (which execs, so the
// process id is the server's), its output to logPath.
func startServer(ctx context.Context, cpus, logPath string, args []string) (*proc, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", cpus}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: log}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// alive reports an error if the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.done:
		if p.err == nil {
			return errors.New("exited")
		}
		return p.err
	default:
		return nil
	}
}

// stop ends the process: SIGTERM, then SIGKILL after 5s. It waits for it.
func (p *proc) stop() {
	defer p.log.Close()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitReady polls url until it answers 200, for at most 15 seconds.
func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 15s (last error: %v)", url, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wrk runs wrk pinned to the client CPUs and parses its report.
func wrk(ctx context.Context, o runOpts, script, url string) (*httpres.Run, error) {
	d, _ := time.ParseDuration(o.duration)
	ctx, cancel := context.WithTimeout(ctx, d+60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "taskset", "-c", o.clientCPUs, "wrk",
		"-t"+strconv.Itoa(o.threads), "-c"+strconv.Itoa(o.conns), "-d"+o.duration, "--latency", "-s", script, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("wrk: %w: %s", err, out)
	}
	return parseWrk(string(out))
}

var (
	wrkRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in`)
	wrkNon2xx   = regexp.MustCompile(`(?m)Non-2xx or 3xx responses:\s+(\d+)`)
	wrkSocket   = regexp.MustCompile(`(?m)Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkPct      = regexp.MustCompile(`(?m)^\s+(50|90|99)%\s+([0-9.]+)(us|ms|s|m)\s*$`)
)

// parseWrk reads wrk's text report (with --latency).
func parseWrk(out string) (*httpres.Run, error) {
	var r httpres.Run
	m := wrkRPS.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("wrk: no Requests/sec in %q", out)
	}
	r.RPS, _ = strconv.ParseFloat(m[1], 64)
	if m := wrkRequests.FindStringSubmatch(out); m != nil {
		r.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		r.Non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := wrkSocket.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			r.SocketErrors += n
		}
	}
	scale := map[string]float64{"us": 0.001, "ms": 1, "s": 1000, "m": 60000}
	for _, m := range wrkPct.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		v *= scale[m[3]]
		switch m[1] {
		case "50":
			r.P50Ms = v
		case "90":
			r.P90Ms = v
		case "99":
			r.P99Ms = v
		}
	}
	if r.P99Ms == 0 {
		return nil, fmt.Errorf("wrk: no latency distribution in %q", out)
	}
	return &r, nil
}

// memoryRun starts the binary with o.memIssuers ES256 issuers and a token
// cache of o.memEntries entries (with bytes enough to hold them all), sends
// that many distinct tokens through /v1/authz, and reads VmRSS before and
// after.
func memoryRun(ctx context.Context, o runOpts) (*httpres.Memory, error) {
	c, err := fixture.CaseByName("ES256")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.workDir, "memory")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, fixture.JWKS(c, fixture.Decoys()), 0o600); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// Bytes enough for every entry: the run measures a full cache.
	maxBytes := int64(o.memEntries) * 4096
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "listen: %s\ntoken_cache: {max_entries: %d, max_bytes: %d}\nissuers:\n", addr, o.memEntries, maxBytes)
	issuers := make([]string, o.memIssuers)
	for i := range issuers {
		issuers[i] = fmt.Sprintf("https://idp-%03d.example.com/", i)
		fmt.Fprintf(&cfg, "  - issuer: %s\n    jwks_file: %s\n    audiences: [%s]\n    algorithms: [ES256]\n", issuers[i], jwks, fixture.Audience)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "memory: minting %d ES256 tokens for %d issuers\n", o.memEntries, o.memIssuers)
	now := time.Now()
	tokens := make([]string, o.memEntries)
	for i := range tokens {
		tokens[i] = fixture.Mint(c, fixture.Claims(now, issuers[i%len(issuers)], i))
	}
	logPath := filepath.Join(dir, "server.log")
	p, err := startServer(ctx, o.serverCPUs, logPath, []string{o.bin, "serve", "--config", cfgPath})
	if err != nil {
		return nil, err
	}
	defer p.stop()
	base := "http://" + addr
	if err := waitReady(ctx, base+"/readyz"); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	m := &httpres.Memory{Issuers: o.memIssuers, Entries: o.memEntries, TokenBytes: len(tokens[0]), MaxBytes: maxBytes}
	if m.RSSStartKB, err = rssKB(p.cmd.Process.Pid); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "memory: sending %d tokens\n", len(tokens))
	var accepted atomic.Int64
	var next atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(tokens)) || ctx.Err() != nil {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/authz", nil)
				req.Header.Set("Authorization", "Bearer "+tokens[i])
				resp, err := client.Do(req)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					accepted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return nil, err
	}
	m.Accepted = int(accepted.Load())
	m.CacheEntries, m.CacheBytes = cacheMetrics(base + "/metrics")
	if m.RSSFullKB, err = rssKB(p.cmd.Process.Pid); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "memory: RSS %d kB at start, %d kB full; %d accepted; cache %d entries\n", m.RSSStartKB, m.RSSFullKB, m.Accepted, m.CacheEntries)
	return m, nil
}

// rssKB reads VmRSS of pid from /proc.
func rssKB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS")
}

// cacheMetrics reads the token cache's entries and bytes gauges from a
// Prometheus text endpoint; zeros when absent.
func cacheMetrics(url string) (entries, bytes int64) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(name, "token_cache_entries"):
			entries = int64(v)
		case strings.HasSuffix(name, "token_cache_bytes"):
			bytes = int64(v)
		}
	}
	return entries, bytes
}
