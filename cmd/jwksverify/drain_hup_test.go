package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
)

// SIGHUP means "reload" to serve --config for the whole life of the
// process: one that arrives while it drains after SIGTERM (a config
// reloader signalling during a rollout) neither reloads nor kills it — the
// drain goes on and the process exits 0, as without it. (Only SIGINT and
// SIGTERM end a drain at once.)
func TestServeSIGHUPDuringDrain(t *testing.T) {
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(testJWKS()) }))
	t.Cleanup(idp.Close)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "config.yaml", []byte(fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_delay: 2s
shutdown_timeout: 5s
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
`, idp.URL)))
	p := startBin(t, nil, nil, "serve", "--config", cfg)
	p.waitLog(t, "listening")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "shutting down")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 20e9); code != exitOK {
		t.Errorf("exit status %d (state %v), want %d: a SIGHUP during the drain ended the process; stderr:\n%s",
			code, p.cmd.ProcessState, exitOK, p.stderr.String())
	}
}
