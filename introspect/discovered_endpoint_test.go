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

// TestDiscoveredEndpointIsChecked: an introspection endpoint read from the
// issuer's discovery document is held to the rules of a configured URL
// (https unless InsecureAllowHTTP) before anything is sent to it: the
// token and the client's secret never go to a plaintext endpoint the
// discovery document names; an endpoint not discovered yet sends nothing.
func TestDiscoveredEndpointIsChecked(t *testing.T) {
	secret := writeSecret(t, "s3cret")
	for _, tt := range []struct {
		name     string
		endpoint string
	}{
		{"http", "http://as.example.com/introspect"},
		{"not-discovered-yet", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
				calls.Add(1)
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(`{"active":true,"sub":"alice"}`)), Request: r}, nil
			})}
			c := newClient(t, introspect.Options{Endpoint: func() string { return tt.endpoint }, HTTPClient: hc,
				ClientID: "c1", ClientSecretFile: secret})
			if ans, err := c.Introspect(context.Background(), "tok", time.Unix(1_000_000, 0)); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Errorf("Introspect() with the discovered endpoint %q = %v, %v; want keys_unavailable", tt.endpoint, ans, err)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("%d requests sent to the discovered endpoint %q, want none", n, tt.endpoint)
			}
		})
	}
}
