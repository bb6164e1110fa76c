package signals_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// transmitter is an RFC 8936 polling endpoint: it hands out the SETs it
// holds, forgets those acknowledged, and records every request.
type transmitter struct {
	mu       sync.Mutex
	pending  map[string]string // jti -> SET
	requests []pollRequest
	fail     int // answer 503 to this many requests first
	bearer   string
	polled   chan struct{}
}

type pollRequest struct {
	Ack               []string                     `json:"ack"`
	SetErrs           map[string]map[string]string `json:"setErrs"`
	MaxEvents         int                          `json:"maxEvents"`
	ReturnImmediately bool                         `json:"returnImmediately"`
	Authorization     string                       `json:"-"`
}

func newTransmitter(t *testing.T, sets map[string]string) (*transmitter, *httptest.Server) {
	tr := &transmitter{pending: sets, polled: make(chan struct{}, 100), bearer: "poll-bearer-0123456789"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req pollRequest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad poll", http.StatusBadRequest)
			return
		}
		req.Authorization = r.Header.Get("Authorization")
		tr.mu.Lock()
		tr.requests = append(tr.requests, req)
		if tr.fail > 0 {
			tr.fail--
			tr.mu.Unlock()
			http.Error(w, "later", http.StatusServiceUnavailable)
			tr.polled <- struct{}{}
			return
		}
		for _, jti := range req.Ack {
			delete(tr.pending, jti)
		}
		for jti := range req.SetErrs {
			delete(tr.pending, jti)
		}
		out := map[string]string{}
		for jti, s := range tr.pending {
			if len(out) < req.MaxEvents {
				out[jti] = s
			}
		}
		more := len(out) < len(tr.pending)
		tr.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"sets": out, "moreAvailable": more})
		tr.polled <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return tr, srv
}

func (tr *transmitter) snapshot() ([]pollRequest, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.requests), len(tr.pending)
}

// waitPolls waits for n more polls.
func (tr *transmitter) waitPolls(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-tr.polled:
		case <-time.After(10 * time.Second):
			t.Fatal("no poll within 10s")
		}
	}
}

func TestPoller(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	good := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}},
		map[string]any{"sub_id": issSubA, "jti": "good"}))
	bad := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}},
		map[string]any{"sub_id": issSubA, "jti": "bad", "aud": "elsewhere"}))
	later := mintSET(setClaims(map[string]any{signals.EventCredentialChange: map[string]any{}},
		map[string]any{"sub_id": opaqueBob, "jti": "later"}))
	tr, srv := newTransmitter(t, map[string]string{"good": good, "bad": bad, "later": later})
	tr.fail = 1

	// "later" cannot be stored the first time: it must be polled again and
	// acknowledged only once stored.
	var mu sync.Mutex
	failLater := true
	receive := func(ctx context.Context, set string) error {
		mu.Lock()
		f := failLater && set == later
		failLater = failLater && !f
		mu.Unlock()
		if f {
			e.store.setFail(true)
			defer e.store.setFail(false)
		}
		_, _, err := e.r.Receive(ctx, issuerA, set, revoke.SourceSSFPoll, epoch)
		return err
	}
	logs := &testlog.Buffer{}
	p, err := signals.NewPoller(signals.PollOptions{
		Issuer: issuerA, URL: srv.URL, InsecureAllowHTTP: true, BearerToken: tr.bearer,
		Interval: time.Second, MaxEvents: 2, Receive: receive, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// 503, then (after a 1s backoff) polls until everything is acknowledged.
	deadline := time.Now().Add(15 * time.Second)
	for {
		tr.waitPolls(t, 1)
		if _, n := tr.snapshot(); n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the transmitter still holds SETs")
		}
	}
	p.Close()
	reqs, _ := tr.snapshot()
	for i, r := range reqs {
		if r.MaxEvents != 2 || !r.ReturnImmediately || r.Authorization != "Bearer "+tr.bearer {
			t.Errorf("request %d = %+v, want maxEvents 2, returnImmediately, the bearer", i, r)
		}
	}
	var acked []string
	var errs map[string]map[string]string
	for _, r := range reqs {
		acked = append(acked, r.Ack...)
		for k, v := range r.SetErrs {
			if errs == nil {
				errs = map[string]map[string]string{}
			}
			errs[k] = v
		}
	}
	slices.Sort(acked)
	if !slices.Equal(acked, []string{"good", "later"}) {
		t.Errorf("acknowledged %v, want [good later] (each once)", acked)
	}
	if errs["bad"]["err"] != "invalid_audience" || strings.Contains(errs["bad"]["description"], "eyJ") {
		t.Errorf("setErrs = %v, want bad: invalid_audience", errs)
	}
	stored := e.store.stored()
	if len(stored) != 2 {
		t.Fatalf("stored %v, want the entries of good and later", stored)
	}
	for _, s := range stored {
		if s.Source != revoke.SourceSSFPoll {
			t.Errorf("entry source %q, want ssf_poll", s.Source)
		}
	}
	st := p.Stats()
	if st.Failures != 1 || st.Acked != 2 || st.Refused != 1 || st.Deferred != 1 {
		t.Errorf("Stats() = %+v, want 1 failure, 2 acked, 1 refused, 1 deferred", st)
	}
}

func TestPollerReplayedIsAcknowledged(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	set := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}}, map[string]any{"sub_id": issSubA}))
	if _, _, err := e.r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPush, epoch); err != nil {
		t.Fatal(err)
	}
	tr, srv := newTransmitter(t, map[string]string{"set-1": set})
	p := pollInto(t, e, srv.URL)
	tr.waitPolls(t, 2)
	p.Close()
	reqs, pending := tr.snapshot()
	if pending != 0 || !slices.Contains(reqs[1].Ack, "set-1") {
		t.Errorf("requests %+v, pending %d: a SET already stored (pushed, or acknowledged before a lost answer) must be acknowledged", reqs, pending)
	}
}

