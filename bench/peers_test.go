package bench

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/bench/internal/fixture"
	"github.com/jwksverify/jwksverify/bench/internal/impls"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPeers checks that the comparison is fair: every implementation accepts
// the benchmark token and rejects what the others reject (the floor checks
// only the signature).
func TestPeers(t *testing.T) {
	now := time.Now()
	valid := fixture.Claims(now, fixture.Issuer, 1)
	with := func(k string, v any) map[string]any {
		c := fixture.Claims(now, fixture.Issuer, 1)
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	tests := []struct {
		name      string
		claims    map[string]any
		tamper    bool
		wantValid bool
		sigOnly   bool // the floor sees the difference
	}{
		{name: "valid", claims: valid, wantValid: true},
		{name: "bad-signature", claims: valid, tamper: true, sigOnly: true},
		{name: "expired", claims: with("exp", now.Add(-time.Hour).Unix())},
		{name: "no-exp", claims: with("exp", nil)},
		{name: "not-yet-valid", claims: with("nbf", now.Add(time.Hour).Unix())},
		{name: "wrong-audience", claims: with("aud", "api://other")},
		{name: "wrong-issuer", claims: with("iss", "https://evil.example.com/")},
	}
	for _, c := range fixture.Cases() {
		for _, direct := range []bool{true, false} {
			var decoys []fixture.Decoy
			if !direct {
				decoys = fixture.Decoys()
			}
			is := issuer(fixture.Issuer, c, decoys)
			for _, tt := range tests {
				token := fixture.Mint(c, tt.claims)
				if tt.tamper {
					// Change one character in the middle of the signature.
					b := []byte(token)
					i := strings.LastIndexByte(token, '.') + 10
					b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
					token = string(b)
				}
				for _, p := range peers(t, c, is, token, direct) {
					name := c.Name + "/" + p.name + "/" + tt.name
					if direct {
						name += "/direct"
					}
					t.Run(name, func(t *testing.T) {
						err := p.verify(token)
						want := tt.wantValid || (p.name == impls.Floor && !tt.sigOnly)
						if (err == nil) != want {
							t.Errorf("verify() = %v, want valid %v", err, want)
						}
					})
				}
			}
		}
	}
}
