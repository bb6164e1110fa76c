package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestExpressionNumericIDIsExact: an expression that allows one numeric
// user id (a snowflake id beyond 2^53, as Discord, Twitter and many
// in-house IdPs issue) never allows another. The claims matchers compare
// such numbers exactly (POLICIES.md: 9007199254740993 is not
// 9007199254740992), dynamic_metadata carries them exactly; a CEL claim
// was a double, so 123456789012345677 equalled 123456789012345678 and
// another user passed the policy (an int literal is compared with a
// double by converting it: 9007199254740993 equalled 9007199254740992
// too). Each pair must be refused: at load, or 403 at run time.
func TestExpressionNumericIDIsExact(t *testing.T) {
	for _, tt := range []struct {
		name, expr string
		uid        json.Number
	}{
		// 123456789012345680 is a double exactly: the id allowed.
		{"claim-rounded", `claims.uid == 123456789012345680`, "123456789012345677"},
		{"claim-rounded-in-list", `claims.uid in [123456789012345680, 42]`, "123456789012345677"},
		{"claim-list-rounded", `claims.uids.exists(u, u == 123456789012345680)`, "123456789012345677"},
		{"claim-whole-map", `claims.exists(k, k == "uid" && claims[k] == 123456789012345680)`, "123456789012345677"},
		{"claim-whole-map-equality", `claims.filter(k, k == "uid").size() == 1 && {"uid": claims.uid} == {"uid": 123456789012345680}`, "123456789012345677"},
		{"claim-double", `claims.uid == 123456789012345680.0`, "123456789012345677"},
		{"literal-rounded", `claims.uid == 9007199254740993`, "9007199254740992"},
		{"literal-rounded-uint", `claims.uid == 9007199254740993u`, "9007199254740992"},
		// A double literal rounds as an int literal does: 9007199254740993.0
		// is the double 9007199254740992, another user's id.
		{"literal-rounded-double", `claims.uid == 9007199254740993.0`, "9007199254740992"},
		{"literal-rounded-double-exponent", `claims.uid in [9.007199254740993e15]`, "9007199254740992"},
		{"literal-rounded-double-negative", `claims.uid == -123456789012345677.0`, "-123456789012345680"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, err := policy.New(policy.Options{
				Compiler: &celexpr.Compiler{},
				Policies: []policy.Spec{{Name: "one-user", Expression: tt.expr}},
				Routes:   []policy.Route{{Path: "/admin/**", Policy: "one-user"}},
			})
			if err != nil {
				t.Logf("refused at load: %v", err)
				return
			}
			ve := servertest.NewEnv(t, servertest.Config{TokenCache: 100, IndexClaims: set.ClaimNames()})
			srv, err := New(Options{Verifier: ve.V, Proxy: request.Nginx, Policies: set,
				Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			tok := mint(claims(map[string]any{"uid": tt.uid, "uids": []any{tt.uid}}))
			if w := do(srv.Handler(), nginxAuthz(http.MethodGet, "/admin/x", tok, nil)); w.Code != http.StatusForbidden {
				t.Fatalf("uid %s under %s: status %d, want 403 (another user's id)", tt.uid, tt.expr, w.Code)
			}
		})
	}
}
