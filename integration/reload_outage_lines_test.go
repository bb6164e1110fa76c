package integration

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestReloadDuringOutageTransitionLines: an on-call engineer reloads the
// configuration (a refresh setting changed) while the IdP is down and the
// issuer serves its last good keys. The IdP is still down, so the log must
// not say "jwks issuer ready" again (OPERATIONS: once, when the issuer
// first has usable keys), nor open a second "stale" for the same outage;
// when the IdP is back, exactly one "jwks issuer recovered" (the line
// log-based alerting resolves on): the replaced fetcher stopped at the
// reload.
func TestReloadDuringOutageTransitionLines(t *testing.T) {
	key := rhKey{testkeys.EC256A, "a-1", "ES256"}
	idp := newFakeIdP(t, "max-age=1", key.jwk())
	r := rhRefresh{minInterval: time.Second, maxInterval: time.Hour, defaultTTL: time.Second,
		unknownKid: time.Second, staleFor: time.Hour, fetchTimeout: time.Second}
	svc := rhStartLogged(t, rhConfig(idp.Issuer, "jwks_url: "+idp.JWKSURL, r, ""))
	c := rhClient(t)
	base := "http://" + svc.HTTP
	const (
		ready     = `"msg":"jwks issuer ready"`
		stale     = `"msg":"jwks issuer stale: serving the last good keys"`
		recovered = `"msg":"jwks issuer recovered"`
		reloaded  = `"msg":"configuration reloaded"`
	)
	idp.Down()
	if _, ok := rhWaitFor(10*time.Second, func() bool { return svc.Lines(stale) == 1 }); !ok {
		t.Fatalf("no stale line after the IdP went down")
	}
	r.minInterval = 2 * time.Second // a new fetcher, same source: the keys are kept
	cfg := filepath.Join(filepath.Dir(svc.LogPath), "config.yaml")
	if err := os.WriteFile(cfg, []byte(rhConfig(idp.Issuer, "jwks_url: "+idp.JWKSURL, r, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := svc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if _, ok := rhWaitFor(10*time.Second, func() bool { return svc.Lines(reloaded) >= 1 }); !ok {
		t.Fatalf("no reload")
	}
	// Let the new fetcher's first attempts fail against the IdP still down.
	time.Sleep(3 * time.Second)
	if v, err := rhVerify(c, base, key.mint(idp.Issuer)); err != nil || !v.Valid {
		t.Fatalf("within stale_for: %v %v, want valid", v, err)
	}
	idp.Up(t)
	if _, ok := rhWaitFor(10*time.Second, func() bool { return svc.Lines(recovered) >= 1 }); !ok {
		t.Errorf("no recovered line after the IdP came back")
	}
	// The replaced fetcher stopped at the swap (jwks.Fetcher.Retire), long
	// before the IdP came back, though its write-timeout grace (for the
	// requests still on the old generation) has not ended: it logs no
	// recovery of its own. A second recovered line would come within the
	// new fetcher's next refresh; wait that out.
	if _, ok := rhWaitFor(3*time.Second, func() bool { return svc.Lines(recovered) > 1 }); ok {
		t.Errorf("a second recovered line: the replaced fetcher still ran")
	}
	if n, s, rc := svc.Lines(ready), svc.Lines(stale), svc.Lines(recovered); n != 1 || s != 1 || rc != 1 {
		t.Errorf("one outage, one reload: %d ready, %d stale, %d recovered lines; want 1 each", n, s, rc)
	}
}
