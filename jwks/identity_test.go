package jwks

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// bearerServer is a loopback HTTPS JWKS endpoint with its own CA that
// answers only requests with "Authorization: Bearer <want>".
type bearerServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	want string
	got  []string // the bearer tokens seen
}

func newBearerServer(t *testing.T, want string, body []byte) *bearerServer {
	bs := &bearerServer{want: want}
	bs.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bs.mu.Lock()
		defer bs.mu.Unlock()
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		bs.got = append(bs.got, tok)
		if tok != bs.want {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(bs.srv.Close)
	return bs
}

func (bs *bearerServer) setWant(s string) { bs.mu.Lock(); bs.want = s; bs.mu.Unlock() }
func (bs *bearerServer) last() string {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return bs.got[len(bs.got)-1]
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPrivateCABearerToken: keys load with CAFile and BearerTokenFile; a
// changed token file is used on the next fetch; without CAFile the fetch
// fails with a TLS error and the last good keys keep serving.
// It runs on the real clock over real TLS (no bubble can do network I/O):
// the next fetch is an unknown-kid refresh instead of a scheduled one.
func TestPrivateCABearerToken(t *testing.T) {
	dir := t.TempDir()
	bs := newBearerServer(t, "token-one", testkeys.JWKS(keyA))
	caFile, tokFile, state := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "token"), filepath.Join(dir, "state")
	writeFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: bs.srv.Certificate().Raw})))
	writeFile(t, tokFile, "token-one\n")
	url := bs.srv.URL + "/jwks"
	quiet := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	f, err := New(Options{Issuer: "https://k8s.example/", URL: url, CAFile: caFile, BearerTokenFile: tokFile, StateDir: state, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Ready(ctx); err != nil {
		t.Fatalf("Ready() = %v; last error %q", err, f.Keys().Status().LastError)
	}
	if set := f.Keys().Load(); set.Len() != 1 || !set.Usable(time.Now()) {
		t.Fatalf("keys after the first fetch: %d, error %q; want 1", set.Len(), f.Keys().Status().LastError)
	}
	if bs.last() != "token-one" {
		t.Errorf("bearer token sent = %q, want token-one", bs.last())
	}

	// A rotated token file is read on the next fetch.
	writeFile(t, tokFile, "token-two")
	bs.setWant("token-two")
	if err := f.RefreshUnknownKid(ctx, "rotated"); err != nil {
		t.Errorf("RefreshUnknownKid() = %v, want the next fetch to succeed", err)
	}
	if bs.last() != "token-two" || f.Keys().Status().LastError != "" {
		t.Errorf("after rotation: sent %q, last error %q; want token-two and no error", bs.last(), f.Keys().Status().LastError)
	}
	if st := f.Keys().Status(); strings.Contains(st.LastError, "token-") {
		t.Errorf("status shows the token: %q", st.LastError)
	}
	f.Close()

	// Without CAFile: a clear TLS error, the persisted last good set serves.
	g, err := New(Options{Issuer: "https://k8s.example/", URL: url, BearerTokenFile: tokFile, StateDir: state, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	for g.Keys().Status().LastAttempt.IsZero() {
		if ctx.Err() != nil {
			t.Fatal("the fetcher without CAFile made no attempt")
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := g.Keys().Status()
	if !strings.Contains(st.LastError, "certificate") {
		t.Errorf("LastError = %q, want a TLS certificate error", st.LastError)
	}
	if set := g.Keys().Load(); set.Len() != 1 || !set.Usable(time.Now()) {
		t.Errorf("without CAFile: %d usable keys, want the last good 1", set.Len())
	}

	// A CA file that holds no certificate is refused at New.
	writeFile(t, caFile, "not a certificate")
	if _, err := New(Options{URL: url, CAFile: caFile}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New() with a bad CAFile = %v, want ErrInvalidOptions", err)
	}
}

func TestDiscoveryURL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		// The issuer is not where the document is (the in-cluster address of
		// a Kubernetes API server); the document's issuer is still checked.
		issuer := "https://kubernetes.default.svc.cluster.local"
		d, _ := json.Marshal(map[string]string{"issuer": issuer, "jwks_uri": ks.URL(), "introspection_endpoint": ks.base + "/introspect"})
		ks.set(func(ks *keyServer) { ks.discovery = d })
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, Options{Issuer: issuer, Discovery: true, DiscoveryURL: ks.base + wellKnownOIDC})
		if f.Keys().Load().Len() != 1 {
			t.Fatalf("keys = %d, error %q; want 1", f.Keys().Load().Len(), f.Keys().Status().LastError)
		}
		if got := f.IntrospectionEndpoint(); got != ks.base+"/introspect" {
			t.Errorf("IntrospectionEndpoint() = %q", got)
		}
		if _, err := New(Options{Issuer: issuer, DiscoveryURL: ks.base}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New() with DiscoveryURL and no Discovery = %v, want ErrInvalidOptions", err)
		}
	})
}

// TestSPIFFEBundle: a bundle's jwt-svid keys load with use jwt-svid and its
// refresh hint sets the interval; as a plain JWKS the same document has no
// usable key.
func TestSPIFFEBundle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svid := jwkWith(keyB, map[string]any{"use": "jwt-svid", "alg": nil})
		sig := jwkWith(keyA, nil) // use sig: not a SPIFFE authority
		bundle, _ := json.Marshal(map[string]any{"keys": []json.RawMessage{svid, sig}, "spiffe_refresh_hint": 7, "spiffe_sequence": 3})
		ks := newKeyServer(t, bundle)

		clk := newBubbleClock()
		f, interval := startFetcher(t, clk, Options{Issuer: "spiffe://example.org", URL: ks.URL(), TrustDomain: "example.org", MinInterval: time.Second})
		set := f.Keys().Load()
		if set.Len() != 1 {
			t.Fatalf("bundle keys = %d, error %q; want 1", set.Len(), f.Keys().Status().LastError)
		}
		if k, _ := set.Lookup("b"); k == nil || k.Use != UseJWTSVID {
			t.Errorf("key b = %+v, want use %s", k, UseJWTSVID)
		}
		if interval != 7*time.Second {
			t.Errorf("refresh interval = %v, want the 7s hint", interval)
		}

		clk2 := newBubbleClock()
		g, _ := startFetcher(t, clk2, Options{URL: ks.URL()})
		if k, _ := g.Keys().Load().Lookup("b"); k != nil {
			t.Errorf("a plain JWKS fetcher loaded the jwt-svid key")
		}

		file := filepath.Join(t.TempDir(), "bundle.json")
		writeFile(t, file, string(bundle))
		set, err := Fetch(t.Context(), Options{File: file, TrustDomain: "example.org"})
		if err != nil || set.Len() != 1 {
			t.Errorf("Fetch(bundle file) = %v keys, %v; want 1", set, err)
		}
		writeFile(t, file, `{"keys":[{"kty":"EC","use":"jwt-svid"}]}`)
		if _, err := Fetch(t.Context(), Options{File: file, TrustDomain: "example.org"}); !errors.Is(err, ErrMalformed) {
			t.Errorf("Fetch(broken bundle) = %v, want ErrMalformed", err)
		}
		if _, err := New(Options{URL: ks.URL(), TrustDomain: "not a domain!"}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New() with a bad TrustDomain = %v, want ErrInvalidOptions", err)
		}
	})
}

