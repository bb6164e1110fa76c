package service

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// An HTTP/2 client may send a host header beside :authority. Go's server
// serves r.Host from :authority and leaves the host header in r.Header,
// where a handler may read it: net/http/cgi hands a CGI program both as
// HTTP_HOST, and the header's, set last, is the one it gets. The
// Middleware decided such a request on r.Host alone (the anonymous route
// of public.example) while the CGI program served internal.example's
// page. A host header that is not r.Host is ambiguous, as gRPC Check
// holds one beside :authority: 401 without a token, 403 with one.
func TestMiddlewareHTTP2HostHeaderAsDecided(t *testing.T) {
	s := startOrdersPlan(t, `policies:
  - {name: public, allow_anonymous: true}
  - {name: writer, scopes: {any: [orders:write]}}
routes:
  - {host: public.example, path: /**, policy: public}
default_policy: writer
`)
	now := time.Now()
	reader := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	script := filepath.Join(t.TempDir(), "site.cgi")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nsite %s' \"$HTTP_HOST\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s.Middleware(&cgi.Handler{Path: script}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tests := []struct {
		name      string
		authority string
		host      []string // host headers beside :authority
		token     string
		want      int
		body      string // for 200
	}{
		{"authority", "public.example", nil, "", 200, "site public.example"},
		{"host-same", "public.example", []string{"public.example"}, "", 200, "site public.example"},
		{"host-other", "public.example", []string{"internal.example"}, "", 401, ""},
		{"host-other-token", "public.example", []string{"internal.example"}, reader, 403, ""},
		{"host-case", "public.example", []string{"PUBLIC.example"}, "", 401, ""},
		{"host-twice", "public.example", []string{"public.example", "internal.example"}, "", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := h2Get(t, srv, tt.authority, tt.host, tt.token)
			if status != tt.want || (tt.want == 200 && body != tt.body) {
				t.Errorf("GET :authority %s host %q = %d %q, want %d %q", tt.authority, tt.host, status, body, tt.want, tt.body)
			}
		})
	}
}

// h2Get sends GET /x to srv over HTTP/2 with the given :authority, host
// headers and bearer token (none when ""), and returns the answer's status
// and body. Go's client sends no host header, so the frames are written
// here.
func h2Get(t *testing.T, srv *httptest.Server, authority string, hosts []string, token string) (int, string) {
	t.Helper()
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	fields := []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"}, {Name: ":authority", Value: authority}, {Name: ":path", Value: "/x"}}
	for _, h := range hosts {
		fields = append(fields, hpack.HeaderField{Name: "host", Value: h})
	}
	if token != "" {
		fields = append(fields, hpack.HeaderField{Name: "authorization", Value: "Bearer " + token})
	}
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	status, body := 0, ""
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == ":status" {
			status = atoi(f.Value)
		}
	})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					t.Fatal(err)
				}
			}
		case *http2.HeadersFrame:
			if _, err := dec.Write(f.HeaderBlockFragment()); err != nil {
				t.Fatal(err)
			}
			if f.StreamEnded() {
				return status, body
			}
		case *http2.DataFrame:
			body += string(f.Data())
			if f.StreamEnded() {
				return status, strings.TrimSpace(body)
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			t.Fatalf("the server ended the stream: %v", f)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
