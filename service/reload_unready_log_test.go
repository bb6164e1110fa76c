package service

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReloadNamesEachAddedIssuerWithoutKeys: a reload that adds issuers
// whose keys do not come logs "has no keys yet" once for each of them, with
// the configured issuer in `issuer` and the key source in `source`. The line
// named only the first such issuer, and put its source in `issuer`: the
// on-call engineer searching the log for the issuer /readyz lists found
// nothing.
func TestReloadNamesEachAddedIssuerWithoutKeys(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "there.json"), testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	const head = "issuers:\n  - issuer: https://a.example/\n    jwks_file: there.json\n    audiences: [api]\n"
	logs := &lockedBuf{}
	s, err := New(parsePlan(t, dir, head), Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	next := head +
		"  - issuer: https://b.example/\n    jwks_file: missing-b.json\n    audiences: [api]\n" +
		"  - issuer: https://c.example/\n    jwks_file: missing-c.json\n    audiences: [api]\n"
	// The files never appear: the wait ends with ctx (the reload's own
	// bound is 10s), and the issuers are swapped in not ready.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	mustReload(t, s, ctx, parsePlan(t, dir, next))

	type line struct {
		Msg, Issuer, Source string
	}
	var got []line
	for _, raw := range strings.Split(strings.TrimSpace(logs.take()), "\n") {
		var l line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		if strings.HasPrefix(l.Msg, "reload: an added or changed issuer has no keys yet") {
			got = append(got, l)
		}
	}
	var issuers []string
	for _, l := range got {
		issuers = append(issuers, l.Issuer)
		if !strings.HasPrefix(l.Source, "file:") || !strings.Contains(l.Source, "missing-") {
			t.Errorf("issuer %s: source = %q, want its file", l.Issuer, l.Source)
		}
	}
	slices.Sort(issuers)
	if want := []string{"https://b.example/", "https://c.example/"}; !slices.Equal(issuers, want) {
		t.Errorf("issuers named by the no-keys lines = %q, want %q", issuers, want)
	}
	if ok, notReady := s.Server().Ready(); ok || len(notReady) != 2 {
		t.Errorf("Ready() = %v, %q; want not ready for the two added issuers", ok, notReady)
	}
}
