package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// TestCheckClaimHeader lists what a claim may never become, and checks that
// New refuses exactly what CheckClaimHeader refuses.
func TestCheckClaimHeader(t *testing.T) {
	e := newEnv(t, envConfig{})
	tests := []struct {
		header string
		ok     bool
	}{
		{"X-Auth-Subject", true},
		{"x-auth-scope", true},
		{"X-Forwarded", true}, // not a prefix match of X-Forwarded-
		{"Content-Length", false},
		{"content-encoding", false},
		{"Content-Type", false},
		{"Connection", false},
		{"Cache-Control", false},
		{"X-A-B-C-D-E-F", true},    // six separators: every twin is checked
		{"X-A-B-C-D-E-F-G", false}, // seven: not every twin could be
		{"cache-control", false},
		{"Host", false},
		{"Keep-Alive", false},
		{"TE", false},
		{"Trailer", false},
		{"Transfer-Encoding", false},
		{"Upgrade", false},
		{"Authorization", false},
		{"authorization", false},
		{"Cookie", false},
		{"Set-Cookie", false},
		{"WWW-Authenticate", false},
		{"Proxy-Authorization", false},
		{"Proxy-Connection", false},
		{"Forwarded", false},
		{"X-Forwarded-For", false},
		{"x-forwarded-proto", false},
		{"X-Real-IP", false},
		{"X-Original-URI", false},
		{"X-Envoy-Auth-Headers-To-Remove", false},
		{"x-envoy-original-path", false},
		{"X Bad", false},
		{"X-Sub\r\n", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			if err := CheckClaimHeader(tt.header); (err == nil) != tt.ok {
				t.Errorf("CheckClaimHeader(%q) = %v, want ok %v", tt.header, err, tt.ok)
			}
			_, err := New(Options{Verifier: e.v, ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": tt.header}}})
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidOptions)) {
				t.Errorf("New(ClaimsToHeaders: {sub: %q}) = %v, want ok %v", tt.header, err, tt.ok)
			}
		})
	}
}

// TestQuerySourceNeedsProxy: a query token is read only from the original
// request the preset names, so a query source without one is refused.
func TestQuerySourceNeedsProxy(t *testing.T) {
	e := newEnv(t, envConfig{})
	_, err := New(Options{Verifier: e.v, TokenSources: []TokenSource{{Query: "access_token"}}})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("New(query source, no Proxy) = %v, want ErrInvalidOptions", err)
	}
	if _, err := Middleware(e.v, MiddlewareOptions{TokenSources: []TokenSource{{Query: "access_token"}}}); err != nil {
		t.Fatalf("Middleware(query source) = %v, want nil (the request is the original)", err)
	}
}

func TestCheckTokenSource(t *testing.T) {
	e := newEnv(t, envConfig{})
	tests := []struct {
		name string
		ts   TokenSource
		ok   bool
	}{
		{"header-with-prefix", TokenSource{Header: "Authorization", Prefix: "Bearer "}, true},
		{"cookie", TokenSource{Cookie: "session"}, true},
		{"query", TokenSource{Query: "access_token"}, true},
		{"none", TokenSource{Prefix: "Bearer "}, false},
		{"two", TokenSource{Header: "X-Token", Cookie: "tok"}, false},
		{"prefix-on-query", TokenSource{Query: "t", Prefix: "Bearer "}, false},
		{"bad-header", TokenSource{Header: "X Token"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckTokenSource(tt.ts); (err == nil) != tt.ok {
				t.Errorf("CheckTokenSource(%+v) = %v, want ok %v", tt.ts, err, tt.ok)
			}
			if _, err := New(Options{Verifier: e.v, TokenSources: []TokenSource{tt.ts}, Proxy: request.Envoy}); (err == nil) != tt.ok {
				t.Errorf("New(TokenSources: [%+v]) = %v, want ok %v", tt.ts, err, tt.ok)
			}
		})
	}
}

