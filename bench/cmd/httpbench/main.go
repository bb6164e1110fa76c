// Command httpbench drives the HTTP load comparison of bench/http.sh: the
// real jwksverify binary (with and without a policy, with 100 000 revocation
// entries) against a bare net/http
// handler and a golang-jwt + keyfunc forward-auth handler, each alone on one
// pinned core, loaded by wrk on the other core, over loopback only; and the
// gRPC ext_authz Check path against a bare gRPC server answering OK, loaded
// by a Go client speaking Envoy's protos. It also measures the resident memory
// of the binary with a full verified-token cache.
//
// Subcommands:
//
//	httpbench run -bin ./jwksverify -out http-latest.json [flags]   everything; see -h
//	httpbench serve-floor -listen ADDR                              the absolute floor
//	httpbench serve-bare -listen ADDR                               the bare handler
//	httpbench serve-keyfunc -listen ADDR -jwks F -issuer I -alg A   the baseline handler
//	httpbench serve-grpc-floor -listen ADDR                         a gRPC ext_authz server answering OK
//	httpbench grpc-load -addr ADDR -d D -c N -tokens F              the gRPC Check load client
//
// Every server answers GET /healthz; the forward-auth endpoint is /v1/authz
// (the floor answers every path).
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jwksverify/jwksverify/bench"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: httpbench run|serve-floor|serve-bare|serve-keyfunc|serve-grpc-floor|grpc-load [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runAll(os.Args[2:])
	case "serve-floor":
		err = serveFloor(os.Args[2:])
	case "serve-bare":
		err = serveBare(os.Args[2:])
	case "serve-keyfunc":
		err = serveKeyfunc(os.Args[2:])
	case "serve-grpc-floor":
		err = serveGRPCFloor(os.Args[2:])
	case "grpc-load":
		err = grpcLoad(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpbench:", err)
		os.Exit(1)
	}
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func healthz(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

// listen serves h on addr until the process is killed (the run subcommand
// stops it with SIGTERM).
func listen(addr string, mux *http.ServeMux) error {
	srv := &http.Server{
		Addr:              addr,
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	err := srv.ListenAndServe()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// serveFloor is the absolute floor: http.ListenAndServe with a handler that
// only writes 200, whatever the request — no mux, no timeouts, no header
// read. No HTTP/1.1 server in Go answers a request on one core with less
// work; every other server is judged as a fraction of it. With -no-store
// the handler also sets Cache-Control: no-store, as forward-auth must: what
// net/http charges a handler that sets a header (the header map, the
// clone WriteHeader makes of it, the lookups and the write).
func serveFloor(args []string) error {
	fs := flag.NewFlagSet("serve-floor", flag.ExitOnError)
	addr := fs.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	noStore := fs.Bool("no-store", false, "set Cache-Control: no-store on every answer")
	_ = fs.Parse(args)
	return http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if *noStore {
			w.Header()["Cache-Control"] = []string{"no-store"}
		}
		w.WriteHeader(http.StatusOK)
	}))
}

// serveBare is the bare handler: 200 when a bearer token is present, 401
// otherwise. It bounds what any forward-auth handler can reach on one core.
func serveBare(args []string) error {
	fs := flag.NewFlagSet("serve-bare", flag.ExitOnError)
	addr := fs.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	_ = fs.Parse(args)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/v1/authz", func(w http.ResponseWriter, r *http.Request) {
		if t, ok := bearer(r); !ok || t == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return listen(*addr, mux)
}

// serveKeyfunc is the hand-wired baseline: jwt.Parse with a keyfunc over the
// issuer's JWKS, with the same checks as jwksverify (alg, iss, aud, exp
// required, nbf, 30s leeway), 200 or 401 with WWW-Authenticate.
func serveKeyfunc(args []string) error {
	fs := flag.NewFlagSet("serve-keyfunc", flag.ExitOnError)
	addr := fs.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	jwksPath := fs.String("jwks", "", "JWKS file")
	issuer := fs.String("issuer", "", "issuer to require")
	alg := fs.String("alg", "", "JWS alg to allow")
	_ = fs.Parse(args)
	doc, err := os.ReadFile(*jwksPath)
	if err != nil {
		return err
	}
	verify, err := bench.GolangJWTKeyfunc(*alg, bench.Issuer{Name: *issuer, JWKS: doc})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/v1/authz", func(w http.ResponseWriter, r *http.Request) {
		t, ok := bearer(r)
		if !ok || verify(t) != nil {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return listen(*addr, mux)
}
