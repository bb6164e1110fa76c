package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jwksverify/jwksverify/bench/internal/httpres"
)

// The gRPC side of the run: Envoy's ext_authz Check, the path a service
// mesh calls, against a bare gRPC server that answers OK to every Check (the
// floor of any ext_authz server in Go on one core).

// floorAuthz answers OK to every Check without looking at it.
type floorAuthz struct {
	authv3.UnimplementedAuthorizationServer
}

var okResponse = &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.OK)}}

// Check implements authv3.AuthorizationServer.
func (floorAuthz) Check(context.Context, *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	return okResponse, nil
}

// serveGRPCFloor is the gRPC floor: grpc.NewServer with defaults and a
// Check that answers OK, nothing else.
func serveGRPCFloor(args []string) error {
	fs := flag.NewFlagSet("serve-grpc-floor", flag.ExitOnError)
	addr := fs.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	_ = fs.Parse(args)
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	authv3.RegisterAuthorizationServer(s, floorAuthz{})
	return s.Serve(l)
}

// checkRequest is the CheckRequest Envoy sends for GET /orders/1 with token.
func checkRequest(token string) *authv3.CheckRequest {
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
		Http: &authv3.AttributeContext_HttpRequest{
			Method: "GET", Scheme: "http", Host: "shop.example.com", Path: "/orders/1",
			Headers: map[string]string{
				":authority": "shop.example.com", ":method": "GET", ":path": "/orders/1", ":scheme": "http",
				"authorization": "Bearer " + token,
			},
		},
	}}}
}

// grpcLoad is the load client: c closed-loop callers over conns
// connections (HTTP/2 multiplexes the callers, as Envoy's workers do) for
// d, cycling through the tokens of a file. It prints one [httpres.Run] as
// JSON: req/s, latency percentiles, Non2xx = answers other than OK,
// SocketErrors = failed calls.
func grpcLoad(args []string) error {
	fs := flag.NewFlagSet("grpc-load", flag.ExitOnError)
	addr := fs.String("addr", "", "server address")
	d := fs.Duration("d", 6*time.Second, "duration")
	c := fs.Int("c", 32, "concurrent callers")
	conns := fs.Int("conns", 2, "gRPC connections the callers share")
	tokensPath := fs.String("tokens", "", "file with one token per line")
	_ = fs.Parse(args)
	tokens, err := readLines(*tokensPath)
	if err != nil {
		return err
	}
	// The requests are encoded once and the answers are not decoded past
	// their status code: the client runs on one core too, and decoding
	// every OK answer's dynamic_metadata (a Struct of the token's claims)
	// made it, not the server, the bottleneck (docs/BENCHMARKS.md).
	reqs := make([]rawMessage, len(tokens))
	for i, t := range tokens {
		b, err := proto.Marshal(checkRequest(t))
		if err != nil {
			return err
		}
		reqs[i] = b
	}
	clients := make([]*grpc.ClientConn, *conns)
	for i := range clients {
		cc, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		clients[i] = cc
	}
	// Callers start calls until stop and finish the one they are in; the
	// rate is the calls over the time until the last one ended. Each call
	// has a 10 s deadline of its own: a failed call counts, it never ends
	// the run.
	type tally struct {
		lat          []time.Duration
		notOK, calls int64
		errs         int64
	}
	tallies := make([]tally, *c)
	var firstErr sync.Once
	start := time.Now()
	stop := start.Add(*d)
	// One deadline for every call, past the end of the run: a per-call
	// context (and its timer) is client work the server does not cause.
	ctx, cancel := context.WithDeadline(context.Background(), stop.Add(10*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for g := range *c {
		wg.Go(func() {
			t := &tallies[g]
			t.lat = make([]time.Duration, 0, 1<<16)
			cl := clients[g%len(clients)]
			for i := g; ; i++ {
				t0 := time.Now()
				if t0.After(stop) {
					return
				}
				var resp rawMessage
				err := cl.Invoke(ctx, checkMethod, reqs[i%len(reqs)], &resp, grpc.ForceCodecV2(rawCodec{}))
				t.lat = append(t.lat, time.Since(t0))
				t.calls++
				switch {
				case err != nil:
					t.errs++
					firstErr.Do(func() { fmt.Fprintln(os.Stderr, "grpc-load: first failed call:", err) })
				case statusCode(resp) != int32(codes.OK):
					t.notOK++
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	r := httpres.Run{}
	for _, t := range tallies {
		all = append(all, t.lat...)
		r.Requests += t.calls
		r.Non2xx += t.notOK
		r.SocketErrors += t.errs
	}
	if len(all) == 0 {
		return errors.New("grpc-load: no call completed")
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))]) / float64(time.Millisecond)
	}
	r.RPS = float64(r.Requests) / elapsed.Seconds()
	r.P50Ms, r.P90Ms, r.P99Ms = pct(0.50), pct(0.90), pct(0.99)
	return json.NewEncoder(os.Stdout).Encode(r)
}

// checkMethod is the full name of ext_authz's Check.
const checkMethod = "/envoy.service.auth.v3.Authorization/Check"

// rawMessage is an encoded message; rawCodec sends and receives it as it
// is, under the proto codec's name (the server decodes it as proto).
type rawMessage []byte

type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(rawMessage))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*rawMessage) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// statusCode reads CheckResponse.status.code (field 1, then field 1) from
// an encoded CheckResponse: 0 (OK) when absent, as proto3 leaves it; -1
// when the bytes do not parse.
func statusCode(b []byte) int32 {
	st, found, ok := field(b, 1, protowire.BytesType)
	if !ok {
		return -1
	}
	if !found {
		return 0
	}
	code, found, ok := field(st, 1, protowire.VarintType)
	if !ok {
		return -1
	}
	if !found {
		return 0
	}
	v, _ := protowire.ConsumeVarint(code)
	return int32(v)
}

// field returns the last value of field num (of type typ) in b: the bytes
// of a BytesType field, the encoding of a VarintType one. ok is false when
// b does not parse.
func field(b []byte, num protowire.Number, typ protowire.Type) (val []byte, found, ok bool) {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false, false
		}
		b = b[l:]
		m := protowire.ConsumeFieldValue(n, t, b)
		if m < 0 {
			return nil, false, false
		}
		if n == num && t == typ {
			val, found = b[:m], true
			if t == protowire.BytesType {
				val, _ = protowire.ConsumeBytes(b)
			}
		}
		b = b[m:]
	}
	return val, found, true
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return out, nil
}

