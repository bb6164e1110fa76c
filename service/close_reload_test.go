package service

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestCloseDuringReloadLeavesNothing: Close while a reload waits for the
// first keys of an issuer it adds. Close returns having stopped every
// goroutine the service owns; the reload must not swap in a generation
// afterwards whose fetcher nobody closes (and must not race Close's wait
// for the retired generations).
func TestCloseDuringReloadLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(testJWKS()) }))
	release := make(chan struct{})
	requested := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case requested <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write(testJWKS())
	}))
	defer idp.Close()
	defer slow.Close()
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	defer let()
	doc := fmt.Sprintf("issuers:\n  - {issuer: https://a.example/, jwks_url: %s}\n", idp.URL)
	s, err := New(parsePlan(t, "", doc), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	next := parsePlan(t, "", doc+fmt.Sprintf("  - {issuer: https://b.example/, jwks_url: %s}\n", slow.URL))
	reloaded := make(chan error, 1)
	go func() { reloaded <- s.Reload(context.Background(), next) }()
	// The reload is in flight (past its check of Close) once b's fetcher
	// asks for its keys: a sleep let a slow machine run Close first, and
	// the reload then returned at once, testing nothing.
	select {
	case <-requested:
	case <-time.After(15 * time.Second):
		t.Fatal("the reload never fetched b's keys")
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(newIssuerWait / 2):
		// Below the reload's own bound on its wait: Close ends the wait
		// (a Close that only outlasted it passed).
		t.Fatal("Close() did not end the reload's wait for keys")
	}
	let() // b's keys come: a reload still waiting would swap now
	select {
	case <-reloaded:
	case <-time.After(15 * time.Second):
		t.Fatal("Reload() did not return")
	}
	time.Sleep(100 * time.Millisecond)
}
