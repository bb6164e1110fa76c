package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// TestRouteHostIPSpelling: a route's host that is an IP address in a
// spelling other than its canonical one is refused at load, naming the
// route: requests so spelled are refused (request.ErrAmbiguousHost), so the
// route could never match. The canonical spelling, with or without port or
// brackets, and names that only hold digits somewhere, load and match the
// request's host.
func TestRouteHostIPSpelling(t *testing.T) {
	for _, host := range []string{"127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.000.000.001", "127.0.0.1.", "1.2.3", "0x1",
		"example.123", "127.1:80", "0:0::1", "[0:0::1]", "::0001", "[::0001]:443", "::ffff:127.0.0.1", "[::ffff:7f00:1]", "fe80::1%eth0"} {
		t.Run(host, func(t *testing.T) {
			_, err := policy.New(policy.Options{Policies: []policy.Spec{{Name: "strict"}},
				Routes: []policy.Route{{Path: "/**", Policy: "strict"}, {Host: host, Path: "/**", Policy: "strict"}}})
			if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), "routes[1].host") {
				t.Fatalf("New(route host %q) = %v, want ErrInvalid naming routes[1].host", host, err)
			}
		})
	}
	for host, req := range map[string]string{"127.0.0.1": "127.0.0.1:8080", "::1": "[::1]:443", "[::1]": "[::1]",
		"2001:DB8::1": "[2001:db8::1]", "A1.example": "a1.example", "123.example": "123.example", "1e100.net": "1e100.net"} {
		t.Run(host, func(t *testing.T) {
			set, err := policy.New(policy.Options{Policies: []policy.Spec{{Name: "strict"}, {Name: "lax"}},
				Routes: []policy.Route{{Host: host, Path: "/**", Policy: "strict"}, {Path: "/**", Policy: "lax"}}})
			if err != nil {
				t.Fatalf("New(route host %q) = %v", host, err)
			}
			o, err := request.FromParts("GET", "https", req, "/x")
			if err != nil {
				t.Fatalf("FromParts(host %q) = %v", req, err)
			}
			if ch, err := set.Choose("", o, nil); err != nil || ch.Policy.Name() != "strict" {
				t.Fatalf("route host %q, request host %q: %+v, %v; want the strict route", host, req, ch, err)
			}
		})
	}
}
