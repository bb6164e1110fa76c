package introspect_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// server is an RFC 7662 endpoint whose answers the test sets.
type server struct {
	mu      sync.Mutex
	answers map[string]string // token -> JSON answer
	fail    bool
	calls   atomic.Int64
	auth    string // the last Authorization header
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = r.Header.Get("Authorization")
	if s.fail {
		http.Error(w, "down", http.StatusBadGateway)
		return
	}
	a, ok := s.answers[r.PostForm.Get("token")]
	if !ok {
		a = `{"active":false}`
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, a)
}

func (s *server) set(token, answer string) {
	s.mu.Lock()
	s.answers[token] = answer
	s.mu.Unlock()
}

func (s *server) setFail(f bool) {
	s.mu.Lock()
	s.fail = f
	s.mu.Unlock()
}

func newServer(t *testing.T) (*server, string) {
	s := &server{answers: map[string]string{}}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

func newClient(t *testing.T, o introspect.Options) *introspect.Client {
	t.Helper()
	if o.Issuer == "" {
		o.Issuer = "https://as.example.com/"
	}
	c, err := introspect.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func activeAnswer(exp time.Time) string {
	return fmt.Sprintf(`{"active":true,"sub":"alice","scope":"read write","client_id":"c1","exp":%d,"iss":"https://as.example.com/"}`, exp.Unix())
}

func TestIntrospectCaching(t *testing.T) {
	srv, url := newServer(t)
	c := newClient(t, introspect.Options{URL: url, MaxTTL: time.Minute, NegativeTTL: 10 * time.Second, StaleFor: 30 * time.Second})
	srv.set("tok-a", activeAnswer(t0.Add(time.Hour)))
	srv.set("tok-short", activeAnswer(t0.Add(20*time.Second)))
	ctx := context.Background()

	tests := []struct {
		name      string
		token     string
		at        time.Duration
		wantErr   error
		wantCalls int64 // upstream calls so far
	}{
		{"first-call", "tok-a", 0, nil, 1},
		{"cached", "tok-a", 30 * time.Second, nil, 1},
		{"past-max-ttl", "tok-a", 61 * time.Second, nil, 2},
		{"inactive", "tok-x", 61 * time.Second, verify.ErrInactive, 3},
		{"inactive-cached", "tok-x", 70 * time.Second, verify.ErrInactive, 3},
		{"inactive-past-negative-ttl", "tok-x", 72 * time.Second, verify.ErrInactive, 4},
		{"short-exp", "tok-short", 0, nil, 5},
		{"short-exp-cached", "tok-short", 19 * time.Second, nil, 5},
		{"never-past-exp", "tok-short", 21 * time.Second, nil, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ans, err := c.Introspect(ctx, tt.token, t0.Add(tt.at))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Introspect() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && !strings.Contains(string(ans.Claims), `"sub":"alice"`) {
				t.Errorf("Claims = %s, want the answer's sub", ans.Claims)
			}
			if err == nil && strings.Contains(string(ans.Claims), `"active"`) {
				t.Errorf("Claims = %s, want no active member", ans.Claims)
			}
			if got := srv.calls.Load(); got != tt.wantCalls {
				t.Errorf("upstream calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
	if st := c.Stats(); st.Hits != 3 || st.Inactive != 2 {
		t.Errorf("Stats() = %+v, want 3 hits, 2 inactive answers", st)
	}
}

func TestIntrospectStale(t *testing.T) {
	srv, url := newServer(t)
	c := newClient(t, introspect.Options{URL: url, MaxTTL: time.Minute, StaleFor: 30 * time.Second})
	srv.set("tok", activeAnswer(t0.Add(time.Hour)))
	ctx := context.Background()
	if _, err := c.Introspect(ctx, "tok", t0); err != nil {
		t.Fatal(err)
	}
	srv.setFail(true)
	for _, tt := range []struct {
		name    string
		at      time.Duration
		wantErr error
	}{
		{"fresh", 59 * time.Second, nil},
		{"stale-served", 80 * time.Second, nil},
		{"past-stale", 91 * time.Second, verify.ErrKeysUnavailable},
		{"unknown-token", 10 * time.Second, verify.ErrKeysUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := "tok"
			if tt.name == "unknown-token" {
				tok = "other"
			}
			if _, err := c.Introspect(ctx, tok, t0.Add(tt.at)); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Introspect() = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if st := c.Stats(); st.Stale != 1 || st.Errors != 3 {
		t.Errorf("Stats() = %+v, want 1 stale answer, 3 errors", st)
	}
	if st := c.Status(); !strings.Contains(st.LastError, "502") {
		t.Errorf("Status().LastError = %q, want the 502", st.LastError)
	}
}

func TestIntrospectBasicAuthSecretReread(t *testing.T) {
	srv, url := newServer(t)
	secret := writeSecret(t, "s3cret\n")
	c := newClient(t, introspect.Options{URL: url, ClientID: "gate way", ClientSecretFile: secret})
	want := func(id, sec string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+sec))
	}
	c.Introspect(context.Background(), "t1", t0)
	if srv.auth != want("gate+way", "s3cret") {
		t.Errorf("Authorization = %q, want Basic of the form-encoded id and secret", srv.auth)
	}
	os.WriteFile(secret, []byte("n3w"), 0o600)
	c.Introspect(context.Background(), "t2", t0)
	if srv.auth != want("gate+way", "n3w") {
		t.Errorf("Authorization = %q after the secret changed, want the new secret", srv.auth)
	}
	os.Remove(secret)
	if _, err := c.Introspect(context.Background(), "t3", t0); !errors.Is(err, verify.ErrKeysUnavailable) || strings.Contains(err.Error(), "n3w") {
		t.Errorf("Introspect() without a secret file = %v, want keys_unavailable without the secret", err)
	}
}

// blockingTransport answers every request with an active answer once
// released, counting the requests.
type blockingTransport struct {
	release chan struct{}
	calls   atomic.Int64
}

func (b *blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b.calls.Add(1)
	<-b.release
	body := activeAnswer(t0.Add(time.Hour))
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Header: http.Header{}, Request: r}, nil
}

// TestIntrospectSharedCall: 50 concurrent requests for a new token make one
// upstream call; a caller whose context ends stops waiting, the call goes on.
func TestIntrospectSharedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bt := &blockingTransport{release: make(chan struct{})}
		c, err := introspect.New(introspect.Options{Issuer: "https://as.example.com/", URL: "https://as.example.com/introspect", HTTPClient: &http.Client{Transport: bt}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var wg sync.WaitGroup
		var ok atomic.Int64
		for range 50 {
			wg.Go(func() {
				if _, err := c.Introspect(context.Background(), "new-token", t0); err == nil {
					ok.Add(1)
				}
			})
		}
		ctx, cancel := context.WithCancel(context.Background())
		var impatient error
		wg.Go(func() { _, impatient = c.Introspect(ctx, "new-token", t0) })
		synctest.Wait() // everyone waits on the one call
		cancel()
		synctest.Wait()
		close(bt.release)
		wg.Wait()
		if got := bt.calls.Load(); got != 1 {
			t.Errorf("upstream calls = %d, want 1", got)
		}
		if ok.Load() != 50 {
			t.Errorf("%d of 50 callers got the answer", ok.Load())
		}
		if !errors.Is(impatient, verify.ErrKeysUnavailable) || !errors.Is(impatient, context.Canceled) {
			t.Errorf("Introspect() with a cancelled context = %v, want keys_unavailable, canceled", impatient)
		}
	})
}

func TestIntrospectBounded(t *testing.T) {
	srv, url := newServer(t)
	c := newClient(t, introspect.Options{URL: url, MaxEntries: 3})
	for i := range 10 {
		tok := fmt.Sprintf("tok-%d", i)
		srv.set(tok, activeAnswer(t0.Add(time.Hour)))
		if _, err := c.Introspect(context.Background(), tok, t0); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Stats(); st.Entries > 3 || st.Bytes <= 0 {
		t.Errorf("Stats() = %+v, want at most 3 entries", st)
	}
	cb := newClient(t, introspect.Options{URL: url, MaxBytes: 1000})
	for i := range 10 {
		cb.Introspect(context.Background(), fmt.Sprintf("tok-%d", i), t0)
	}
	if st := cb.Stats(); st.Bytes > 1000 {
		t.Errorf("Stats() = %+v, want at most 1000 bytes", st)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    introspect.Options
	}{
		{"no-issuer", introspect.Options{URL: "https://as.example.com/i"}},
		{"no-endpoint", introspect.Options{Issuer: "x"}},
		{"plain-http", introspect.Options{Issuer: "x", URL: "http://as.example.com/i"}},
		{"id-without-secret", introspect.Options{Issuer: "x", URL: "https://as.example.com/i", ClientID: "a"}},
		{"missing-ca-file", introspect.Options{Issuer: "x", URL: "https://as.example.com/i", CAFile: "/nonexistent"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := introspect.New(tt.o); err == nil {
				t.Fatal("New() = nil error, want a refusal")
			}
		})
	}
}

// TestOptionBounds: New and CheckOptions accept each bound and refuse past
// it, naming the field first (config maps it to the YAML key).
func TestOptionBounds(t *testing.T) {
	base := introspect.Options{Issuer: "x", URL: "https://as.example.com/i"}
	for _, tt := range []struct {
		name  string
		set   func(o *introspect.Options)
		field string // "": accepted
	}{
		{"ttls-at-min", func(o *introspect.Options) {
			o.MaxTTL, o.NegativeTTL, o.StaleFor = introspect.MinTTL, introspect.MinTTL, introspect.MinTTL
		}, ""},
		{"stale-never", func(o *introspect.Options) { o.StaleFor = -1 }, ""},
		{"at-max", func(o *introspect.Options) {
			o.MaxEntries, o.MaxConcurrent, o.MaxWait = introspect.MaxMaxEntries, introspect.MaxMaxConcurrent, introspect.MaxMaxWait
		}, ""},
		{"wait-at-min", func(o *introspect.Options) { o.MaxWait = introspect.MinMaxWait }, ""},
		{"max-ttl-below", func(o *introspect.Options) { o.MaxTTL = introspect.MinTTL - 1 }, "MaxTTL: "},
		{"negative-ttl-below", func(o *introspect.Options) { o.NegativeTTL = time.Millisecond }, "NegativeTTL: "},
		{"stale-below", func(o *introspect.Options) { o.StaleFor = time.Millisecond }, "StaleFor: "},
		{"entries-above", func(o *introspect.Options) { o.MaxEntries = introspect.MaxMaxEntries + 1 }, "MaxEntries: "},
		{"concurrent-above", func(o *introspect.Options) { o.MaxConcurrent = introspect.MaxMaxConcurrent + 1 }, "MaxConcurrent: "},
		{"concurrent-negative", func(o *introspect.Options) { o.MaxConcurrent = -1 }, "MaxConcurrent: "},
		{"wait-below", func(o *introspect.Options) { o.MaxWait = introspect.MinMaxWait - 1 }, "MaxWait: "},
		{"wait-above", func(o *introspect.Options) { o.MaxWait = introspect.MaxMaxWait + 1 }, "MaxWait: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.set(&o)
			err := introspect.CheckOptions(o)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckOptions() = %v, want nil", err)
				}
				c, err := introspect.New(o)
				if err != nil {
					t.Fatalf("New() = %v, want nil", err)
				}
				c.Close()
				return
			}
			if !errors.Is(err, introspect.ErrInvalidOptions) || !strings.HasPrefix(strings.TrimPrefix(err.Error(), introspect.ErrInvalidOptions.Error()+": "), tt.field) {
				t.Fatalf("CheckOptions() = %v, want %v naming %q first", err, introspect.ErrInvalidOptions, tt.field)
			}
			if _, err := introspect.New(o); !errors.Is(err, introspect.ErrInvalidOptions) {
				t.Fatalf("New() = %v, want %v", err, introspect.ErrInvalidOptions)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		active     bool
		wantErr    bool
	}{
		{"active", `{"active":true,"sub":"a","exp":1900000000}`, true, false},
		{"inactive", `{"active":false,"sub":"ignored"}`, false, false},
		{"no-active", `{"sub":"a"}`, false, true},
		{"active-string", `{"active":"true"}`, false, true},
		{"active-null", `{"active":null}`, false, true},
		{"array", `[{"active":true}]`, false, true},
		{"exp-string", `{"active":true,"exp":"soon"}`, false, true},
		// null is no number: json.Unmarshal leaves the float zero, so the
		// answer was active with an exp of 1970 (never cached, one call per
		// request) and the verifier refused its exp as not a date (503,
		// without the stale answer or the failure count of a bad answer).
		{"exp-null", `{"active":true,"exp":null}`, false, true},
		{"exp-null-spaced", `{"active":true,"exp": null }`, false, true},
		{"exp-negative", `{"active":true,"exp":-1}`, false, true},
		{"exp-over-1e15", `{"active":true,"exp":1000000000000001}`, false, true},
		{"exp-1e15", `{"active":true,"exp":1000000000000000}`, true, false},
		{"deep-32", `{"active":true,"x":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`, true, false},
		{"deep-33", `{"active":true,"x":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`, false, true},
		{"bad-utf8", "{\"active\":true,\"sub\":\"\xff\"}", false, true},
		{"deep", `{"active":true,"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, false, true},
		// Duplicate member names: parsers disagree on which counts (the
		// last one won, silently), and a JWT with them is malformed.
		{"duplicate-active", `{"active":false,"sub":"a","active":true}`, false, true},
		{"duplicate-nested", `{"active":true,"cnf":{"jkt":"a","jkt":"b"}}`, false, true},
		{"duplicate-nested-escaped", `{"active":true,"roles":[{"id":"a","\u0069d":"b"}]}`, false, true},
		{"same-name-two-objects", `{"active":true,"a":{"id":1},"b":{"id":1}}`, true, false},
		{"duplicate-active-escaped", `{"active":false,"\u0061ctive":true}`, false, true},
		{"duplicate-exp", `{"active":true,"exp":1,"exp":1900000000}`, false, true},
		{"duplicate-sub", `{"active":true,"sub":"a","sub":"admin"}`, false, true},
		{"nested-names-may-repeat", `{"active":true,"a":{"x":1},"b":{"x":2}}`, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := introspect.Decode([]byte(tt.body))
			if (err != nil) != tt.wantErr || (err == nil && a.Active != tt.active) {
				t.Fatalf("Decode() = %+v, %v; want active %v, error %v", a, err, tt.active, tt.wantErr)
			}
			if err != nil && !errors.Is(err, introspect.ErrBadAnswer) {
				t.Errorf("Decode() error %v, want ErrBadAnswer", err)
			}
		})
	}
}

// FuzzDecode: never a panic; a refusal is empty; an accepted answer is one
// that the strict reader (jsonscan: RFC 8259, UTF-8, every name once in
// every object) reads, its one active member the literal true or false
// that Decode answered; an active answer's claims are an object without
// active.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"active":true,"sub":"a","exp":1900000000,"aud":["x"]}`, `{"active":false}`, `{"active":true,"exp":1e300}`,
		`{"active":false,"active":true}`, `{"active":false,"\u0061ctive":true}`, `{"active":true,"Active":false}`, `{"active":"true"}`,
		`{"active":null}`, `{"active":1}`, `{"active":true,"cnf":{"jkt":"a","jkt":"b"}}`, `{"active":true,"sub":"\ud800"}`,
		`{"active":true,"sub":"` + "\x97" + `"}`, `{"active":true,"exp":-1}`, `{"active":true,"exp":"1"}`, `{"active":true} {}`,
		`{"active":true,"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, ` {"active" : true } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := introspect.Decode(body)
		if err != nil {
			if a.Active || a.Claims != nil {
				t.Fatalf("Decode() = %+v with error %v", a, err)
			}
			return
		}
		it, err := jsonscan.NewMembers(string(body))
		var names jsonscan.Names
		active := ""
		for err == nil {
			mb, ok, nerr := it.Next()
			if err = nerr; !ok || err != nil {
				break
			}
			if !names.Add(mb.Name) {
				t.Fatalf("Decode(%q) accepted member %q twice", body, mb.Name)
			}
			if mb.Name == "active" {
				active = string(body[mb.Start:mb.End])
			}
		}
		if err != nil {
			t.Fatalf("Decode(%q) = active %v; a strict reader: %v", body, a.Active, err)
		}
		if active != strconv.FormatBool(a.Active) {
			t.Fatalf("Decode(%q) = active %v; a strict reader reads active %q", body, a.Active, active)
		}
		if !a.Active {
			if a.Claims != nil {
				t.Fatalf("inactive answer with claims %s", a.Claims)
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(a.Claims, &m) != nil {
			t.Fatalf("Claims %q are not a JSON object", a.Claims)
		}
		if _, ok := m["active"]; ok {
			t.Fatalf("Claims %s hold active", a.Claims)
		}
	})
}

// BenchmarkCachedAnswer is the hot path of an opaque token: a fresh cached
// answer, through the verifier (routing, cache lookup, memoized Result, exp
// check); the upstream call is made once, before the timer.
func BenchmarkCachedAnswer(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, activeAnswer(t0.Add(time.Hour)))
	}))
	defer srv.Close()
	c, err := introspect.New(introspect.Options{Issuer: "https://as.example.com/", URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	keys := &cache.Keys{}
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: "https://as.example.com/", Keys: keys, Introspector: c}}, Now: func() time.Time { return t0 }})
	if err != nil {
		b.Fatal(err)
	}
	tok := "ory_at_" + strings.Repeat("x", 43) + "." + strings.Repeat("y", 43)
	if _, err := v.VerifyAt(context.Background(), tok, t0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyAt(context.Background(), tok, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIntrospectCached is the introspection cache's hit, below the
// verifier's token cache: the path a token with a cached answer takes while
// the upstream calls are at their limit (it takes no slot).
func BenchmarkIntrospectCached(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, activeAnswer(t0.Add(time.Hour)))
	}))
	defer srv.Close()
	c, err := introspect.New(introspect.Options{Issuer: "https://as.example.com/", URL: srv.URL, MaxConcurrent: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tok := "ory_at_" + strings.Repeat("x", 43) + "." + strings.Repeat("y", 43)
	if _, err := c.Introspect(context.Background(), tok, t0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Introspect(context.Background(), tok, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// hangingServer is a loopback RFC 7662 endpoint that answers tokens named
// "hang-…" only once released (or when their request ends), and every other
// token at once with an active answer.
type hangingServer struct {
	release chan struct{}
	arrived chan string // each hanging request's token, as it arrives
	calls   atomic.Int64
	once    sync.Once
}

// unblock releases the held requests and answers later ones at once.
func (h *hangingServer) unblock() { h.once.Do(func() { close(h.release) }) }

func newHangingServer(t *testing.T) (*hangingServer, string) {
	h := &hangingServer{release: make(chan struct{}), arrived: make(chan string, 100)}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		r.ParseForm()
		tok := r.PostForm.Get("token")
		if strings.HasPrefix(tok, "hang-") {
			h.arrived <- tok
			select {
			case <-h.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, activeAnswer(t0.Add(time.Hour)))
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(h.unblock) // before ts.Close
	return h, ts.URL
}

// TestIntrospectConcurrencyLimit: with MaxConcurrent calls hanging, a call
// for another new token waits MaxWait and is answered keys_unavailable
// (ErrOverloaded), never an allow; a token with a fresh cached answer is
// unaffected, one whose answer is only stale is refused too (a flood must
// not keep a revoked token alive); the slots free up when the calls end.
func TestIntrospectConcurrencyLimit(t *testing.T) {
	h, url := newHangingServer(t)
	const maxWait = 100 * time.Millisecond
	c := newClient(t, introspect.Options{URL: url, MaxConcurrent: 2, MaxWait: maxWait, MaxTTL: time.Minute, StaleFor: time.Minute})
	ctx := context.Background()
	for _, tok := range []string{"cached", "stale"} {
		if _, err := c.Introspect(ctx, tok, t0); err != nil {
			t.Fatal(err)
		}
	}
	later := t0.Add(30 * time.Second) // "cached" still fresh
	if _, err := c.Introspect(ctx, "cached", later); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	hung := make([]error, 2)
	for i := range hung {
		wg.Go(func() { _, hung[i] = c.Introspect(ctx, fmt.Sprintf("hang-%d", i), later) })
	}
	for range hung {
		<-h.arrived // both slots are taken by calls the server holds
	}
	if st := c.Stats(); st.InFlight != 2 {
		t.Fatalf("Stats().InFlight = %d, want 2", st.InFlight)
	}

	tests := []struct {
		name    string
		token   string
		at      time.Time
		wantErr error // nil: answered
	}{
		{"new-token-over-the-limit", "flood-1", later, introspect.ErrOverloaded},
		{"another-new-token", "flood-2", later, introspect.ErrOverloaded},
		{"fresh-cached-answer", "cached", later, nil},
		{"stale-answer-not-served", "stale", t0.Add(90 * time.Second), introspect.ErrOverloaded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			ans, err := c.Introspect(ctx, tt.token, tt.at)
			took := time.Since(start)
			if tt.wantErr == nil {
				if err != nil || ans == nil {
					t.Fatalf("Introspect() = %v, %v; want the cached answer", ans, err)
				}
				return
			}
			if ans != nil || !errors.Is(err, tt.wantErr) || !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Fatalf("Introspect() = %v, %v; want keys_unavailable wrapping %v", ans, err, tt.wantErr)
			}
			if took < maxWait {
				t.Errorf("refused after %v, want a wait of max_wait (%v) first", took, maxWait)
			}
		})
	}
	st := c.Stats()
	if st.Overloaded != 3 || st.Errors != 0 { // flood-1, flood-2, and the stale token's refused refresh
		t.Errorf("Stats() = %+v, want 3 overloaded calls and no upstream errors", st)
	}
	if n := h.calls.Load(); n != 4 {
		t.Errorf("upstream calls = %d, want 4 (2 cached answers, 2 hanging): refused calls never reach the server", n)
	}

	h.unblock()
	wg.Wait()
	for i, err := range hung {
		if err != nil {
			t.Errorf("hang-%d once released: %v, want its answer", i, err)
		}
	}
	if st := c.Stats(); st.InFlight != 0 {
		t.Errorf("Stats().InFlight = %d after the calls ended, want 0", st.InFlight)
	}
	if _, err := c.Introspect(ctx, "flood-1", later); err != nil {
		t.Errorf("a new token once the slots are free: %v, want its answer", err)
	}
}

// TestIntrospectFailureLogRateLimited: a down endpoint logs one
// "introspection failed" line per LogInterval, the next one counting the
// failures not logged, however many tokens fail.
func TestIntrospectFailureLogRateLimited(t *testing.T) {
	srv, url := newServer(t)
	srv.setFail(true)
	var mu sync.Mutex
	var lines []map[string]any
	logger := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil {
			t.Errorf("log line %q: %v", p, err)
		}
		mu.Lock()
		lines = append(lines, m)
		mu.Unlock()
		return len(p), nil
	}), nil))
	c := newClient(t, introspect.Options{URL: url, Logger: logger})
	ctx := context.Background()
	fail := func(n int, at time.Time) {
		for i := range n {
			if _, err := c.Introspect(ctx, fmt.Sprintf("tok-%d-%d", at.Unix(), i), at); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Fatalf("Introspect() with the endpoint down = %v, want keys_unavailable", err)
			}
		}
	}
	fail(50, t0)
	fail(20, t0.Add(introspect.LogInterval-time.Second))
	fail(1, t0.Add(introspect.LogInterval))
	fail(5, t0.Add(introspect.LogInterval+time.Second))
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 2 {
		t.Fatalf("%d log lines for 76 failed calls over %v, want 2: %v", len(lines), introspect.LogInterval+time.Second, lines)
	}
	for i, want := range []float64{0, 69} {
		if l := lines[i]; l["msg"] != "introspection failed" || l["suppressed"] != want || l["level"] != "WARN" {
			t.Errorf("line %d = %v, want introspection failed with suppressed %v", i, l, want)
		}
	}
	if st := c.Stats(); st.Errors != 76 {
		t.Errorf("Stats().Errors = %d, want every failed call counted (76)", st.Errors)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestIntrospectCallerDoneMakesNoCall: a caller whose context is already
// done (gone, or its request's wait budget spent: a batch past its
// deadline decides its remaining opaque tokens with it) gets a fresh
// cached answer, or keys_unavailable at once, and no upstream call is made
// for it. Each such call took a slot and reached the authorization server
// with nobody waiting for its answer: one per distinct token of a batch of
// random strings.
func TestIntrospectCallerDoneMakesNoCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bt := &blockingTransport{release: make(chan struct{})}
		close(bt.release)
		c, err := introspect.New(introspect.Options{Issuer: "https://as.example.com/", URL: "https://as.example.com/introspect", HTTPClient: &http.Client{Transport: bt}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Introspect(context.Background(), "cached", t0); err != nil {
			t.Fatal(err)
		}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		tests := []struct {
			token   string
			wantErr error
		}{
			{"cached", nil},
			{"random-1", verify.ErrKeysUnavailable},
			{"random-2", verify.ErrKeysUnavailable},
			{"random-3", verify.ErrKeysUnavailable},
		}
		for _, tt := range tests {
			if _, err := c.Introspect(done, tt.token, t0); !errors.Is(err, tt.wantErr) {
				t.Errorf("Introspect(%s) with a done context = %v, want %v", tt.token, err, tt.wantErr)
			}
		}
		synctest.Wait() // every call started has reached the transport
		if n := bt.calls.Load(); n != 1 {
			t.Errorf("upstream calls = %d, want 1 (the cached answer's)", n)
		}
	})
}

