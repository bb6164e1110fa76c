package policy_test

import (
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// TestRouteMethodNotATokenRefused: a route's method that is not an HTTP
// method token (RFC 9110 §9.1: tchar only) names no request's method, so
// the route never matches and the requests it was written for go to the
// next route or the default. methods: ["POST,PUT,PATCH,DELETE"] (one
// string, as a templated value writes it) loaded, and POST /orders/1 with
// an orders:read token went to the read route of POLICIES.md's example
// and was allowed. Such a method is refused at load, as a host no request
// can name is.
func TestRouteMethodNotATokenRefused(t *testing.T) {
	pols := []policy.Spec{
		{Name: "orders-write", Scopes: policy.Scopes{All: []string{"orders:write"}}},
		{Name: "orders-read", Scopes: policy.Scopes{Any: []string{"orders:read", "orders:write"}}},
	}
	for _, m := range []string{"POST,PUT,PATCH,DELETE", "POST;", "POST\n", "PO\"ST", "DÉLETE", "POST\x00", "(POST)"} {
		s, err := policy.New(policy.Options{Policies: pols, Routes: []policy.Route{
			{Methods: []string{m}, Path: "/orders/**", Policy: "orders-write"},
			{Path: "/orders/**", Policy: "orders-read"},
		}})
		if err != nil {
			if !errors.Is(err, policy.ErrInvalid) {
				t.Errorf("methods: [%q]: %v, want ErrInvalid", m, err)
			}
			continue
		}
		o := request.Original{Method: "POST", Host: "api.example.com", Path: "/orders/1"}
		t.Errorf("methods: [%q] loaded; POST /orders/1 is decided by %q (%s): the route can never match", m, s.Select(o).Name(), s.RouteString(0))
	}
	// Method tokens, extension methods included, still load.
	for _, m := range []string{"GET", "PROPFIND", "M-SEARCH", "BREW"} {
		if _, err := policy.New(policy.Options{Policies: pols, Routes: []policy.Route{{Methods: []string{m}, Path: "/x", Policy: "orders-read"}}}); err != nil {
			t.Errorf("methods: [%q]: %v, want it loaded", m, err)
		}
	}
}