// TestPollerBoundsTheResponse: a response over MaxResponseBytes (by one
// byte too) or of a status other than 200 is a failed poll: nothing in it
// is taken.
func TestPollerBoundsTheResponse(t *testing.T) {
	const limit = 1024
	// body is a poll response of n bytes (at least 16) holding one SET.
	body := func(n int) string {
		const head, tail = `{"sets":{"a":"`, `"}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, tt := range []struct {
		name   string
		status int
		body   string
	}{
		{"far-over", http.StatusOK, body(4096 + 16)},
		{"one-byte-over", http.StatusOK, body(limit + 1)},  // whole JSON in the limit+1 bytes read
		{"status-202", http.StatusAccepted, `{"sets":{}}`}, // RFC 8936 §2.5: a poll answers 200
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			called := make(chan struct{}, 1)
			p, err := signals.NewPoller(signals.PollOptions{URL: srv.URL, InsecureAllowHTTP: true, MaxResponseBytes: limit,
				Logger:  slog.New(slog.DiscardHandler),
				Receive: func(context.Context, string) error { called <- struct{}{}; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for p.Stats().Failures == 0 && p.Stats().Polls == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			p.Close()
			if st := p.Stats(); st.Failures == 0 || st.Polls != 0 {
				t.Fatalf("a response of status %d and %d bytes (limit %d): stats %+v, want a failure and no poll taken", tt.status, len(tt.body), limit, st)
			}
			select {
			case <-called:
				t.Error("a SET of an oversized response was applied")
			default:
			}
		})
	}
}

func TestPollOptions(t *testing.T) {
	recv := func(context.Context, string) error { return nil }
	tests := []struct {
		name  string
		o     signals.PollOptions
		field string
	}{
		{"no-url", signals.PollOptions{Receive: recv}, "URL"},
		{"http-without-insecure", signals.PollOptions{URL: "http://tx.example/poll", Receive: recv}, "URL"},
		{"relative", signals.PollOptions{URL: "/poll", Receive: recv}, "URL"},
		{"user-info", signals.PollOptions{URL: "https://u:p@tx.example/poll", Receive: recv}, "URL"},
		{"short-interval", signals.PollOptions{URL: "https://tx.example/poll", Interval: time.Millisecond, Receive: recv}, "Interval"},
		{"max-events", signals.PollOptions{URL: "https://tx.example/poll", MaxEvents: signals.MaxPollMaxEvents + 1, Receive: recv}, "MaxEvents"},
		{"no-receive", signals.PollOptions{URL: "https://tx.example/poll"}, "Receive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := signals.NewPoller(tt.o)
			var oe *signals.OptionError
			if !errors.As(err, &oe) || oe.Field != tt.field {
				if p != nil {
					p.Close()
				}
				t.Fatalf("NewPoller() = %v, want an OptionError of %s", err, tt.field)
			}
		})
	}
}

func TestParsePollResponse(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		n       int
		more    bool
		wantErr bool
	}{
		{"empty", `{"sets":{}}`, 0, false, false},
		{"two-more", `{"sets":{"a":"x.y.z","b":"x.y.z"},"moreAvailable":true}`, 2, true, false},
		{"no-sets", `{"moreAvailable":false}`, 0, false, true},
		{"sets-null", `{"sets":null}`, 0, false, true},
		{"set-not-string", `{"sets":{"a":1}}`, 0, false, true},
		{"more-not-bool", `{"sets":{},"moreAvailable":"yes"}`, 0, false, true},
		{"duplicate-jti", `{"sets":{"a":"1.2.3","a":"4.5.6"}}`, 0, false, true},
		{"trailing", `{"sets":{}} {}`, 0, false, true},
		{"array", `[]`, 0, false, true},
		// encoding/json reads each byte that is not UTF-8 as U+FFFD: the
		// SET listed under "\x97" would be acknowledged as "\uFFFD", a
		// jti the transmitter never sent.
		{"not-utf8", `{"sets":{"` + "\x97" + `":"x.y.z"}}`, 0, false, true},
		{"not-utf8-value", `{"sets":{"a":"x.y.z` + "\xff" + `"}}`, 0, false, true},
		{"lone-surrogate", `{"sets":{"a\ud800":"x.y.z"}}`, 0, false, true},
		{"nested-32-deep", `{"sets":{},"x":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`, 0, false, false},
		{"nested-33-deep", `{"sets":{},"x":` + strings.Repeat("[", 33) + strings.Repeat("]", 33) + `}`, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sets, more, err := signals.ParsePollResponse([]byte(tt.body))
			if (err != nil) != tt.wantErr || len(sets) != tt.n || more != tt.more {
				t.Errorf("ParsePollResponse() = %d sets, %v, %v; want %d, %v, error %v", len(sets), more, err, tt.n, tt.more, tt.wantErr)
			}
		})
	}
}

// pollInto polls url every second into e's receiver, as issuerA's stream.
func pollInto(t *testing.T, e *env, url string) *signals.Poller {
	t.Helper()
	p, err := signals.NewPoller(signals.PollOptions{URL: url, InsecureAllowHTTP: true, Interval: time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Receive: func(ctx context.Context, s string) error {
			_, _, err := e.r.Receive(ctx, issuerA, s, revoke.SourceSSFPoll, epoch)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
