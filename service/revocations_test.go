package service

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server"
)

// TestRevocationsWired: a plan with revocation opens the store once;
// Service.Revocations is the Adder every source stores through; an entry
// added there is enforced by the current generation and by the next one
// after a reload (the store outlives reloads); Close closes it.
func TestRevocationsWired(t *testing.T) {
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := "state_dir: " + dir + "\nrevocation: {retention: 1h}\nissuers:\n  - issuer: https://a.example/\n    jwks_file: " + jwksFile + "\n"
	s, err := New(parsePlan(t, dir, doc), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	var adder revoke.Adder = s.Revocations()
	if adder == nil {
		t.Fatal("Revocations() = nil with revocation configured")
	}
	tok := mintRS256(claimsAt("https://a.example/", "", time.Now()))
	verifyStatus := func() string {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(tokenBody(tok)))
		r.Header.Set("Content-Type", "application/json")
		s.Handler().ServeHTTP(w, r)
		return w.Body.String()
	}
	if body := verifyStatus(); !strings.Contains(body, `"valid":true`) {
		t.Fatalf("before revocation: %s", body)
	}
	if _, err := adder.Add(context.Background(), revoke.Entry{Issuer: "https://a.example/", Kind: revoke.KindSub, Value: "alice",
		IssuedBefore: time.Now().Add(time.Second), Source: revoke.SourceBackchannelLogout}); err != nil {
		t.Fatal(err)
	}
	if body := verifyStatus(); !strings.Contains(body, `"error":"revoked"`) {
		t.Errorf("after revocation: %s, want revoked", body)
	}
	mustReload(t, s, context.Background(), parsePlan(t, dir, doc+"    leeway: 10s\n"))
	if body := verifyStatus(); !strings.Contains(body, `"error":"revoked"`) {
		t.Errorf("after a reload: %s, want revoked (the store outlives reloads)", body)
	}
	var _ server.Revocations = s.Revocations()
}
