package integration

import (
	"math"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestResilienceRotation drives the real binary through a key rotation at
// the IdP (OIDC discovery, Cache-Control max-age=2, ETag revalidation),
// with random-kid noise throughout that spends the unknown-kid budget:
//
//   - the IdP adds key B and signs with it: B tokens are accepted within
//     unknown_kid_interval plus one fetch of B's publication (SPEC: not
//     necessarily the first one, while the noise spends the budget);
//   - tokens under the old key A keep verifying while A is published, the
//     same token again and again (verified-token cache hits) and fresh ones;
//   - the IdP drops A: A tokens, cached verdicts included, are rejected
//     (unknown_kid) within one refresh interval;
//
// and no request fails or is lost on the way.
func TestResilienceRotation(t *testing.T) {
	t.Parallel()
	const maxAge = 2 * time.Second
	// The longest refresh interval max-age=2 can give (jitter +10%), plus
	// the fetch and the scheduling on a loaded machine.
	refreshBound := time.Duration(float64(maxAge)*1.1) + 800*time.Millisecond
	keyA := rhKey{testkeys.RSA2048A, "rot-a", "RS256"}
	keyB := rhKey{testkeys.EC256A, "rot-b", "ES256"}

	idp := newFakeIdP(t, "public, max-age=2", keyA.jwk())
	idp.SetETag(true)
	r := rhRefresh{minInterval: time.Second, maxInterval: 10 * time.Second, defaultTTL: maxAge,
		unknownKid: time.Second, staleFor: 30 * time.Second, fetchTimeout: 2 * time.Second}
	svc := startJWKSVerify(t, rhConfig(idp.Issuer, "discovery: true", r, ""))
	base := "http://" + svc.HTTP
	c := rhClient(t)

	cachedA := keyA.mint(idp.Issuer)
	pr := rhStartProber(t, c, base, 25*time.Millisecond)
	pr.Family("a-cached", func() string { return cachedA })
	pr.Family("a-fresh", func() string { return keyA.mint(idp.Issuer) })
	noise := rhStartProber(t, rhClient(t), base, 10*time.Millisecond)
	noise.Family("noise", func() string { return randomKidToken(idp.Issuer) })
	time.Sleep(500 * time.Millisecond) // A alone, under load and noise

	// Rotation: B is published and signs from now on. B tokens are sent
	// one after the other until one is accepted.
	idp.SetKeys(keyA.jwk(), keyB.jwk())
	sent := time.Now()
	// unknown_kid_interval plus one fetch: a loopback fetch takes
	// milliseconds; the rest is scheduling on a loaded machine.
	acceptBound := r.unknownKid + 500*time.Millisecond
	refused := 0
	var accepted time.Time
	for accepted.IsZero() && time.Since(sent) < acceptBound+2*time.Second {
		v, err := rhVerify(c, base, keyB.mint(idp.Issuer))
		switch {
		case err != nil:
			t.Fatalf("B token: Verify() = %v", err)
		case v.Valid:
			accepted = time.Now()
		case v.Error != "unknown_kid":
			t.Fatalf("B token = %v, want valid or unknown_kid", v)
		default:
			refused++
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("B accepted %v after its publication, %d B tokens refused before (bound %v)",
		accepted.Sub(sent).Round(time.Millisecond), refused, acceptBound)
	if accepted.IsZero() || accepted.Sub(sent) > acceptBound {
		t.Errorf("B tokens accepted %v after B was published, want within unknown_kid_interval + one fetch (%v)",
			accepted.Sub(sent).Round(time.Millisecond), acceptBound)
	}
	cachedB := keyB.mint(idp.Issuer)
	pr.Family("b-cached", func() string { return cachedB })
	pr.Family("b-fresh", func() string { return keyB.mint(idp.Issuer) })
	time.Sleep(time.Second) // A and B both published

	// A leaves the set.
	idp.SetKeys(keyB.jwk())
	dropped := time.Now()
	rejected := func(family string) bool {
		out := pr.Outcomes()
		for i := len(out) - 1; i >= 0; i-- {
			if out[i].Family == family {
				return out[i].Err == nil && !out[i].Verdict.Valid && out[i].Sent.After(dropped)
			}
		}
		return false
	}
	if _, ok := rhWaitFor(refreshBound+2*time.Second, func() bool { return rejected("a-cached") && rejected("a-fresh") }); !ok {
		t.Errorf("A tokens still accepted %v after the IdP dropped key A", refreshBound+2*time.Second)
	}
	time.Sleep(500 * time.Millisecond) // a few rounds past the rejection
	pr.Stop()
	noise.Stop()
	end := time.Now()
	noiseCount := 0
	for _, o := range noise.Outcomes() {
		if o.Family != "noise" {
			continue
		}
		noiseCount++
		if o.Err != nil || o.Verdict.Valid || o.Verdict.Error != "unknown_kid" {
			t.Errorf("random-kid token at %v = %v, %v; want 200 unknown_kid", o.Sent.Sub(sent).Round(time.Millisecond), o.Verdict, o.Err)
		}
		// unknown_kid_wait (500ms by default) bounds any wait.
		if d := o.Got.Sub(o.Sent); d > 500*time.Millisecond+hangMargin {
			t.Errorf("random-kid token at %v answered after %v, want within unknown_kid_wait", o.Sent.Sub(sent).Round(time.Millisecond), d.Round(time.Millisecond))
		}
	}
	if noiseCount < 50 {
		t.Errorf("noise prober made %d random-kid requests, want at least 50", noiseCount)
	}

	// Every outcome, phase by phase.
	firstRejection := map[string]time.Duration{}
	counts := map[string]int{}
	for _, o := range pr.Outcomes() {
		counts[o.Family]++
		if o.Err != nil {
			t.Errorf("%s at %v: request failed: %v", o.Family, o.Sent.Sub(sent).Round(time.Millisecond), o.Err)
			continue
		}
		switch o.Family {
		case "readyz":
			if o.Verdict.Status != 200 {
				t.Errorf("readyz at %v = %d, want 200 throughout a rotation", o.Sent.Sub(sent).Round(time.Millisecond), o.Verdict.Status)
			}
		case "b-cached", "b-fresh":
			if !o.Verdict.Valid {
				t.Errorf("%s at %v = %v, want valid", o.Family, o.Sent.Sub(sent).Round(time.Millisecond), o.Verdict)
			}
		case "a-cached", "a-fresh":
			switch {
			case o.Got.Before(dropped):
				if !o.Verdict.Valid {
					t.Errorf("%s while A is published = %v, want valid", o.Family, o.Verdict)
				}
			case o.Sent.After(dropped.Add(refreshBound)):
				if o.Verdict.Valid || o.Verdict.Error != "unknown_kid" {
					t.Errorf("%s %v after A was dropped = %v, want 200 unknown_kid", o.Family, o.Sent.Sub(dropped).Round(time.Millisecond), o.Verdict)
				}
			default:
				if !o.Verdict.Valid && o.Verdict.Error != "unknown_kid" {
					t.Errorf("%s just after A was dropped = %v, want valid or unknown_kid", o.Family, o.Verdict)
				}
				if !o.Verdict.Valid {
					if _, seen := firstRejection[o.Family]; !seen {
						firstRejection[o.Family] = o.Sent.Sub(dropped)
					}
				}
			}
		}
	}
	for _, f := range []string{"a-cached", "a-fresh", "b-cached", "b-fresh", "readyz"} {
		if counts[f] < 10 {
			t.Errorf("prober made %d %s requests, want at least 10", counts[f], f)
		}
	}

	m := rhMetrics(t, c, base)
	jwksHits, discoveryHits := idp.Hits(idpJWKSPath), idp.Hits(idpDiscoveryPath)
	t.Logf("rotation: %d requests %v; A rejected %v (cached) / %v (fresh) after the drop (bound %v); IdP: %d JWKS fetches (%d not modified), %d discovery; token cache hits %v",
		len(pr.Outcomes()), counts, firstRejection["a-cached"].Round(time.Millisecond), firstRejection["a-fresh"].Round(time.Millisecond), refreshBound,
		len(jwksHits), int(rhIssuerMetric(m, "jwks_not_modified_total", idp.Issuer)), len(discoveryHits), m["jwksverify_token_cache_hits_total"])
	t.Logf("JWKS fetches: %s", describeHits(jwksHits, sent))

	// The IdP's bill: the start-up fetch, one per refresh interval, and at
	// most one unknown-kid refresh per unknown_kid_interval (the noise, B,
	// the fresh A tokens after the drop).
	total := end.Sub(jwksHits[0].Start)
	bound := 1 + int(math.Ceil(total.Seconds()/(maxAge.Seconds()*0.9))) + int(math.Ceil(total.Seconds()/r.unknownKid.Seconds())) + 1
	if len(jwksHits) > bound {
		t.Errorf("IdP saw %d JWKS fetches in %v, want at most %d", len(jwksHits), total.Round(time.Millisecond), bound)
	}
	if len(discoveryHits) != 1 {
		t.Errorf("IdP saw %d discovery fetches, want 1 (no failure, so no re-discovery)", len(discoveryHits))
	}
	if got := rhIssuerMetric(m, "jwks_unknown_kid_refreshes_total", idp.Issuer); got < 1 {
		t.Errorf("jwks_unknown_kid_refreshes_total = %v, want at least 1 (the first B token)", got)
	}
	if m["jwksverify_token_cache_hits_total"] < 10 {
		t.Errorf("token_cache_hits_total = %v, want the cached tokens to hit the cache", m["jwksverify_token_cache_hits_total"])
	}
}
