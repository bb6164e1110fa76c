package server

import (
	"net/http"
	"sync"
	"testing"
)

// TestSetDraining checks that draining turns readiness off while every
// other endpoint keeps answering, and closes Drained (server/extauthz tests
// gRPC health).
func TestSetDraining(t *testing.T) {
	e := newEnv(t, envConfig{noDown: true})
	if w := get(e.handler, "/readyz"); w.Code != http.StatusOK {
		t.Fatalf("before draining: /readyz = %d, want 200", w.Code)
	}
	if e.srv.Draining() {
		t.Fatalf("Draining() = true before SetDraining")
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(e.srv.SetDraining) // concurrent and repeated calls are fine
	}
	wg.Wait()

	if !e.srv.Draining() {
		t.Errorf("Draining() = false after SetDraining")
	}
	w := get(e.handler, "/readyz")
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("draining: /readyz = %d, want 503", w.Code)
	}
	checkGolden(t, "readyz-draining", w)
	if ok, _ := e.srv.Ready(); !ok {
		t.Errorf("Ready() = false while draining with keys, want true (Ready is about keys)")
	}

	select {
	case <-e.srv.Drained():
	default:
		t.Errorf("Drained() is open after SetDraining")
	}

	// The server still does its work while load balancers move away.
	if w := get(e.handler, "/healthz"); w.Code != http.StatusOK {
		t.Errorf("draining: /healthz = %d, want 200", w.Code)
	}
	if w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tokens()["valid"])); w.Code != http.StatusOK {
		t.Errorf("draining: /v1/authz with a valid token = %d, want 200", w.Code)
	}
}