// grpcRuns loads the gRPC floor, the cached binary and the uncached binary
// with the repeated token and the pool, in turns ([inTurns]).
func grpcRuns(ctx context.Context, o runOpts, self string, f *algFiles) ([]httpres.Run, error) {
	return inTurns(ctx, o, f.c.Alg, "grpc ", o.selected(grpcServers), func(tokens, server string) (*httpres.Run, error) {
		return oneGRPCRun(ctx, o, self, f, tokens, server)
	})
}

func oneGRPCRun(ctx context.Context, o runOpts, self string, f *algFiles, tokens, server string) (*httpres.Run, error) {
	grpcAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var args []string
	ready := ""
	switch server {
	case httpres.ServerGRPCFloor:
		args = []string{self, "serve-grpc-floor", "-listen", grpcAddr}
	case httpres.ServerJwksverify, httpres.ServerNoCache:
		httpAddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		cfg := f.cachedConfig
		if server == httpres.ServerNoCache {
			cfg = f.nocacheConfig
		}
		p, err := withListen(cfg, httpAddr, grpcAddr)
		if err != nil {
			return nil, err
		}
		args, ready = []string{o.bin, "serve", "--config", p}, "http://"+httpAddr+"/readyz"
	}
	logPath := filepath.Join(o.workDir, f.c.Name, fmt.Sprintf("grpc-%s-%s.log", server, tokens))
	p, err := startServer(ctx, o.serverCPUs, logPath, args)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if ready != "" {
		if err := waitReady(ctx, ready); err != nil {
			return nil, fmt.Errorf("%w (log: %s)", err, logPath)
		}
	}
	if err := grpcSanity(ctx, grpcAddr, f, server != httpres.ServerGRPCFloor); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	tokenFile := f.token
	if tokens == httpres.TokensPool {
		tokenFile = f.pool
	}
	d, _ := time.ParseDuration(o.duration)
	runCtx, cancel := context.WithTimeout(ctx, d+60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "taskset", "-c", o.clientCPUs, self, "grpc-load",
		"-addr", grpcAddr, "-d", o.duration, "-c", fmt.Sprint(o.conns), "-tokens", tokenFile)
	cmd.Stderr = os.Stderr
	cpu0, err := p.cpuTime()
	if err != nil {
		return nil, err
	}
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("grpc-load: %w", err)
	}
	cpu1, err := p.cpuTime()
	if err != nil {
		return nil, err
	}
	var r httpres.Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("grpc-load output: %w", err)
	}
	if r.Requests > 0 {
		r.CPUMicrosPerReq = float64((cpu1 - cpu0).Microseconds()) / float64(r.Requests)
	}
	if err := p.alive(); err != nil {
		return nil, fmt.Errorf("server died during the run: %w (log: %s)", err, logPath)
	}
	r.Alg, r.Tokens, r.Server = f.c.Alg, tokens, server
	return &r, nil
}

// grpcSanity waits for the server to answer Check (at most 15 s) and checks
// that the valid token is OK and, when the server verifies, that the
// tampered one is denied.
func grpcSanity(ctx context.Context, addr string, f *algFiles, verifies bool) error {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	cl := authv3.NewAuthorizationClient(cc)
	deadline := time.Now().Add(15 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := cl.Check(cctx, checkRequest(f.valid))
		cancel()
		if err == nil {
			if code := resp.GetStatus().GetCode(); code != int32(codes.OK) {
				return fmt.Errorf("sanity check: Check of the valid token = %s, want OK", codes.Code(code))
			}
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: Check not answered within 15s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !verifies {
		return nil
	}
	resp, err := cl.Check(ctx, checkRequest(f.tampered))
	if err != nil {
		return err
	}
	if code := resp.GetStatus().GetCode(); code != int32(codes.Unauthenticated) {
		return fmt.Errorf("sanity check: Check of the tampered token = %s, want Unauthenticated", codes.Code(code))
	}
	return nil
}
