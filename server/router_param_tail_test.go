package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
)

// TestMiddlewareRouteEndingInStar: an application's router may run a path
// below a route ending in "*" with that route's handler. Echo v4
// (labstack/echo v4.16.5, issue #2501) hands the last :param of a route the
// rest of the path, '/' included: e.DELETE("/items/:id") runs
// DELETE /items/1/x with id "1/x", e.GET("/users/:id") runs
// GET /users/1/settings with id "1/settings". With a strict route
// "DELETE /items/*" and an anonymous default_policy, Service.Middleware (or
// forward-auth) in front of such an application decided /items/1/x under
// the default (no route matched: '*' is one segment) and let an anonymous
// request reach the strict handler. The application here is Go's ServeMux
// with {id...}, which reads these paths as Echo does. Such a request is now
// decided under both policies (policy.Set.AlsoUnder), as a HEAD is under
// GET's.
func TestMiddlewareRouteEndingInStar(t *testing.T) {
	e := publicDefault(t,
		policy.Route{Methods: []string{"DELETE"}, Path: "/items/*", Policy: "admin"},
		policy.Route{Path: "/users/*", Policy: "admin"},
		// An explicit route below keeps its own policy.
		policy.Route{Path: "/users/*/avatar", Policy: "public"},
	)
	mux := http.NewServeMux()
	strict := func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Ran", "strict "+r.PathValue("id")) }
	mux.HandleFunc("DELETE /items/{id...}", strict) // echo: e.DELETE("/items/:id")
	mux.HandleFunc("/users/{id...}", strict)        // echo: e.Any("/users/:id")
	mux.HandleFunc("/users/{id}/avatar", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Ran", "lax") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Ran", "lax") })
	h := e.srv.Middleware(mux)
	for _, tt := range []struct {
		method, target string
		strictRan      bool // the application runs the strict route's handler
	}{
		{"DELETE", "/items/1", true},
		{"DELETE", "/items/1/", true},  // echo: id "1/"
		{"DELETE", "/items/1/x", true}, // echo: id "1/x"
		{"POST", "/items/1/x?_method=DELETE", true},
		{"GET", "/users/1/settings", true}, // echo: id "1/settings"
		{"HEAD", "/users/1/settings/", true},
		{"GET", "/users/1/avatar", false}, // its own route
		{"GET", "/items/1/x", false},      // no DELETE: the default
	} {
		r := httptest.NewRequest(tt.method, "http://api.example.com"+tt.target, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		ran := w.Header().Get("X-Ran")
		if tt.strictRan && w.Code == http.StatusOK {
			t.Errorf("anonymous %s %s = 200, handler %q: the route ending in '*' is what Echo runs it with", tt.method, tt.target, ran)
		}
		if !tt.strictRan && w.Code != http.StatusOK {
			t.Errorf("anonymous %s %s = %d, want 200 (public)", tt.method, tt.target, w.Code)
		}
	}
}

// TestRouteEndingInStarDecidedUnderBoth: a path below a route ending in "*"
// that no route matches must be allowed by that route's policy and by the
// default: the stricter of the two wins, whichever it is. A lax route
// (/public/*) under a strict default keeps the default for /public/a/b (a
// refusal of every such request would break it); a strict route under a
// lax default takes the strict one.
func TestRouteEndingInStarDecidedUnderBoth(t *testing.T) {
	e := routesEnv(t, policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "public", AllowAnonymous: true},
			{Name: "users", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"users", "admins"}}}},
		},
		Routes: []policy.Route{
			{Methods: []string{"DELETE"}, Path: "/items/*", Policy: "admin"},
			{Path: "/public/*", Policy: "public"},
		},
		DefaultPolicy: "users",
	})
	h := e.srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	user := mint(claims(map[string]any{"groups": []string{"users"}}))
	admin := mint(claims(map[string]any{"groups": []string{"admins"}}))
	for _, tt := range []struct {
		method, target, token string
		want                  int
	}{
		{"DELETE", "/items/1/x", user, http.StatusForbidden}, // admin (the route's) and users (the default)
		{"DELETE", "/items/1/x", admin, http.StatusOK},
		{"DELETE", "/items/1/x", "", http.StatusUnauthorized},
		{"GET", "/public/a/b", user, http.StatusOK}, // public and users: users
		{"GET", "/public/a/b", "", http.StatusUnauthorized},
		{"GET", "/public/a", "", http.StatusOK}, // the route itself
		{"HEAD", "/items/1/x", user, http.StatusOK},
	} {
		r := httptest.NewRequest(tt.method, "http://api.example.com"+tt.target, nil)
		if tt.token != "" {
			r.Header.Set("Authorization", "Bearer "+tt.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s %s (token %v) = %d, want %d", tt.method, tt.target, tt.token != "", w.Code, tt.want)
		}
	}
}

// routesEnv is newPolicyEnv's server with the policies and routes of opts.
func routesEnv(t *testing.T, opts policy.Options) *env {
	t.Helper()
	set, err := policy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return newPolicyEnvWith(t, nil, func(o *Options) { o.Policies = set })
}

