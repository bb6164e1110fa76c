package server

import (
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestVerifyIDTokenAuthTimeAhead: /v1/verify with "max_age" answered
// valid for an ID token whose auth_time is ahead of now (an IdP writing
// milliseconds: a day-old login read as the far future), whatever the
// max_age. It is not_yet_valid, as an iat so far ahead is.
func TestVerifyIDTokenAuthTimeAhead(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 64})
	for name, authTime := range map[string]int64{
		"an-hour-ahead":          servertest.Epoch.Add(time.Hour).Unix(),
		"milliseconds-a-day-old": servertest.Epoch.Add(-24 * time.Hour).UnixMilli(),
	} {
		t.Run(name, func(t *testing.T) {
			tok := servertest.IDToken(nil, map[string]any{"auth_time": authTime})
			for _, maxAge := range []string{"0", "300"} {
				w := do(e.handler, postJSON("/v1/verify", idBody(tok, `"max_age":`+maxAge)))
				if w.Code != 200 || !strings.Contains(w.Body.String(), `"error":"not_yet_valid"`) {
					t.Errorf("max_age %s: /v1/verify = %d %s, want not_yet_valid", maxAge, w.Code, w.Body)
				}
			}
		})
	}
}
