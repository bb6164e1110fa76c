package server

import (
	"net/http/httptest"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
)

// TestHeadOnlyRoute: a route that names HEAD itself (an anonymous
// probe route, the GET of the same path left to a stricter default) is the
// operator's decision for HEAD on that path; 0bc45e7 refuses it now.
func TestHeadOnlyRoute(t *testing.T) {
	e := newPolicyEnvWith(t, nil, func(o *Options) {
		set, err := policy.New(policy.Options{
			Policies: []policy.Spec{
				{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
				{Name: "probe", AllowAnonymous: true},
			},
			Routes: []policy.Route{
				{Methods: []string{"HEAD"}, Path: "/healthz", Policy: "probe"},
			},
			DefaultPolicy: "admin",
		})
		if err != nil {
			t.Fatal(err)
		}
		o.Policies = set
	})
	w := httptest.NewRecorder()
	e.handler.ServeHTTP(w, nginxAuthz("HEAD", "/healthz", "", nil))
	if w.Code != 200 {
		t.Errorf("HEAD /healthz (route methods: [HEAD], anonymous) = %d, want 200", w.Code)
	}
}