// TestRouteEndingInStarEveryTailRoute: a path below two routes ending in
// "*" runs, under Echo v4, with the deeper one's handler
// (e.DELETE("/items/:id/attachments/:aid") runs
// DELETE /items/1/attachments/2/x with aid "2/x": a param node without
// children takes the rest of the path). AlsoUnder returned only the first
// route ending in "*" whose tail matched (config order), and nothing at all
// when that first one's policy was the default's: the deeper, strict route
// was never asked.
func TestRouteEndingInStarEveryTailRoute(t *testing.T) {
	for _, tt := range []struct {
		name  string
		first string // the policy of /items/*
		token bool
	}{
		{"first-route-lax", "users", true},              // a user who is no admin
		{"first-route-is-the-default", "public", false}, // anonymous
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := routesEnv(t, policy.Options{
				Policies: []policy.Spec{
					{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
					{Name: "public", AllowAnonymous: true},
					{Name: "users", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"users", "admins"}}}},
				},
				Routes: []policy.Route{
					{Path: "/items/*", Policy: tt.first},
					{Methods: []string{"DELETE"}, Path: "/items/*/attachments/*", Policy: "admin"},
				},
				DefaultPolicy: "public",
			})
			h := e.srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			r := httptest.NewRequest("DELETE", "http://api.example.com/items/1/attachments/2/x", nil)
			if tt.token {
				r.Header.Set("Authorization", "Bearer "+mint(claims(map[string]any{"groups": []string{"users"}})))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code == http.StatusOK {
				t.Errorf("DELETE /items/1/attachments/2/x (token %v) = 200: Echo runs it with /items/:id/attachments/:aid, whose route is admin", tt.token)
			}
		})
	}
}

// TestRouteEndingInStarUnderSubtree: a lax subtree route (/api/**) that
// chose a path below a strict route ending in "*" does not decide it alone:
// Echo prefers a :param to a catch-all, so /api/items/:id runs
// /api/items/1/x. An exact route that chose the path keeps it (the
// application has its own handler there).
func TestRouteEndingInStarUnderSubtree(t *testing.T) {
	e := routesEnv(t, policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "anytoken"},
		},
		Routes: []policy.Route{
			{Path: "/api/items/*/detail", Policy: "anytoken"},
			{Methods: []string{"DELETE"}, Path: "/api/items/*", Policy: "admin"},
			{Path: "/api/**", Policy: "anytoken"},
		},
		DefaultPolicy: "admin",
	})
	h := e.srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	user := mint(claims(map[string]any{"groups": []string{"users"}}))
	for _, tt := range []struct {
		method, target string
		want           int
	}{
		{"DELETE", "/api/items/1/x", http.StatusForbidden}, // /api/** chose it; /api/items/* refuses
		{"DELETE", "/api/items/1", http.StatusForbidden},
		{"DELETE", "/api/items/1/detail", http.StatusOK}, // its own exact route
		{"GET", "/api/items/1/x", http.StatusOK},         // no GET route ending in '*'
		{"DELETE", "/api/orders/1", http.StatusOK},
	} {
		r := httptest.NewRequest(tt.method, "http://api.example.com"+tt.target, nil)
		r.Header.Set("Authorization", "Bearer "+user)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.target, w.Code, tt.want)
		}
	}
}

