package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// TestRouteHostNoRequestCanName: a route's host that no request can name
// is refused at load, naming the route. Such a route never matches, so the
// requests it was written for are decided by a later route or
// default_policy: `host: https://admin.example.com` (a URL, read as the
// host "https" with the port "//admin.example.com") left the admin host to
// the lax catch-all, and `jwksverify check` passed the file. A request's
// host must be a name of ASCII letters, digits, '-', '_' and '.' or an IP
// address, with at most a port of digits (request.FromParts refuses the
// rest as ambiguous).
func TestRouteHostNoRequestCanName(t *testing.T) {
	for _, host := range []string{"https://admin.example.com", "user@admin.example.com", "admin.example.com?x=1",
		"admin%2Eexample.com", "admin.example.com#", "admin,example.com", `"admin.example.com"`, "admin.example.com:https",
		"admin.example.com:123456", "ädmin.example.com", "admin..example.com", ".example.com"} {
		t.Run(host, func(t *testing.T) {
			_, err := policy.New(policy.Options{Policies: []policy.Spec{{Name: "strict"}, {Name: "lax"}},
				Routes: []policy.Route{{Path: "/**", Policy: "lax"}, {Host: host, Path: "/**", Policy: "strict"}}})
			if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), "routes[1].host") {
				t.Fatalf("New(route host %q) = %v, want ErrInvalid naming routes[1].host", host, err)
			}
		})
	}
	// What CONFIG.md allows still loads and matches: any case, a
	// trailing dot, an IPv6 address with or without brackets.
	for host, req := range map[string]string{"Admin.Example.COM": "admin.example.com",
		"admin.example.com.": "admin.example.com:443", "admin_x.example.com": "admin_x.example.com", "::1": "[::1]", "[::1]": "[::1]:443"} {
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

// TestRoutePathWithQueryRefused: a route's path holding a raw '?' is
// refused at load. A request's path never holds one (the target's query
// starts there), so `path: /admin?debug=1` matched only a request spelling
// the '?' as %3F, and /admin?debug=1 itself went to the next route or
// default_policy; a literal '?' in a path is written %3F.
func TestRoutePathWithQueryRefused(t *testing.T) {
	for _, path := range []string{"/admin?debug=1", "/admin?", "/a?b/**"} {
		t.Run(path, func(t *testing.T) {
			_, err := policy.New(policy.Options{Policies: []policy.Spec{{Name: "strict"}, {Name: "lax"}},
				Routes: []policy.Route{{Path: path, Policy: "strict"}, {Path: "/**", Policy: "lax"}}})
			if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), "routes[0].path") {
				t.Fatalf("New(route path %q) = %v, want ErrInvalid naming routes[0].path", path, err)
			}
		})
	}
	set, err := policy.New(policy.Options{Policies: []policy.Spec{{Name: "strict"}, {Name: "lax"}},
		Routes: []policy.Route{{Path: "/a%3Fb", Policy: "strict"}, {Path: "/**", Policy: "lax"}}})
	if err != nil {
		t.Fatalf("New(route path /a%%3Fb) = %v", err)
	}
	o, err := request.FromParts("GET", "https", "api.example.com", "/a%3Fb")
	if err != nil {
		t.Fatal(err)
	}
	if ch, err := set.Choose("", o, nil); err != nil || ch.Policy.Name() != "strict" {
		t.Fatalf("route /a%%3Fb, request /a%%3Fb: %+v, %v; want the strict route", ch, err)
	}
}

// TestRouteHostPortRefused: a route's host is compared without the port,
// so one written with a port matched every port of the host: an anonymous
// route for public.example:8080 opened public.example:443 (an admin site
// on another port of the same name) too. A port is refused at load,
// naming the route.
func TestRouteHostPortRefused(t *testing.T) {
	for _, host := range []string{"public.example:8080", "Public.Example:443", "127.0.0.1:80", "[::1]:443", "public.example.:8080"} {
		t.Run(host, func(t *testing.T) {
			_, err := policy.New(policy.Options{Policies: []policy.Spec{{Name: "public", AllowAnonymous: true}, {Name: "strict"}},
				Routes: []policy.Route{{Host: host, Path: "/**", Policy: "public"}}, DefaultPolicy: "strict"})
			if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), "routes[0].host") || !strings.Contains(err.Error(), "port") {
				t.Fatalf("New(route host %q) = %v, want ErrInvalid naming routes[0].host and its port", host, err)
			}
		})
	}
}
