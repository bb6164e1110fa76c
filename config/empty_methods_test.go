package config

import (
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// TestEmptyMethodsYAML: `methods: []` in a route loaded, and the route
// then matched nothing: GET /admin/x fell through to the anonymous
// catch-all. It now matches every method, as an absent list does.
func TestEmptyMethodsYAML(t *testing.T) {
	p, err := parse(t, disc+`forward_auth: {proxy: nginx}
policies:
  - {name: admin, scopes: {all: [admin]}}
  - {name: public, allow_anonymous: true}
routes:
  - {methods: [], path: /admin/**, policy: admin}
  - {path: /**, policy: public}
`)
	if err != nil {
		t.Logf("refused at load (good): %v", err)
		return
	}
	got := p.Server.Policies.Select(request.Original{Method: "GET", Host: "h", Path: "/admin/x"})
	if got.Name() != "admin" {
		t.Errorf("methods: [] loaded and GET /admin/x chose %q (anonymous=%v), want admin or a load error", got.Name(), got.AllowAnonymous())
	}
}
