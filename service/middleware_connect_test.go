package service

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Go's ServeMux does not canonicalize a CONNECT request: it matches host
// patterns against r.Host with its port, and the path as sent. The
// Middleware decided a CONNECT to "public.example:8080" on the host
// without its port, under the anonymous route for public.example, while
// the mux matched no public.example/ pattern with it and ran the
// catch-all the default guards (a method-less pattern, or a handler such
// as http.FileServer that serves any method). A CONNECT is ambiguous.
func TestMiddlewareConnectAsServeMuxReadsIt(t *testing.T) {
	s := startOrdersPlan(t, `policies:
  - {name: public, allow_anonymous: true}
  - {name: writer, scopes: {any: [orders:write]}}
routes:
  - {host: public.example, path: /**, policy: public}
default_policy: writer
`)
	now := time.Now()
	writer := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:write",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	mux := http.NewServeMux()
	mux.HandleFunc("public.example/", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Ran", "public site") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Ran", "internal app") })
	h := s.Middleware(mux)
	tests := []struct {
		method, host, token string
		want                int
		ran                 string
	}{
		{"GET", "public.example:8080", "", 200, "public site"}, // control: the mux strips the port
		{"GET", "api.example", writer, 200, "internal app"},    // control
		{"CONNECT", "public.example:8080", "", 401, ""},        // the mux: "internal app"
		{"CONNECT", "public.example", "", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.host, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/x", nil)
			r.Host = tt.host
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want || w.Header().Get("X-Ran") != tt.ran {
				t.Errorf("%s %s/x (token %v) = %d, ran %q; want %d, ran %q", tt.method, tt.host, tt.token != "", w.Code, w.Header().Get("X-Ran"), tt.want, tt.ran)
			}
		})
	}
}
