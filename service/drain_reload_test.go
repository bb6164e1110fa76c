package service

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReloadAfterDrainSwapsNothing: a reload after Drain returns nil and
// swaps nothing in: the drained generation keeps serving the listeners'
// last requests, and no fresh generation, not draining, takes over.
func TestReloadAfterDrainSwapsNothing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keys.json"), testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := func(aud string) string {
		return "issuers:\n  - issuer: https://a.example/\n    jwks_file: keys.json\n    audiences: [" + aud + "]\n"
	}
	s, err := New(parsePlan(t, dir, doc("api")), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("Ready() = %v", err)
	}
	drained := s.Server()
	s.Drain()
	if err := s.Reload(ctx, parsePlan(t, dir, doc("other"))); err != nil {
		t.Fatalf("Reload() after Drain = %v, want nil", err)
	}
	if s.Server() != drained {
		t.Errorf("Reload() after Drain swapped in a new generation")
	}
}
