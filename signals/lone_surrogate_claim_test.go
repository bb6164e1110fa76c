package signals_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// TestRevocationSignalLoneSurrogateElsewhere: a logout token or a SET
// whose signed claims hold a lone UTF-16 surrogate escape in a claim that
// names nothing revoked (a reason text a JavaScript transmitter cut in the
// middle of an emoji: "Hijacked \ud83d") still revokes what it names. The
// verifier reads such a claim set (valid JSON, valid UTF-8), and decodes
// sub and sid as the access tokens' are decoded, so nothing is revoked
// under another name; refusing the signal (400 invalid_request, which a
// transmitter does not retry) lost the revocation and the session stayed
// valid.
func TestRevocationSignalLoneSurrogateElsewhere(t *testing.T) {
	const cut = `Hijacked \ud83d`
	t.Run("set", func(t *testing.T) {
		e := newEnv(t, signals.RevokeSession)
		claims := setClaims(map[string]any{signals.EventSessionRevoked: map[string]any{
			"reason_admin": map[string]any{"en": "CUT"}}}, map[string]any{"sub_id": complexSes})
		payload := strings.Replace(mustJSON(claims), "CUT", cut, 1)
		set := signRaw(t, `{"alg":"RS256","kid":"rsa-a","typ":"secevent+jwt"}`, payload)
		got, _, err := e.r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPush, epoch)
		if err != nil || len(got) != 1 || got[0].Kind != revoke.KindSID || got[0].Value != "session-9" {
			t.Errorf("Receive(SET with reason_admin %s) = %v, %v; want the session session-9 revoked", cut, got, err)
		}
	})
	t.Run("logout", func(t *testing.T) {
		e := newEnv(t, signals.RevokeSession)
		payload := strings.Replace(mustJSON(logoutClaims(map[string]any{"name": "CUT"})), "CUT", cut, 1)
		tok := signRaw(t, `{"alg":"RS256","kid":"rsa-a","typ":"logout+jwt"}`, payload)
		got, err := e.r.Logout(context.Background(), tok, epoch)
		if err != nil || len(got) != 1 || got[0].Kind != revoke.KindSID || got[0].Value != "session-1" {
			t.Errorf("Logout(token with name %s) = %v, %v; want the session session-1 revoked", cut, got, err)
		}
	})
}
