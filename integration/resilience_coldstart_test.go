package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestResilienceColdStart restarts the real binary while its IdP is down
// (connection refused, discovery and JWKS alike):
//
//   - with state_dir, the restarted service is ready at once and verifies
//     from the persisted set, and only for what is left of stale_for counted
//     from the last successful fetch before the restart (the staleness bound
//     survives restarts); then 503 keys_unavailable;
//   - without a persisted set (an empty state_dir), it starts not ready and
//     answers 503 keys_unavailable;
//   - when the IdP comes back, both become ready without a restart.
func TestResilienceColdStart(t *testing.T) {
	t.Parallel()
	key := rhKey{testkeys.EC256A, "cold-a", "ES256"}
	idp := newFakeIdP(t, "max-age=1", key.jwk())
	r := rhRefresh{minInterval: time.Second, maxInterval: 2 * time.Second, defaultTTL: time.Second,
		unknownKid: time.Second, staleFor: 6 * time.Second, fetchTimeout: time.Second}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	empty := filepath.Join(dir, "empty")
	for _, d := range []string{state, empty} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(stateDir string) string {
		return rhConfig(idp.Issuer, "discovery: true", r, "state_dir: "+stateDir+"\n")
	}
	c := rhClient(t)

	// First life: fetch, persist, stop.
	first := startJWKSVerify(t, cfg(state))
	if v, err := rhVerify(c, "http://"+first.HTTP, key.mint(idp.Issuer)); err != nil || !v.Valid {
		t.Fatalf("first instance: Verify() = %v, %v; want valid", v, err)
	}
	first.stop()
	if first.err != nil {
		t.Errorf("first instance exited with %v, want 0", first.err)
	}
	files, _ := filepath.Glob(filepath.Join(state, "*"))
	if len(files) != 1 {
		t.Fatalf("state_dir holds %d files after a good fetch, want 1", len(files))
	}

	// The IdP goes away; the service restarts.
	idp.Down()
	lastGood := idp.LastGood()
	staleEnd := lastGood.Add(r.staleFor)
	restarted := time.Now()
	second := startJWKSVerify(t, cfg(state)) // waits for /readyz 200
	cold := rhStart(t, cfg(empty))
	readyAfter := time.Since(restarted)
	base, coldBase := "http://"+second.HTTP, "http://"+cold.HTTP

	pr := rhStartProber(t, c, base, 50*time.Millisecond)
	cached := key.mint(idp.Issuer)
	pr.Family("cached", func() string { return cached })
	pr.Family("fresh", func() string { return key.mint(idp.Issuer) })
	coldPr := rhStartProber(t, c, coldBase, 100*time.Millisecond)
	coldPr.Family("fresh", func() string { return key.mint(idp.Issuer) })

	// Past stale_for, then the IdP returns.
	if _, ok := rhWaitFor(r.staleFor+5*time.Second, func() bool { return time.Now().After(staleEnd.Add(time.Second)) }); !ok {
		t.Fatal("stale_for never ended")
	}
	m := rhMetrics(t, c, base)
	healed := time.Now()
	idp.Up(t)
	bothReady := func() bool {
		a, err1 := rhReadyz(c, base)
		b, err2 := rhReadyz(c, coldBase)
		return err1 == nil && err2 == nil && a == 200 && b == 200
	}
	ready, ok := rhWaitFor(5*time.Second, bothReady)
	if !ok {
		t.Fatal("not ready 5s after the IdP came back")
	}
	time.Sleep(300 * time.Millisecond)
	pr.Stop()
	coldPr.Stop()

	var lastValid time.Time
	for _, o := range pr.Outcomes() {
		at := o.Sent.Sub(lastGood).Round(time.Millisecond)
		if o.Err != nil {
			t.Errorf("restarted: %s at %v: %v", o.Family, at, o.Err)
			continue
		}
		v := o.Verdict
		if o.Family == "readyz" {
			switch {
			case o.Got.Before(staleEnd.Add(-outageMargin)) && v.Status != 200:
				t.Errorf("restarted: readyz at %v (persisted set within stale_for) = %d, want 200", at, v.Status)
			case o.Sent.After(staleEnd.Add(outageMargin)) && o.Got.Before(healed) && v.Status != 503:
				t.Errorf("restarted: readyz at %v (stale_for over) = %d, want 503", at, v.Status)
			}
			continue
		}
		unavailable := v.Status == 503 && v.Error == "keys_unavailable"
		switch {
		case !v.Valid && !unavailable:
			t.Errorf("restarted: %s at %v = %v, want valid or 503 keys_unavailable", o.Family, at, v)
		case o.Got.Before(staleEnd.Add(-outageMargin)) && !v.Valid:
			t.Errorf("restarted: %s at %v (persisted set within stale_for) = %v, want valid", o.Family, at, v)
		case o.Sent.After(staleEnd.Add(outageMargin)) && o.Got.Before(healed) && !unavailable:
			t.Errorf("restarted: %s at %v (stale_for over) = %v, want 503 keys_unavailable", o.Family, at, v)
		case o.Sent.After(ready.Add(outageMargin)) && !v.Valid:
			t.Errorf("restarted: %s at %v (IdP back) = %v, want valid", o.Family, at, v)
		}
		if v.Valid && o.Sent.Before(healed) {
			lastValid = o.Got
		}
	}
	coldValid := 0
	for _, o := range coldPr.Outcomes() {
		at := o.Sent.Sub(lastGood).Round(time.Millisecond)
		if o.Err != nil {
			t.Errorf("cold: %s at %v: %v", o.Family, at, o.Err)
			continue
		}
		v := o.Verdict
		before := o.Got.Before(healed)
		switch {
		case o.Family == "readyz" && before && v.Status != 503:
			t.Errorf("cold: readyz at %v (no persisted set, IdP down) = %d, want 503", at, v.Status)
		case o.Family != "readyz" && before && (v.Status != 503 || v.Error != "keys_unavailable"):
			t.Errorf("cold: %s at %v (no persisted set, IdP down) = %v, want 503 keys_unavailable", o.Family, at, v)
		case o.Family != "readyz" && o.Sent.After(ready.Add(outageMargin)) && !v.Valid:
			t.Errorf("cold: %s at %v (IdP back) = %v, want valid", o.Family, at, v)
		}
		if o.Family != "readyz" && v.Valid {
			coldValid++
		}
	}
	if coldValid == 0 {
		t.Error("cold: no valid verdict after the IdP came back")
	}
	if got := rhIssuerMetric(m, "issuer_ready", idp.Issuer); got != 0 {
		t.Errorf("restarted: issuer_ready past stale_for = %v, want 0", got)
	}
	if !strings.Contains(second.Output(), `"msg":"jwks state loaded"`) {
		t.Error(`restarted: no "jwks state loaded" log line`)
	}
	t.Logf("cold start: restart %.2fs after the last good fetch, ready with the persisted set in %v; last valid verdict %+.2fs, stale_for %v; IdP back %+.2fs, both ready %+.2fs",
		restarted.Sub(lastGood).Seconds(), readyAfter.Round(time.Millisecond), lastValid.Sub(lastGood).Seconds(), r.staleFor,
		healed.Sub(lastGood).Seconds(), ready.Sub(lastGood).Seconds())
}
