package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// One request, one decision: an allowed request may not turn its
// connection into one the application reads more requests from. Behind
// the Middleware, httputil.ReverseProxy passes any Upgrade on and joins
// the connections when the application answers 101; hypercorn (Quart,
// FastAPI) answers Upgrade: h2c so whatever Connection and HTTP2-Settings
// say, and every later request on the connection — any path, a forged
// token — reached it undecided. The Middleware now hands next no Upgrade
// but a WebSocket's and no HTTP2-Settings, as the Caddy file does: the
// request goes on as the HTTP/1.1 request decided.
func TestMiddlewareUpgradeDecidesEveryRequest(t *testing.T) {
	e := newEnv(t, envConfig{})
	up := newTunnelUpstream(t)
	target, _ := url.Parse(up.URL)
	protect, err := Middleware(e.v, MiddlewareOptions{Logger: e.srv.log})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(protect(httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(front.Close)
	valid := tokens()["valid"]
	tests := []struct {
		name    string
		headers string // beside Host and Authorization
		want    int
		tunnel  bool // the application read a request from the tunnel
	}{
		{"h2c", "Connection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n", 200, false},
		{"h2c-without-settings", "Connection: Upgrade\r\nUpgrade: h2c\r\n", 200, false},
		{"h2c-upper-case", "Connection: Upgrade\r\nUpgrade: H2C\r\n", 200, false},
		{"websocket-then-h2c", "Connection: Upgrade\r\nUpgrade: websocket, h2c\r\n", 200, false},
		{"two-upgrade-lines", "Connection: Upgrade\r\nUpgrade: websocket\r\nUpgrade: h2c\r\n", 200, false},
		{"websocket", "Connection: Upgrade\r\nUpgrade: websocket\r\n", 101, true},
		{"websocket-any-case", "Connection: Upgrade\r\nUpgrade: WebSocket\r\n", 101, true},
		// Not a WebSocket to net/http and httputil (ASCII case only):
		// dropped, where strings.EqualFold's ſ (U+017F) and Kelvin sign
		// (U+212A) let them through to next.
		{"websocket-long-s", "Connection: Upgrade\r\nUpgrade: web\u017focket\r\n", 200, false},
		{"websocket-kelvin", "Connection: Upgrade\r\nUpgrade: websoc\u212aet\r\n", 200, false},
		{"websocket-settings-dropped", "Connection: Upgrade\r\nUpgrade: websocket\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n", 101, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, tunnel := upgradeThrough(t, front.Listener.Addr().String(), valid, tt.headers)
			if status != tt.want || tunnel != tt.tunnel {
				t.Errorf("upgrade answered %d, tunnel %v; want %d, tunnel %v", status, tunnel, tt.want, tt.tunnel)
			}
			if saw := up.settings(); saw {
				t.Errorf("the application got HTTP2-Settings")
			}
		})
	}
}

// tunnelUpstream answers 101 to any Upgrade, as hypercorn answers h2c,
// and then reads one line from the connection: a request no one decided.
type tunnelUpstream struct {
	*httptest.Server
	mu          sync.Mutex
	sawSettings bool
}

func (u *tunnelUpstream) settings() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.sawSettings
	u.sawSettings = false
	return s
}

func newTunnelUpstream(t *testing.T) *tunnelUpstream {
	t.Helper()
	u := &tunnelUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Http2-Settings"]; ok {
			u.mu.Lock()
			u.sawSettings = true
			u.mu.Unlock()
		}
		upg := r.Header.Get("Upgrade")
		if upg == "" {
			io.WriteString(w, "ran")
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("Hijack() = %v", err)
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", upg)
		line, err := brw.ReadString('\n')
		if err == nil {
			fmt.Fprintf(c, "undecided %s", line)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// upgradeThrough sends GET /orders/1 with token and headers to addr and
// returns the answer's status and, for a 101, whether the application
// then read a request from the connection.
func upgradeThrough(t *testing.T, addr, token, headers string) (int, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /orders/1 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n%s\r\n", addr, token, headers)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the upgrade request: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		return resp.StatusCode, false
	}
	fmt.Fprintf(c, "GET /admin/secret HTTP/1.1\r\n")
	line, _ := br.ReadString('\n')
	return resp.StatusCode, strings.HasPrefix(line, "undecided GET /admin/secret")
}

// Connection names a header as httputil.ReverseProxy removes it: ignoring
// ASCII case only, so a name spelled with ſ (U+017F) or the Kelvin sign
// names another header and Connection stays.
func TestListsFoldsASCIIOnly(t *testing.T) {
	tests := []struct {
		name   string
		vs     []string
		header string
		want   bool
	}{
		{"same", []string{"X-User"}, "X-User", true},
		{"other-case", []string{"keep-alive, x-user"}, "X-User", true},
		{"spaced", []string{"a,\tX-USER "}, "X-User", true},
		{"other-name", []string{"X-Users"}, "X-User", false},
		{"long-s", []string{"X-U\u017fer"}, "X-User", false},
		{"kelvin", []string{"X-User-\u212aey"}, "X-User-Key", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lists(tt.vs, tt.header); got != tt.want {
				t.Errorf("lists(%q, %q) = %v, want %v", tt.vs, tt.header, got, tt.want)
			}
		})
	}
}