// TestCheckOptions: the limits' bounds, and New refusing exactly what
// CheckOptions refuses (the configuration loader calls CheckOptions with no
// verifier built).
func TestCheckOptions(t *testing.T) {
	e := newEnv(t, envConfig{})
	maxToken := e.v.MaxTokenBytes()
	tests := []struct {
		name  string
		opts  Options
		field string // "": accepted
	}{
		{"defaults", Options{}, ""},
		{"body at the token bound", Options{MaxBodyBytes: int64(maxToken)}, ""},
		{"body below the token bound", Options{MaxBodyBytes: int64(maxToken) - 1}, "MaxBodyBytes"},
		{"body at the maximum", Options{MaxBodyBytes: MaxMaxBodyBytes}, ""},
		{"body above the maximum", Options{MaxBodyBytes: MaxMaxBodyBytes + 1}, "MaxBodyBytes"},
		{"negative body", Options{MaxBodyBytes: -1}, "MaxBodyBytes"},
		{"batch at the maximum", Options{MaxBatch: MaxMaxBatch}, ""},
		{"batch above the maximum", Options{MaxBatch: MaxMaxBatch + 1}, "MaxBatch"},
		{"negative batch", Options{MaxBatch: -1}, "MaxBatch"},
		{"log rate at the maximum", Options{RejectionLogRate: MaxRejectionLogRate}, ""},
		{"log rate above the maximum", Options{RejectionLogRate: MaxRejectionLogRate + 1}, "RejectionLogRate"},
		{"no log limit", Options{RejectionLogRate: -1}, ""},
		{"query source with a proxy", Options{TokenSources: []TokenSource{{Header: "X-Token"}, {Query: "access_token"}}, Proxy: request.Nginx}, ""},
		{"query source without a proxy", Options{TokenSources: []TokenSource{{Header: "X-Token"}, {Query: "access_token"}}}, "TokenSources[1]"},
		{"bad token source", Options{TokenSources: []TokenSource{{Header: "X Token"}}}, "TokenSources[0]"},
		{"token header with too many separators", Options{TokenSources: []TokenSource{{Header: "X-A-B-C-D-E-F-G"}}}, "TokenSources[0]"},
		{"client secret at the minimum", Options{IntrospectionClients: []IntrospectionClient{{ID: "gw", Secret: strings.Repeat("s", MinClientSecretBytes)}}}, ""},
		{"client secret too short", Options{IntrospectionClients: []IntrospectionClient{{ID: "gw", Secret: strings.Repeat("s", MinClientSecretBytes-1)}}}, "IntrospectionClients[0]"},
		{"client without id", Options{IntrospectionClients: []IntrospectionClient{{Secret: strings.Repeat("s", 20)}}}, "IntrospectionClients[0]"},
		{"client id with a colon", Options{IntrospectionClients: []IntrospectionClient{{ID: "a:b", Secret: strings.Repeat("s", 20)}}}, "IntrospectionClients[0]"},
		{"client listed twice", Options{IntrospectionClients: []IntrospectionClient{{ID: "a", Secret: strings.Repeat("s", 20)}, {ID: "a", Secret: strings.Repeat("t", 20)}}}, "IntrospectionClients[1]"},
		{"client certificate header", Options{ClientCert: ClientCertSource{Header: "X-Client-Cert"}}, ""},
		{"bad client certificate header", Options{ClientCert: ClientCertSource{Header: "X Client"}}, "ClientCert.Header"},
		{"xfcc-behind-envoy", Options{Proxy: request.Envoy, ClientCert: ClientCertSource{XFCC: true}}, ""},
		{"xfcc-behind-nginx", Options{Proxy: request.Nginx, ClientCert: ClientCertSource{XFCC: true}}, "ClientCert.XFCC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckOptions(tt.opts, maxToken)
			if (err == nil) != (tt.field == "") {
				t.Fatalf("CheckOptions = %v, want refused: %v", err, tt.field != "")
			}
			if err != nil && (!errors.Is(err, ErrInvalidOptions) || !strings.HasPrefix(err.Error(), ErrInvalidOptions.Error()+": "+tt.field+": ")) {
				t.Errorf("CheckOptions = %v, want ErrInvalidOptions naming %s first", err, tt.field)
			}
			o := tt.opts
			o.Verifier = e.v
			if _, nerr := New(o); (nerr == nil) != (err == nil) {
				t.Errorf("New = %v, CheckOptions = %v", nerr, err)
			}
		})
	}
}

// TestDefaultBodyHoldsAToken: without MaxBodyBytes, the body bound is the
// default or, when larger, the verifier's token bound, so that a valid
// token always fits.
func TestDefaultBodyHoldsAToken(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, tt := range []struct {
		maxToken int
		want     int64
	}{{0, DefaultMaxBodyBytes}, {131072, 131072}} {
		v, err := verify.New(verify.Options{Issuers: e.v.Issuers(), MaxTokenBytes: tt.maxToken})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{Verifier: v})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.MaxBodyBytes(); got != tt.want {
			t.Errorf("MaxTokenBytes %d: MaxBodyBytes() = %d, want %d", tt.maxToken, got, tt.want)
		}
	}
}
