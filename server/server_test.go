package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testlog"
)

func TestNewRejectsInvalidOptions(t *testing.T) {
	e := newEnv(t, envConfig{})
	tests := []struct {
		name string
		opts Options
	}{
		{name: "no-verifier", opts: Options{}},
		{name: "source-with-two-places", opts: Options{TokenSources: []TokenSource{{Header: "X-A", Query: "a"}}}},
		{name: "source-with-none", opts: Options{TokenSources: []TokenSource{{Prefix: "Bearer "}}}},
		{name: "prefix-on-cookie", opts: Options{TokenSources: []TokenSource{{Cookie: "c", Prefix: "Bearer "}}}},
		{name: "bad-header-name", opts: Options{TokenSources: []TokenSource{{Header: "X Bad"}}}},
		{name: "claims-for-unknown-issuer", opts: Options{ClaimsToHeaders: map[string]map[string]string{"https://nope/": {"sub": "X-Sub"}}}},
		{name: "claim-not-extracted", opts: Options{ClaimsToHeaders: map[string]map[string]string{issuerA: {"email": "X-Email"}}}},
		{name: "forbidden-header", opts: Options{ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": "Content-Length"}}}},
		{name: "invalid-header", opts: Options{ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": "X-Sub\r\n"}}}},
		{name: "two-claims-one-header", opts: Options{ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": "X-Who", "scope": "x-who"}}}},
		{name: "client-without-secret", opts: Options{IntrospectionClients: []IntrospectionClient{{ID: "a"}}}},
		{name: "client-id-with-colon", opts: Options{IntrospectionClients: []IntrospectionClient{{ID: "a:b", Secret: "s"}}}},
		{name: "duplicate-client", opts: Options{IntrospectionClients: []IntrospectionClient{{ID: "a", Secret: "s"}, {ID: "a", Secret: "t"}}}},
		{name: "negative-body", opts: Options{MaxBodyBytes: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "no-verifier" {
				tt.opts.Verifier = e.v
			}
			if _, err := New(tt.opts); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New() = %v, want %v", err, ErrInvalidOptions)
			}
		})
	}
}

func TestVerifierAccessor(t *testing.T) {
	e := newEnv(t, envConfig{})
	if e.srv.Verifier() != e.v {
		t.Errorf("Verifier() is not the configured verifier")
	}
}

// TestRejectionLog checks the one line per rejected token: issuer
// (configured or "unknown"), kid and class, never the token.
func TestRejectionLog(t *testing.T) {
	e := newEnv(t, envConfig{})
	toks := tokens()
	tests := []struct {
		name       string
		token      string
		wantIssuer string
		wantKid    string
		wantClass  string
	}{
		{name: "expired", token: toks["expired"], wantIssuer: issuerA, wantKid: "rsa-a", wantClass: "expired"},
		{name: "unknown-issuer", token: toks["unknown-issuer"], wantIssuer: "unknown", wantKid: "rsa-a", wantClass: "unknown_issuer"},
		{name: "unknown-kid", token: toks["unknown-kid"], wantIssuer: issuerA, wantKid: "nope", wantClass: "unknown_kid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.logs.Reset()
			do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tt.token))
			line := e.logs.String()
			for _, want := range []string{
				`"issuer":` + jsonString(tt.wantIssuer),
				`"kid":` + jsonString(tt.wantKid),
				`"class":` + jsonString(tt.wantClass),
				`"level":"INFO"`,
			} {
				if !strings.Contains(line, want) {
					t.Errorf("log %s lacks %s", line, want)
				}
			}
			if strings.Count(line, "\n") != 1 {
				t.Errorf("log has %d lines, want 1", strings.Count(line, "\n"))
			}
			if strings.Contains(line, tt.token) {
				t.Errorf("log %s holds the token", line)
			}
		})
	}
	e.logs.Reset()
	do(e.handler, authzRequest(http.MethodGet, "/v1/authz", toks["valid"]))
	if e.logs.Len() != 0 {
		t.Errorf("an accepted token logged %s", e.logs)
	}
}

func TestIntrospectionSecretNeverLogged(t *testing.T) {
	var buf testlog.Buffer
	e := newEnv(t, envConfig{})
	srv, err := New(Options{
		Verifier:             e.v,
		IntrospectionClients: []IntrospectionClient{{ID: "gw", Secret: "s3cr3t-value-long"}},
		Logger:               slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	do(srv.Handler(), introspectRequest("token="+tokens()["expired"], "gw", "s3cr3t-value-long"))
	do(srv.Handler(), introspectRequest("token=x", "gw", "wrong-s3cr3t"))
	if strings.Contains(buf.String(), "s3cr3t") {
		t.Errorf("log holds a client secret: %s", buf.String())
	}
	if !strings.Contains(buf.String(), "class=expired") {
		t.Errorf("log %q lacks the rejection", buf.String())
	}
}