// TestIntrospectRandomTokensKeepActiveAnswers: a flood of random strings —
// from anyone: forward-auth with a made-up Bearer, /v1/verify, a batch of
// them, no credential needed — costs one call each (within MaxConcurrent)
// and stores their inactive answers. Stored into a full cache they evicted
// entries at random, the active answers of the users behind forward-auth
// among them; those users' next requests then needed calls of their own,
// which the flood holds at MaxConcurrent: 503 for tokens that had a fresh
// cached answer (DECISIONS: "a token with a fresh cached answer never
// waits"; a flood's price is new tokens only). An inactive answer never
// evicts an active one.
func TestIntrospectRandomTokensKeepActiveAnswers(t *testing.T) {
	tests := []struct {
		name string
		o    introspect.Options
	}{
		{"max-entries", introspect.Options{MaxEntries: 16}},
		{"max-bytes", introspect.Options{MaxBytes: 8 << 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, url := newServer(t)
			tt.o.URL = url
			c := newClient(t, tt.o)
			users := []string{"alice-token", "bob-token", "carol-token"}
			for _, u := range users {
				srv.set(u, activeAnswer(t0.Add(time.Hour)))
				if _, err := c.Introspect(context.Background(), u, t0); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 300 {
				if _, err := c.Introspect(context.Background(), fmt.Sprintf("random-%d", i), t0); !errors.Is(err, verify.ErrInactive) {
					t.Fatalf("random token: %v, want inactive", err)
				}
			}
			before := srv.calls.Load()
			for _, u := range users {
				if _, err := c.Introspect(context.Background(), u, t0.Add(time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			if n := srv.calls.Load() - before; n != 0 {
				t.Errorf("%d of %d users' active answers evicted by random tokens (upstream calls again)", n, len(users))
			}
			if st := c.Stats(); (tt.o.MaxEntries > 0 && st.Entries > tt.o.MaxEntries) || (tt.o.MaxBytes > 0 && st.Bytes > tt.o.MaxBytes) {
				t.Errorf("Stats() = %+v, over the bound", st)
			}
		})
	}
}

// writeSecret writes a client secret file of content in a test's own
// directory and returns its path.
func writeSecret(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
