package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestProxyConnectionNamesIdentityHeader: a client's Connection header may
// not take away the identity headers the proxy copied from jwksverify's
// answer. A proxy built like httputil.ReverseProxy (Caddy's reverse_proxy,
// Traefik) removes every header Connection lists (RFC 9110 7.6.1) from the
// request it sends upstream, after forward_auth copied the verified ones
// in: Connection: X-Auth-Subject sent the application no subject (one that
// takes no subject or tenant for broader access then grants more). nginx
// does not remove what Connection lists, and its file sends Connection "".
// A WebSocket upgrade whose Connection names no identity header still
// reaches the application as one through Caddy (nginx's file never passes
// an upgrade on); one whose Connection names one reaches it as a plain GET,
// with the identity.
func TestProxyConnectionNamesIdentityHeader(t *testing.T) {
	rows := []struct {
		name       string
		connection []string // one Connection line each
		upgrade    string
		mintOnly   bool // the row needs mint.header X-Internal-Token
		websocket  bool // the application must see Upgrade: websocket (Caddy only)
	}{
		{name: "no-connection"},
		{name: "keep-alive", connection: []string{"keep-alive"}},
		{name: "subject", connection: []string{"X-Auth-Subject"}},
		{name: "scope-lower-among-others", connection: []string{"keep-alive, x-auth-scope"}},
		{name: "subject-upper-after-tab", connection: []string{"Upgrade,\tX-AUTH-SUBJECT"}},
		{name: "both-on-second-line", connection: []string{"keep-alive", "X-Auth-Scope , X-Auth-Subject"}},
		{name: "underscores", connection: []string{"X_Auth_Subject, x_auth_scope"}},
		{name: "websocket", connection: []string{"Upgrade"}, upgrade: "websocket", websocket: true},
		{name: "websocket-naming-subject", connection: []string{"Upgrade, X-Auth-Subject"}, upgrade: "websocket"},
		{name: "mint-header", connection: []string{"x-internal-token"}, mintOnly: true},
	}
	for _, px := range []string{"nginx", "caddy"} {
		for _, mint := range []bool{false, true} {
			name := px
			if mint {
				name += "-mint" // Caddy's file then writes forward_auth out as a reverse_proxy
			}
			t.Run(name, func(t *testing.T) {
				is := newTestIssuer(t)
				up := startEcho(t)
				extra := ""
				if mint {
					extra = strings.Replace(mintExtra(t), "mint: {", "mint: {header: X-Internal-Token, ", 1)
				}
				cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nshutdown_timeout: 1s\nforward_auth: {proxy: %s}\n%sissuers:\n%s", freePort(t), px, extra, is.IssuerConfig())
				listen := startBehindProxy(t, px, cfg, up)
				token := is.Token(nil)
				for _, tc := range rows {
					if tc.mintOnly && !mint {
						continue
					}
					t.Run(tc.name, func(t *testing.T) {
						status := rawGet(t, listen, "/orders/1", token, tc.connection, tc.upgrade)
						if status != http.StatusOK || up.Last() == nil {
							t.Fatalf("GET /orders/1 with Connection %q = %d, want 200", tc.connection, status)
						}
						h := up.Last().Headers
						if got := h.Get("X-Auth-Subject"); got != "alice" {
							t.Errorf("Connection %q: the application read X-Auth-Subject %q, want alice", tc.connection, got)
						}
						if got := h.Get("X-Auth-Scope"); got != "orders:read" {
							t.Errorf("Connection %q: the application read X-Auth-Scope %q, want orders:read", tc.connection, got)
						}
						if got := h.Get("X-Internal-Token"); mint && !strings.HasPrefix(got, "eyJ") {
							t.Errorf("Connection %q: the application read X-Internal-Token %q, want the minted token", tc.connection, got)
						}
						if got := h.Get("Upgrade"); px == "caddy" && tc.websocket && got != "websocket" {
							t.Errorf("Connection %q, Upgrade %q: the application read Upgrade %q, want websocket", tc.connection, tc.upgrade, got)
						}
					})
				}
			})
		}
	}
}

// rawGet sends GET path with token to the proxy at listen, with one
// Connection line per element of connection (as spelled) and Upgrade when
// upgrade is not "", on a connection of its own, and returns the answer's
// status.
func rawGet(t *testing.T, listen, path, token string, connection []string, upgrade string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n", path, listen, token)
	for _, v := range connection {
		fmt.Fprintf(&b, "Connection: %s\r\n", v)
	}
	if upgrade != "" {
		fmt.Fprintf(&b, "Upgrade: %s\r\n", upgrade)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode
}
