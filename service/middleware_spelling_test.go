package service

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Go's ServeMux matches a host pattern against r.Host exactly (only the
// port stripped) and a method exactly. The Middleware decided on the host
// lower-cased without its trailing dot and on the method upper-cased, so
// "PUBLIC.example" was decided under the anonymous route for
// public.example while the mux ran the catch-all the default guards, and
// "get" was decided as GET while the mux ran the method-less handler the
// writer route guards. Both spellings are now ambiguous: 401 without a
// token, 403 with one.
func TestMiddlewareSpellingAsServeMuxReadsIt(t *testing.T) {
	s := startOrdersPlan(t, `policies:
  - {name: public, allow_anonymous: true}
  - {name: reader, scopes: {any: [orders:read]}}
  - {name: writer, scopes: {any: [orders:write]}}
routes:
  - {host: public.example, path: /**, policy: public}
  - {methods: [GET, HEAD], path: /orders/**, policy: reader}
  - {path: /orders/**, policy: writer}
default_policy: writer
`)
	now := time.Now()
	reader := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	mux := http.NewServeMux()
	mux.HandleFunc("public.example/", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Ran", "public site") })
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Ran", "show") })
	mux.HandleFunc("/orders/{id}", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Ran", "update") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Ran", "internal app") })
	h := s.Middleware(mux)
	tests := []struct {
		method, host, path, token string
		want                      int
		ran                       string // the handler that ran, for 200
	}{
		{"GET", "public.example", "/x", "", 200, "public site"},
		{"GET", "public.example:8080", "/x", "", 200, "public site"},
		{"GET", "PUBLIC.example", "/x", "", 401, ""},
		{"GET", "public.example.", "/x", "", 401, ""},
		{"GET", "Public.Example:8080", "/x", "", 401, ""},
		{"GET", "PUBLIC.example", "/x", reader, 403, ""},
		{"GET", "api.example", "/orders/1", reader, 200, "show"},
		{"HEAD", "api.example", "/orders/1", reader, 200, "show"},
		{"get", "api.example", "/orders/1", reader, 403, ""},
		{"Get", "api.example", "/orders/1", reader, 403, ""},
		{"head", "api.example", "/orders/1", reader, 403, ""},
		{"get", "api.example", "/orders/1", "", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.host+tt.path, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			r.Host = tt.host
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want || w.Header().Get("X-Ran") != tt.ran {
				t.Errorf("%s %s%s (token %v) = %d, ran %q; want %d, ran %q", tt.method, tt.host, tt.path, tt.token != "", w.Code, w.Header().Get("X-Ran"), tt.want, tt.ran)
			}
		})
	}
}
