package dpop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestHTUErrorWithoutQuery: the error of a proof whose htu is refused
// never repeats its query or fragment. The error is the detail of the
// rejection's log line and of /v1/verify's checks, and a query carries what
// clients put there (an OAuth code, a signed URL's signature, a token), as
// the request side keeps out of its errors (request.FromRequest).
func TestHTUErrorWithoutQuery(t *testing.T) {
	const secret = "SECRET-CODE"
	jkt := thumb(t, testkeys.EC256A)
	for name, htu := range map[string]string{
		"relative":              "/orders/1?code=" + secret,
		"relative-fragment":     "/orders/1#code=" + secret,
		"control-in-query":      "https://api.example.com/orders/1?code=" + secret + "\x7f",
		"no-host-fragment":      "https:///orders/1#code=" + secret,
		"no-host":               "https:///orders/1?code=" + secret,
		"opaque":                "https:api.example.com?code=" + secret,
		"fragment-before-query": "/orders/1#f?code=" + secret,
		"other-host":            "https://other.example.com/orders/1?code=" + secret,
	} {
		t.Run(name, func(t *testing.T) { refusedWithout(t, htu, jkt, secret, "query or fragment") })
	}
}

// TestHTUErrorWithoutUserinfo: the error of a proof whose htu is no
// absolute URI never repeats the htu's user information either
// ("user:password@"), which a parsed htu is refused for without showing it
// ("htu holds user information"); an htu that does not parse, or has no
// host, was quoted up to its query with the password in it.
func TestHTUErrorWithoutUserinfo(t *testing.T) {
	const secret = "SECRET-PASSWORD"
	jkt := thumb(t, testkeys.EC256A)
	for name, htu := range map[string]string{
		"no-host":          "https://user:" + secret + "@/orders/1",
		"bad-escape":       "https://user:" + secret + "@api.example.com/orders/%zz",
		"control-in-path":  "https://user:" + secret + "@api.example.com/orders/\x7f",
		"bad-port":         "https://user:" + secret + "@api.example.com:x/orders/1",
		"at-in-password":   "https://user:" + secret + "@x@api.example.com/%zz",
		"parsed-userinfo":  "https://user:" + secret + "@api.example.com/orders/1",
		"path-at-relative": "//user:" + secret + "@api.example.com/%zz",
	} {
		t.Run(name, func(t *testing.T) { refusedWithout(t, htu, jkt, secret, "user information") })
	}
}

// refusedWithout checks that a proof whose htu is htu is refused as an
// invalid proof, and that neither the error nor an explained step repeats
// secret (the htu's what).
func refusedWithout(t *testing.T, htu, jkt, secret, what string) {
	t.Helper()
	c := newChecker(t, dpop.Options{})
	p := proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": htu})
	steps, _, err := c.Explain(context.Background(), input(p, jkt), t0)
	if !errors.Is(err, verify.ErrInvalidDPoPProof) {
		t.Fatalf("err = %v, want invalid_dpop_proof", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error repeats the htu's %s: %v", what, err)
	}
	for _, s := range steps {
		if strings.Contains(s.Detail, secret) {
			t.Errorf("step %s repeats the htu's %s: %s", s.Check, what, s.Detail)
		}
	}
}
