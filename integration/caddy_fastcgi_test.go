package integration

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/fcgi"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// phpServerName is the $_SERVER key PHP (php-fpm, php-cgi) registers a
// FastCGI parameter under: php_register_variable_ex turns ' ' and '.' of a
// variable name into '_' (main/php_variables.c), for $_SERVER as for $_GET.
func phpServerName(param string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '.' {
			return '_'
		}
		return r
	}, param)
}

// dotTwins are the spellings of h with at least one of its '-' or '_'
// written '.': Caddy passes such headers on, its fastcgi transport names
// them HTTP_X.AUTH.SUBJECT, and PHP reads that as HTTP_X_AUTH_SUBJECT.
func dotTwins(h string) []string {
	var pos []int
	for i := range len(h) {
		if h[i] == '-' || h[i] == '_' {
			pos = append(pos, i)
		}
	}
	var out []string
	n := 1
	for range pos {
		n *= 3
	}
	for m := range n {
		b, dot, k := []byte(h), false, m
		for _, p := range pos {
			b[p] = "-_."[k%3]
			dot = dot || k%3 == 2
			k /= 3
		}
		if dot {
			out = append(out, string(b))
		}
	}
	return out
}

// fastcgiParams is a FastCGI responder (net/http/fcgi) standing for
// php-fpm: it records, per request, the HTTP_* parameters Caddy sent it
// (rebuilt from the header names net/http/cgi made of them: HTTP_X_A_B is
// X-A-B, HTTP_X.A.B is X.a.b).
type fastcgiParams struct {
	Addr string
	mu   sync.Mutex
	last map[string][]string // parameter -> values
}

func startFastCGI(t *testing.T) *fastcgiParams {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fastcgiParams{Addr: l.Addr().String()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := fcgi.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			params := map[string][]string{}
			for k, vs := range r.Header {
				params["HTTP_"+strings.ToUpper(strings.ReplaceAll(k, "-", "_"))] = vs
			}
			f.mu.Lock()
			f.last = params
			f.mu.Unlock()
			_, _ = io.WriteString(w, "ok")
		}))
		if err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("fcgi.Serve: %v", err)
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return f
}

func (f *fastcgiParams) Last() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// TestCaddyFastCGIClaimHeaderDotTwin: the generated Caddyfile in front of a
// PHP application (the file's last reverse_proxy given Caddy's fastcgi
// transport, as php_fastcgi does) must never let a client's value reach
// $_SERVER['HTTP_X_AUTH_SUBJECT'] (or any claim header's key). Caddy passes
// X.Auth.Subject on, its fastcgi transport sends it as the parameter
// HTTP_X.AUTH.SUBJECT beside jwksverify's HTTP_X_AUTH_SUBJECT, and PHP
// registers both under HTTP_X_AUTH_SUBJECT: whichever comes last (Caddy
// writes its parameters from a Go map, in random order) is the identity the
// application reads. The underscore twins (X_Auth_Subject) are cleared;
// the dot twins are not.
func TestCaddyFastCGIClaimHeaderDotTwin(t *testing.T) {
	caddy := requireTool(t, "caddy", "caddy")
	b := startBackends(t, "caddy", false, "", "")
	fc := startFastCGI(t)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	conf := proxyConfig(t, "caddy", b, addr)
	old := "\t\treverse_proxy " + b.upstream.Addr + "\n"
	if strings.Count(conf, old) != 1 {
		t.Fatalf("the generated Caddyfile has no single %q:\n%s", old, conf)
	}
	conf = strings.Replace(conf, old, "\t\treverse_proxy "+fc.Addr+" {\n\t\t\ttransport fastcgi {\n\t\t\t\troot "+t.TempDir()+"\n\t\t\t}\n\t\t}\n", 1)
	runCaddy(t, caddy, conf, addr)

	c := httpClient()
	for _, tc := range []struct {
		name  string
		token string
		want  map[string]string // the claim headers' values jwksverify answers with
	}{
		{"with-claims", b.is.Token(map[string]any{"email": "alice@example.com"}),
			map[string]string{"X-Auth-Subject": "alice", "X-Auth-Scope": "orders:read", "X-Auth-Email": "alice@example.com"}},
		{"without-claims", b.is.Token(map[string]any{"sub": nil, "scope": nil}),
			map[string]string{"X-Auth-Subject": "", "X-Auth-Scope": "", "X-Auth-Email": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", "http://"+addr+"/orders/7", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tc.token)
			for _, h := range claimHeaders {
				for _, tw := range dotTwins(h.header) {
					req.Header[tw] = []string{"forged-" + h.claim}
				}
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "ok" {
				t.Fatalf("status %d body %q, want 200 from the FastCGI application", resp.StatusCode, body)
			}
			params := fc.Last()
			for _, h := range claimHeaders {
				key := "HTTP_" + strings.ToUpper(strings.ReplaceAll(h.header, "-", "_"))
				var readAs []string
				for p, vs := range params {
					if phpServerName(p) == key {
						readAs = append(readAs, p+"="+strings.Join(vs, ","))
					}
				}
				sort.Strings(readAs)
				want := key + "=" + tc.want[h.header]
				if len(readAs) != 1 || readAs[0] != want {
					t.Errorf("PHP reads $_SERVER[%q] from the parameters %q, want only %q (the client sent %d dot twins)", key, readAs, want, len(dotTwins(h.header)))
				}
			}
		})
	}
}
