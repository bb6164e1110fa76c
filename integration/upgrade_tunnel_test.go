package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2cUpstream is an application server that takes an HTTP/1.1 request
// with Upgrade: h2c as hypercorn does (Quart's and many FastAPI
// deployments' server): it answers 101 whatever Connection and
// HTTP2-Settings say, serves the request as stream 1, and reads the rest of
// the connection as HTTP/2. Other requests are served as HTTP/1.1. It
// records every request it ran.
type h2cUpstream struct {
	Addr string
	mu   sync.Mutex
	ran  []string // "METHOD PATH sub=X-Auth-Subject upgrade=Upgrade"
}

func (u *h2cUpstream) record(r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ran = append(u.ran, fmt.Sprintf("%s %s sub=%q upgrade=%q", r.Method, r.URL.Path, r.Header.Get("X-Auth-Subject"), r.Header.Get("Upgrade")))
}

func (u *h2cUpstream) Ran() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ran...)
}

// bufferedConn reads through the bufio.Reader that read the upgrade.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func startH2CUpstream(t *testing.T) *h2cUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &h2cUpstream{Addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.record(r)
		io.WriteString(w, "ran")
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					// hypercorn's H11Protocol._check_protocol: Upgrade alone
					// decides, for a request without a body.
					if strings.EqualFold(strings.TrimSpace(req.Header.Get("Upgrade")), "h2c") &&
						req.Header.Get("Content-Length") == "" && len(req.TransferEncoding) == 0 {
						if _, err := io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n"); err != nil {
							return
						}
						// net/http serves HTTP/2 without TLS by prior knowledge
						// only; an Upgrade: h2c takes x/net/http2's ServeConn.
						//lint:ignore SA1019 net/http has no h2c upgrade to use instead
						(&http2.Server{}).ServeConn(bufferedConn{c, br}, &http2.ServeConnOpts{UpgradeRequest: req, Handler: handler})
						return
					}
					u.record(req)
					io.Copy(io.Discard, req.Body)
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nran"); err != nil {
						return
					}
				}
			})
		}
	})
	return u
}

// TestProxyUpgradeDecidesEveryRequest: a request jwksverify allowed may
// not turn the connection into one the application reads more requests
// from. With Upgrade: h2c on an allowed request, the generated Caddy file
// proxied the upgrade (Caddy passes every Upgrade on, answering 101 when
// the application does), and the client then spoke HTTP/2 straight to
// the application: requests no proxy handed to jwksverify, with a forged
// token and a forged identity header, ran there. nginx's file clears
// Upgrade (nginx's default).
func TestProxyUpgradeDecidesEveryRequest(t *testing.T) {
	for _, px := range []string{"nginx", "caddy"} {
		for _, mint := range []bool{false, true} {
			name := px
			if mint {
				name += "-mint" // Caddy's file then writes forward_auth out as a reverse_proxy
			}
			t.Run(name, func(t *testing.T) {
				is := newTestIssuer(t)
				up := startH2CUpstream(t)
				extra := ""
				if mint {
					extra = mintExtra(t)
				}
				cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nshutdown_timeout: 1s\nforward_auth: {proxy: %s}\n%sissuers:\n%s", freePort(t), px, extra, is.IssuerConfig())
				listen := startBehindProxy(t, px, cfg, &echo{Addr: up.Addr})

				status := smuggleH2C(t, listen, is.Token(nil), "/admin/secret", is.ForgedToken())
				for _, r := range up.Ran() {
					if strings.Contains(r, "/admin/secret") {
						t.Errorf("the application ran %s, which jwksverify never decided (the upgrade answered %d)", r, status)
					}
				}
				if px == "caddy" {
					// A WebSocket upgrade still reaches the application (nginx's
					// file clears Upgrade: it never passed one on).
					getWithHeaders(t, "http://"+listen+"/orders/ws", is.Token(nil), map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"})
					if !slices.Contains(up.Ran(), `GET /orders/ws sub="alice" upgrade="websocket"`) {
						t.Errorf("a WebSocket upgrade did not reach the application as one")
					}
				}
				if t.Failed() {
					t.Logf("the application ran: %q", up.Ran())
				}
			})
		}
	}
}

// getWithHeaders sends GET url with token and headers and reads the answer.
func getWithHeaders(t *testing.T, url, token string, headers map[string]string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// smuggleH2C sends GET /orders/1 with a valid token and Upgrade: h2c
// through the proxy at listen; when the answer is 101, it speaks HTTP/2 on
// the connection and asks for path with the forged token and
// X-Auth-Subject: admin, on stream 3 (stream 1 is the upgraded request).
// It returns the status of the upgrade request's answer.
func smuggleH2C(t *testing.T, listen, token, path, forged string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	// HTTP2-Settings is not listed in Connection, so the proxy does not
	// take it for a hop-by-hop header.
	fmt.Fprintf(c, "GET /orders/1 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", listen, token)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the upgrade request: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the upgrade request with a valid token: status %d, want 200 (served as HTTP/1.1) or 101", resp.StatusCode)
		}
		return resp.StatusCode
	}
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, br)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", listen}, {":path", path},
		{"authorization", "Bearer " + forged}, {"x-auth-subject", "admin"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return resp.StatusCode // the connection ended
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.GoAwayFrame:
			return resp.StatusCode
		case *http2.DataFrame:
			if f.StreamID == 3 && f.StreamEnded() {
				return resp.StatusCode
			}
		case *http2.HeadersFrame:
			if f.StreamID == 3 && f.StreamEnded() {
				return resp.StatusCode
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == 3 {
				return resp.StatusCode
			}
		}
	}
}
