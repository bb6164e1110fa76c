package service

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestReloadWaitsForAddedIssuerKeys: a reload that adds an issuer swaps
// the new generation in once its keys have come (within newIssuerWait),
// so that the first request after Reload returns finds them: the added
// issuer's JWKS answers late, and the service is ready when Reload returns.
func TestReloadWaitsForAddedIssuerKeys(t *testing.T) {
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(testJWKS()) }))
	defer idp.Close()
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(newIssuerWait / 4): // late, well within the reload's wait
		case <-r.Context().Done():
			return
		}
		w.Write(testJWKS())
	}))
	defer late.Close()
	doc := fmt.Sprintf("issuers:\n  - {issuer: https://a.example/, jwks_url: %s}\n", idp.URL)
	s, err := New(parsePlan(t, "", doc), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	next := parsePlan(t, "", doc+fmt.Sprintf("  - {issuer: https://b.example/, jwks_url: %s}\n", late.URL))
	if err := s.Reload(context.Background(), next); err != nil {
		t.Fatalf("Reload() = %v", err)
	}
	if ok, notReady := s.Server().Ready(); !ok {
		t.Errorf("not ready when Reload returned (%v): it swapped before the added issuer's keys came", notReady)
	}
}
