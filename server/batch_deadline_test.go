package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// hangingIntrospector is an authorization server that never answers in
// time: each call waits until its caller's context is done.
type hangingIntrospector struct{}

func (hangingIntrospector) Introspect(ctx context.Context, _ string, _ time.Time) (*verify.Introspection, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("%w: introspection: %w", verify.ErrKeysUnavailable, ctx.Err())
}

// slowBody is a request body that arrives only once ctx is done: a client
// whose upload takes longer than the request's wait budget.
type slowBody struct {
	ctx context.Context
	r   io.Reader
}

func (b *slowBody) Read(p []byte) (int, error) {
	<-b.ctx.Done()
	return b.r.Read(p)
}

// TestBatchPastItsWaitAnswersEveryItem: the service gives a request with a
// body a deadline, the wait budget W (service.Handler, config.Timeouts.Wait:
// "past it, the remaining unknown kids are answered unknown_kid and the
// remaining opaque tokens keys_unavailable at once"). A batch took that
// deadline for a caller gone: it stopped and wrote nothing, so the caller
// got 200 with an empty body — no results, no status that says why — when
// its first opaque token's authorization server was slow, or when its own
// upload took longer than W (then even a batch of valid JWTs under cached
// keys). Every item must be answered, the remaining ones without a wait.
func TestBatchPastItsWaitAnswersEveryItem(t *testing.T) {
	e := newEnv(t, envConfig{})
	v, err := verify.New(verify.Options{Now: e.clock.Now, Issuers: []verify.Issuer{
		{Issuer: issuerA, Keys: e.keysA, Audiences: []string{audience}},
		{Issuer: opaqueIssuer, Keys: &cache.Keys{}, Introspector: hangingIntrospector{}, RequiredClaims: []string{}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: v, Logger: slog.New(slog.DiscardHandler), Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	valid := tokens()["valid"]
	tests := []struct {
		name     string
		tokens   []string
		slowBody bool
		want     []string // each item's class, "" for valid
	}{
		{name: "slow-authorization-server", tokens: []string{"opaque-1", valid, "opaque-2", "opaque-3"},
			want: []string{"keys_unavailable", "", "keys_unavailable", "keys_unavailable"}},
		{name: "slow-upload", tokens: []string{valid, valid}, slowBody: true, want: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"tokens": tt.tokens})
			// A deadline that passes at once (before or during the first
			// item: the answer is the same): what passes is the budget, not
			// the caller, who still waits for the answer.
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			r := postJSON("/v1/verify/batch", "").WithContext(ctx)
			if tt.slowBody {
				r.Body = io.NopCloser(&slowBody{ctx: ctx, r: strings.NewReader(string(body))})
			} else {
				r.Body = io.NopCloser(strings.NewReader(string(body)))
			}
			w := do(srv.Handler(), r)
			var got struct {
				Results []struct {
					Valid bool   `json:"valid"`
					Error string `json:"error"`
				} `json:"results"`
			}
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || len(got.Results) != len(tt.want) {
				t.Fatalf("batch past its deadline = %d %q, want 200 with %d results", w.Code, w.Body, len(tt.want))
			}
			for i, res := range got.Results {
				if res.Error != tt.want[i] || res.Valid != (tt.want[i] == "") {
					t.Errorf("results[%d] = valid %v error %q, want error %q", i, res.Valid, res.Error, tt.want[i])
				}
			}
		})
	}
}

// TestBatchCallerGoneStops: a caller that went away (its request's context
// cancelled, not past a deadline) gets none of its items decided (API.md:
// "If the caller goes away during a batch, the server stops verifying the
// rest").
func TestBatchCallerGoneStops(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	valid := jsonString(tokens()["valid"])
	do(e.handler, postJSON("/v1/verify/batch", `{"tokens":[`+valid+`,`+valid+`]}`).WithContext(ctx))
	if n := e.metrics.total(); n != 0 {
		t.Errorf("%d items decided for a caller gone, want 0", n)
	}
}