// TestRouteEndingInStarBelowDeeperSubtree: a subtree route that goes on
// past the '*' of a route ending in '*' (/users/*/avatar/** below
// /users/*) is the application's own handler for the paths it chose, as
// an exact route is: Echo's /users/:id has a child then, so :id takes one
// segment and /users/:id/avatar/* runs /users/1/avatar/large.png (Go's
// ServeMux runs the more specific pattern alike). Only a subtree route
// shallower than the '*' (/api/** beside /api/items/*) loses to the
// :param. Deciding the avatar under /users/*'s policy too refused every
// anonymous avatar (401) and every token without /users/*'s claims (403).
func TestRouteEndingInStarBelowDeeperSubtree(t *testing.T) {
	e := publicDefault(t,
		policy.Route{Path: "/users/*", Policy: "admin"},
		policy.Route{Path: "/users/*/avatar/**", Policy: "public"},
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/users/{id...}", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Ran", "strict") })      // echo: e.Any("/users/:id")
	mux.HandleFunc("/users/{id}/avatar/", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Ran", "avatar") }) // echo: e.GET("/users/:id/avatar/*")
	h := e.srv.Middleware(mux)
	user := mint(claims(map[string]any{"groups": []string{"users"}}))
	for _, tt := range []struct {
		target, token string
		want          int
	}{
		{"/users/1/avatar/large.png", "", http.StatusOK},
		{"/users/1/avatar/large.png", user, http.StatusOK},
		{"/users/1/avatar/", "", http.StatusOK},
		{"/users/1", "", http.StatusUnauthorized},          // /users/* itself
		{"/users/1/settings", "", http.StatusUnauthorized}, // no subtree route: under /users/* too
		{"/users/1/settings", user, http.StatusForbidden},
	} {
		r := httptest.NewRequest("GET", "http://api.example.com"+tt.target, nil)
		if tt.token != "" {
			r.Header.Set("Authorization", "Bearer "+tt.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("GET %s (token %v) = %d, want %d (the application runs %q)", tt.target, tt.token != "", w.Code, tt.want, w.Header().Get("X-Ran"))
		}
	}
}

// TestRouteEndingInStarBesideWildcardRoute: a route that chose a path
// below a route ending in '*' is the application's handler for it only
// when Echo's search reaches it first. Echo v4.16.5 tries a static node
// before a :param, so where the chosen route has a '*' (a :param) and the
// route ending in '*' a literal, Echo walks the literal branch, whose last
// :param is a leaf and takes the rest of the path: with
// e.Any("/:res/:id/meta"), e.Any("/:res/:id/public/*") and
// e.DELETE("/items/:id"), DELETE /items/1/meta and
// DELETE /items/1/public/x run /items/:id (id "1/meta", "1/public/x").
// AlsoUnder decided them under the route that chose them alone (an exact
// route always; a subtree route as deep as the '*'), so an anonymous
// request reached the admin handler. Checked against the real routers
// (Echo, gin, chi, gorilla/mux, ServeMux) by a generated differential of
// 3000 configurations: 162 such allows, all Echo's.
func TestRouteEndingInStarBesideWildcardRoute(t *testing.T) {
	e := routesEnv(t, policy.Options{
		Policies: adminAndPublic(),
		Routes: []policy.Route{
			{Path: "/*/*/meta", Policy: "public"},
			{Path: "/*/*/public/**", Policy: "public"},
			{Methods: []string{"DELETE"}, Path: "/items/*", Policy: "admin"},
			{Path: "/orders/new/**", Policy: "public"},
			{Path: "/orders/*", Policy: "admin"},
		},
		DefaultPolicy: "admin",
	})
	h := e.srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, tt := range []struct {
		method, target string
		want           int
		echo           string // the route whose handler Echo v4.16.5 runs
	}{
		{"DELETE", "/items/1/meta", http.StatusUnauthorized, "DELETE /items/:id"},
		{"DELETE", "/items/1/public/x", http.StatusUnauthorized, "DELETE /items/:id"},
		{"DELETE", "/items/1", http.StatusUnauthorized, "DELETE /items/:id"},
		{"GET", "/orders/new/x", http.StatusOK, "/orders/new/*"}, // a static node wins over /orders/:id
		{"GET", "/orders/1/x", http.StatusUnauthorized, "/orders/:id"},
		{"GET", "/users/1/meta", http.StatusOK, "/:res/:id/meta"},
		{"GET", "/users/1/public/x", http.StatusOK, "/:res/:id/public/*"},
		{"GET", "/items/1/meta", http.StatusOK, "/:res/:id/meta (no GET on /items/:id)"},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tt.method, "http://api.example.com"+tt.target, nil))
		if w.Code != tt.want {
			t.Errorf("anonymous %s %s = %d, want %d (Echo runs %s)", tt.method, tt.target, w.Code, tt.want, tt.echo)
		}
	}
}

// TestRouteEndingInStarBesideLiteralRoute: a route with a literal where a
// route ending in '*' has its '*' is the application's handler for its
// paths, the one the '*' route matches itself included: Echo tries a
// static node before a :param (/items/new runs e.GET("/items/new"), not
// /items/:id).
func TestRouteEndingInStarBesideLiteralRoute(t *testing.T) {
	e := publicDefault(t,
		policy.Route{Path: "/items/new", Policy: "public"},
		policy.Route{Path: "/items/new/**", Policy: "public"},
		policy.Route{Path: "/items/*", Policy: "admin"},
	)
	h := e.srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	want := map[string]int{ // anonymous GET: its status
		"/items/new":       http.StatusOK,
		"/items/new/draft": http.StatusOK,
		"/items/1":         http.StatusUnauthorized,
		"/items/1/x":       http.StatusUnauthorized,
	}
	for target, code := range want {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "http://api.example.com"+target, nil))
		if w.Code != code {
			t.Errorf("anonymous GET %s = %d, want %d", target, w.Code, code)
		}
	}
}

// adminAndPublic are the policies admin (the admins group) and public
// (anonymous) of the route tests.
func adminAndPublic() []policy.Spec {
	return []policy.Spec{
		{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
		{Name: "public", AllowAnonymous: true},
	}
}

// publicDefault is routesEnv with adminAndPublic, routes and the public
// default.
func publicDefault(t *testing.T, routes ...policy.Route) *env {
	t.Helper()
	return routesEnv(t, policy.Options{Policies: adminAndPublic(), Routes: routes, DefaultPolicy: "public"})
}