// TestSPIFFEBundleCollidingMembers: a bundle with member names that
// collide ignoring case, its own or a key's, is refused whole
// (ErrMalformed), as a JWKS key with such names is skipped. go-spiffe
// reads the last of "use": "x509-svid" and "USE": "jwt-svid" (encoding/json
// into go-jose's structs), and of "kid" and "KID": it took an X.509
// authority for a JWT-SVID authority, or a key under a kid that a reader
// matching names exactly does not see.
func TestSPIFFEBundleCollidingMembers(t *testing.T) {
	svid := func(extra map[string]any) json.RawMessage {
		return jwkWith(keyB, mergeMembers(map[string]any{"use": "jwt-svid", "alg": nil}, extra))
	}
	bundle := func(keys ...json.RawMessage) []byte {
		b, _ := json.Marshal(map[string]any{"keys": keys, "spiffe_refresh_hint": 7})
		return b
	}
	tests := []struct {
		name    string
		data    []byte
		wantErr error
	}{
		{"plain", bundle(svid(nil)), nil},
		{"use-twice", bundle(svid(map[string]any{"USE": "x509-svid"})), ErrMalformed},
		{"kid-twice", bundle(svid(map[string]any{"KID": "other"})), ErrMalformed},
		{"keys-twice", []byte(`{"keys":[],"KEYS":[` + string(svid(nil)) + `]}`), ErrMalformed},
		{"keys-exactly-twice", []byte(`{"keys":[` + string(svid(nil)) + `],"keys":[]}`), ErrMalformed},
		// "keyſ" (U+017F) is "keys" to encoding/json, which go-spiffe
		// decodes the bundle with: the second array was its keys.
		{"keys-twice-simple-fold", []byte(`{"keys":[],"key\u017f":[` + string(svid(nil)) + `]}`), ErrMalformed},
		{"keys-twice-simple-fold-raw", []byte(`{"keys":[],"keyſ":[` + string(svid(nil)) + `]}`), ErrMalformed},
		{"hint-twice", []byte(`{"keys":[` + string(svid(nil)) + `],"spiffe_refresh_hint":1,"Spiffe_Refresh_Hint":600}`), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parseBundle(tt.data, "example.org", 0, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("parseBundle() = %d keys, %v; want %v", len(doc.keys), err, tt.wantErr)
			}
			if err == nil && len(doc.keys) != 1 {
				t.Fatalf("parseBundle() = %d keys, want 1", len(doc.keys))
			}
		})
	}
}
