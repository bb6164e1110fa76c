package main

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestOptionsAsteriskAnsweredByTheService: "OPTIONS * HTTP/1.1" on the HTTP
// and the admin listener is answered by the service, as every other request
// target that names no endpoint is: the JSON 404 with Cache-Control:
// no-store. net/http answered it itself, before any handler, with a 200 and
// no body: an answer api/openapi.yaml does not list, on a forward-auth
// listener where 200 means allowed, without no-store, neither counted nor
// logged.
func TestOptionsAsteriskAnsweredByTheService(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
issuers: [{issuer: "https://a.test/", jwks_file: jwks.json}]
`))
	p := startBin(t, nil, nil, "serve", "--config", cfg)
	line := p.waitLog(t, "listening")
	for _, tt := range []struct{ name, addr string }{
		{"http", line["http"].(string)},
		{"admin", line["admin"].(string)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", tt.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write([]byte("OPTIONS * HTTP/1.1\r\nHost: " + tt.addr + "\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Cache-Control") != "no-store" ||
				resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
				t.Fatalf("OPTIONS *: %d, Cache-Control %q, Content-Type %q; want the service's JSON 404 with no-store",
					resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Type"))
			}
		})
	}
}
