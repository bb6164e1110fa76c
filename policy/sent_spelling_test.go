package policy_test

import (
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// TestChooseSentSpelling: a path with an unreserved escape is routed as
// decoded (Go's ServeMux, Werkzeug) and as sent (Express, @koa/router,
// chi): when the two choose other policies the request is ambiguous.
func TestChooseSentSpelling(t *testing.T) {
	s := mustSet(t, policy.Options{
		Policies:      []policy.Spec{{Name: "admin"}, {Name: "public", AllowAnonymous: true}},
		Routes:        []policy.Route{{Path: "/admin/**", Policy: "admin"}, {Path: "/public/**", Policy: "public"}},
		DefaultPolicy: "admin",
	})
	for _, tt := range []struct {
		target, want string
		err          error
	}{
		{"/public/x", "public", nil},
		{"/public/%7e/x", "public", nil},         // as sent: still below /public
		{"/%61dmin/x", "admin", nil},             // as sent: the default, admin too
		{"/%70ublic/x", "", policy.ErrAmbiguous}, // as sent: the default, not public
		{"/public%2D/x", "admin", nil},           // '-' decoded: /public-/x, no route either way
	} {
		o, err := request.FromParts("GET", "", "h", tt.target)
		if err != nil {
			t.Fatalf("FromParts(%q): %v", tt.target, err)
		}
		c, err := s.Choose("", o, nil)
		if !errors.Is(err, tt.err) || (err == nil && c.Policy.Name() != tt.want) {
			t.Errorf("Choose(%q) = %v, %v; want %q, %v", tt.target, c.Policy, err, tt.want, tt.err)
		}
	}
}
