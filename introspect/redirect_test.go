package introspect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestCallerClientFollowsNoRedirect: with Options.HTTPClient (a library
// caller's client, http.DefaultClient's redirect policy), a redirect from
// the endpoint is a failed call, as with the Client's own: it followed the
// redirect, so a 302's target, asked with a GET that carries no token,
// answered active for any token, and a 307's got the token (and, on the
// same host, the Basic credentials).
func TestCallerClientFollowsNoRedirect(t *testing.T) {
	secret := writeSecret(t, "s3cret-value")
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var elsewhere atomic.Int64
			hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
				if r.URL.Host != "as.example.com" || r.URL.Path != "/introspect" {
					elsewhere.Add(1)
					return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
						Body: io.NopCloser(strings.NewReader(`{"active":true,"sub":"admin"}`)), Request: r}, nil
				}
				return &http.Response{StatusCode: status, Header: http.Header{"Location": {"https://elsewhere.example/answer"}},
					Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
			})}
			c := newClient(t, introspect.Options{URL: "https://as.example.com/introspect", HTTPClient: hc,
				ClientID: "c1", ClientSecretFile: secret})
			if ans, err := c.Introspect(context.Background(), "tok", time.Unix(1_000_000, 0)); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Errorf("Introspect() redirected with %d = %v, %v; want keys_unavailable", status, ans, err)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("%d requests sent to the redirect's target, want none", n)
			}
		})
	}
}
