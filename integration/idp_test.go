package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// This file holds the fault-injecting identity provider of the resilience
// tests: a Go HTTP server on 127.0.0.1 that serves OIDC discovery and a JWKS,
// whose keys, Cache-Control and behaviour each test scripts, and which
// records every request it sees (path, instance, start and end, what it
// served).

// Paths the fake IdP serves.
const (
	idpDiscoveryPath = "/.well-known/openid-configuration"
	idpJWKSPath      = "/jwks"
)

// Bounds of the fake IdP's misbehaviour: nothing it does lasts or grows
// without limit.
const (
	idpMaxHang      = 30 * time.Second // a hanging or dripping answer, at most
	idpHugeBytes    = 10 << 20         // the "10 MiB body"
	idpManyKeys     = 10_000           // the "10 000 keys" document
	idpDripEvery    = 50 * time.Millisecond
	idpMaxHits      = 100_000 // requests recorded, at most
	idpStopDeadline = 5 * time.Second
)

// behaviourKind is what the fake IdP does with one JWKS request.
type behaviourKind int

const (
	serveOK          behaviourKind = iota // 200 with the JWKS (or 304 to a matching If-None-Match)
	serveStatus                           // the status in behaviour.status, a short text body
	serveHang                             // no answer until the client gives up
	serveClose                            // the connection is closed without an answer
	serveTruncated                        // Content-Length of the full JWKS, half of it sent, then closed
	serveInvalidJSON                      // 200 with a body that is not JSON
	serveEmptySet                         // 200 {"keys":[]}
	serveHuge                             // 200 with a 10 MiB body, chunked (no Content-Length)
	serveManyKeys                         // 200 with 10 000 keys (under 1 MiB), the published keys last
	serveDrip                             // 200 with the JWKS, one byte per idpDripEvery
	serveRedirectTLS                      // 302 to the untrusted https twin
)

func (k behaviourKind) String() string {
	switch k {
	case serveOK:
		return "ok"
	case serveStatus:
		return "status"
	case serveHang:
		return "hang"
	case serveClose:
		return "close"
	case serveTruncated:
		return "truncated"
	case serveInvalidJSON:
		return "invalid-json"
	case serveEmptySet:
		return "empty-set"
	case serveHuge:
		return "huge"
	case serveManyKeys:
		return "many-keys"
	case serveDrip:
		return "drip"
	case serveRedirectTLS:
		return "redirect-tls"
	}
	return "unknown"
}

// behaviour scripts one answer.
type behaviour struct {
	kind   behaviourKind
	status int           // serveStatus
	delay  time.Duration // waited before answering (serveOK, serveStatus)
}

// idpHit is one request the fake IdP saw (or is answering: End == Start
// until it is done).
type idpHit struct {
	Path     string
	Instance string // the "instance" query parameter ("" when absent)
	Start    time.Time
	End      time.Time
	Kind     behaviourKind // what it was answered with
	Status   int           // the status sent (0 when none was)
	// Good: a usable JWKS (200) or a 304 was sent completely.
	Good bool
	// Done: the answer is over (End is final).
	Done bool
}

// fakeIdP is a scriptable identity provider on 127.0.0.1. Its methods are
// safe for concurrent use. It is stopped in t.Cleanup, which waits for every
// handler it started.
type fakeIdP struct {
	// Issuer is http://127.0.0.1:PORT: the issuer of its discovery document
	// and of the tokens its tests mint.
	Issuer string
	// JWKSURL is Issuer + /jwks.
	JWKSURL string

	addr  string           // 127.0.0.1:PORT, kept across Down and Up
	tls   *httptest.Server // the https twin, with a certificate nobody trusts
	done  chan struct{}    // closed at cleanup: releases hanging handlers
	loops sync.WaitGroup   // Serve loops

	mu           sync.Mutex
	stopped      bool
	active       int          // handlers running
	srv          *http.Server // nil while down
	keys         []testkeys.JWK
	cacheControl string
	etag         bool
	steady       behaviour   // the JWKS behaviour when the queue is empty
	queue        []behaviour // per-request behaviours, consumed first
	hits         []idpHit
	tlsConns     []time.Time // connections the https twin accepted
	hugeWritten  int64       // bytes of the last huge body that the client took

	padOnce sync.Once
	pad     [][]byte // the many-keys padding
}

// newFakeIdP starts a fake IdP publishing keys with Cache-Control
// cacheControl ("" sends none), answering every request normally.
func newFakeIdP(t *testing.T, cacheControl string, keys ...testkeys.JWK) *fakeIdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeIdP{
		addr:         ln.Addr().String(),
		done:         make(chan struct{}),
		keys:         keys,
		cacheControl: cacheControl,
	}
	p.Issuer = "http://" + p.addr
	p.JWKSURL = p.Issuer + idpJWKSPath
	p.tls = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.enter() {
			defer p.leave()
			p.serveJWKS(w, r)
		}
	}))
	p.tls.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake failures are the point
	p.tls.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.mu.Lock()
			p.tlsConns = append(p.tlsConns, time.Now())
			p.mu.Unlock()
		}
	}
	p.tls.StartTLS()
	p.serve(ln)
	t.Cleanup(func() { p.stop(t) })
	return p
}

// serve starts an http.Server on ln; the caller must not hold p.mu.
func (p *fakeIdP) serve(ln net.Listener) {
	srv := &http.Server{
		Handler:     http.HandlerFunc(p.route),
		ErrorLog:    log.New(io.Discard, "", 0),
		IdleTimeout: 10 * time.Second,
	}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	p.loops.Add(1)
	go func() {
		defer p.loops.Done()
		_ = srv.Serve(ln)
	}()
}

// enter admits a handler unless the IdP is stopping; leave must follow.
func (p *fakeIdP) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	p.active++
	return true
}

func (p *fakeIdP) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active--
}

// stop ends everything the IdP runs and waits for it.
func (p *fakeIdP) stop(t *testing.T) {
	p.mu.Lock()
	p.stopped = true
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	close(p.done)
	if srv != nil {
		srv.Close()
	}
	p.tls.Close()
	p.loops.Wait()
	deadline := time.Now().Add(idpStopDeadline)
	for {
		p.mu.Lock()
		active := p.active
		p.mu.Unlock()
		if active == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("fake IdP: %d handlers still running %v after stop", active, idpStopDeadline)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Down closes the listener and every connection: clients get "connection
// refused" until Up.
func (p *fakeIdP) Down() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Up listens again on the same address after Down.
func (p *fakeIdP) Up(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", p.addr)
		if err == nil {
			p.serve(ln)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake IdP: listen again on %s: %v", p.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SetKeys replaces the published keys.
func (p *fakeIdP) SetKeys(keys ...testkeys.JWK) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = keys
}

// SetETag turns ETag / If-None-Match revalidation on or off.
func (p *fakeIdP) SetETag(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.etag = on
}

// SetBehaviour sets the steady JWKS behaviour and drops any queued one.
func (p *fakeIdP) SetBehaviour(b behaviour) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.steady, p.queue = b, nil
}

// Next queues behaviours for the next JWKS requests, one each, before the
// steady behaviour applies again.
func (p *fakeIdP) Next(bs ...behaviour) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, bs...)
}

// Hits returns the requests seen so far on path ("" = every path).
func (p *fakeIdP) Hits(path string) []idpHit {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []idpHit
	for _, h := range p.hits {
		if path == "" || h.Path == path {
			out = append(out, h)
		}
	}
	return out
}

// CountSince returns how many requests to path started at or after since.
func (p *fakeIdP) CountSince(path string, since time.Time) int {
	n := 0
	for _, h := range p.Hits(path) {
		if !h.Start.Before(since) {
			n++
		}
	}
	return n
}

// LastGood returns the end of the last complete good JWKS answer (200 or
// 304), or the zero time.
func (p *fakeIdP) LastGood() time.Time {
	var last time.Time
	for _, h := range p.Hits(idpJWKSPath) {
		if h.Good && h.End.After(last) {
			last = h.End
		}
	}
	return last
}

// TLSConns returns when the https twin accepted connections.
func (p *fakeIdP) TLSConns() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.tlsConns...)
}

// TLSURL is the JWKS URL of the https twin, whose certificate the service
// does not trust.
func (p *fakeIdP) TLSURL() string { return p.tls.URL + idpJWKSPath }

// record appends a hit, bounded, and returns its index (-1 when not kept).
// A hit is recorded when its request arrives, with End = Start, and
// completed by finish.
func (p *fakeIdP) record(h idpHit) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.hits) >= idpMaxHits {
		return -1
	}
	p.hits = append(p.hits, h)
	return len(p.hits) - 1
}

// finish stores the completed hit i.
func (p *fakeIdP) finish(i int, h idpHit) {
	if i < 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hits[i] = h
}

// route dispatches discovery and JWKS requests; anything else is 404.
func (p *fakeIdP) route(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		return
	}
	defer p.leave()
	switch r.URL.Path {
	case idpDiscoveryPath:
		h := idpHit{Path: r.URL.Path, Start: time.Now(), Kind: serveOK, Status: http.StatusOK}
		h.End = h.Start
		i := p.record(h)
		doc, _ := json.Marshal(map[string]any{
			"issuer":                                p.Issuer,
			"jwks_uri":                              p.JWKSURL,
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
		w.Header().Set("Content-Type", "application/json")
		_, err := w.Write(doc)
		h.End, h.Good, h.Done = time.Now(), err == nil, true
		p.finish(i, h)
	case idpJWKSPath:
		p.serveJWKS(w, r)
	default:
		http.NotFound(w, r)
	}
}

// document returns the current JWKS, its ETag and the Cache-Control to send.
func (p *fakeIdP) document() (doc []byte, etag, cacheControl string, useETag bool) {
	p.mu.Lock()
	keys := append([]testkeys.JWK(nil), p.keys...)
	cacheControl, useETag = p.cacheControl, p.etag
	p.mu.Unlock()
	doc = testkeys.JWKS(keys...)
	sum := sha256.Sum256(doc)
	return doc, `"` + hex.EncodeToString(sum[:8]) + `"`, cacheControl, useETag
}

// nextBehaviour pops the queue or returns the steady behaviour.
func (p *fakeIdP) nextBehaviour() behaviour {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 {
		b := p.queue[0]
		p.queue = p.queue[1:]
		return b
	}
	return p.steady
}

// wait sleeps d unless the client leaves or the IdP stops; it reports
// whether the full time passed.
func (p *fakeIdP) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-p.done:
	}
	return false
}

// serveJWKS answers one JWKS request as scripted.
func (p *fakeIdP) serveJWKS(w http.ResponseWriter, r *http.Request) {
	b := p.nextBehaviour()
	h := idpHit{Path: idpJWKSPath, Instance: r.URL.Query().Get("instance"), Start: time.Now(), Kind: b.kind}
	h.End = h.Start
	i := p.record(h)
	defer func() {
		h.End, h.Done = time.Now(), true
		p.finish(i, h)
	}()
	doc, etag, cacheControl, useETag := p.document()
	if !p.wait(r, b.delay) {
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/jwk-set+json")
	if cacheControl != "" {
		hdr.Set("Cache-Control", cacheControl)
	}
	switch b.kind {
	case serveOK:
		if useETag {
			hdr.Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				h.Status, h.Good = http.StatusNotModified, true
				return
			}
		}
		hdr.Set("Content-Length", strconv.Itoa(len(doc)))
		h.Status = http.StatusOK
		_, err := w.Write(doc)
		h.Good = err == nil
	case serveStatus:
		h.Status = b.status
		http.Error(w, http.StatusText(b.status), b.status)
	case serveHang:
		p.wait(r, idpMaxHang)
	case serveClose:
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	case serveTruncated:
		hdr.Set("Content-Length", strconv.Itoa(len(doc)))
		h.Status = http.StatusOK
		_, _ = w.Write(doc[:len(doc)/2])
		// Returning short of Content-Length makes net/http close the
		// connection: the client reads an unexpected EOF.
	case serveInvalidJSON:
		h.Status = http.StatusOK
		_, _ = w.Write([]byte(`{"keys":[{"kty":"RSA",` + "\x00\xff not json"))
	case serveEmptySet:
		h.Status = http.StatusOK
		_, _ = w.Write([]byte(`{"keys":[]}`))
	case serveHuge:
		h.Status = http.StatusOK
		p.writeHuge(w, doc)
	case serveManyKeys:
		h.Status = http.StatusOK
		_, _ = w.Write(manyKeysDocument(p.manyKeysPadding(), p.currentKeys()))
	case serveDrip:
		hdr.Set("Content-Length", strconv.Itoa(len(doc)))
		h.Status = http.StatusOK
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		deadline := time.Now().Add(idpMaxHang)
		for i := 0; i < len(doc) && time.Now().Before(deadline); i++ {
			if _, err := w.Write(doc[i : i+1]); err != nil || rc.Flush() != nil {
				return
			}
			if !p.wait(r, idpDripEvery) {
				return
			}
		}
	case serveRedirectTLS:
		h.Status = http.StatusFound
		http.Redirect(w, r, p.TLSURL(), http.StatusFound)
	}
}

func (p *fakeIdP) currentKeys() []testkeys.JWK {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]testkeys.JWK(nil), p.keys...)
}

// writeHuge sends idpHugeBytes: a JWKS that starts with the real keys and
// goes on with padding keys, without Content-Length, until the client stops
// reading. It records how much the client took.
func (p *fakeIdP) writeHuge(w http.ResponseWriter, doc []byte) {
	pad := []byte(`{"kty":"RSA","kid":"` + strings.Repeat("p", 1000) + `","n":"AQAB","e":"AQAB"},`)
	written := int64(0)
	defer func() {
		p.mu.Lock()
		p.hugeWritten = written
		p.mu.Unlock()
	}()
	head := append([]byte(`{"keys":[`), bytes.TrimSuffix(bytes.TrimPrefix(doc, []byte(`{"keys":[`)), []byte(`]}`))...)
	head = append(head, ',')
	chunk := bytes.Repeat(pad, 64)
	n, err := w.Write(head)
	written += int64(n)
	if err != nil {
		return
	}
	for written < idpHugeBytes {
		n, err := w.Write(chunk)
		written += int64(n)
		if err != nil {
			return
		}
	}
	n, _ = w.Write(pad[:len(pad)-1])
	written += int64(n)
	n, _ = w.Write([]byte(`]}`))
	written += int64(n)
}

// HugeWritten is how many bytes of the last huge body the client accepted
// (socket buffers included).
func (p *fakeIdP) HugeWritten() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hugeWritten
}

// manyKeysPadding returns idpManyKeys small Ed25519 keys with distinct
// kids, built once per IdP.
func (p *fakeIdP) manyKeysPadding() [][]byte {
	p.padOnce.Do(func() {
		var k struct{ X string }
		_ = json.Unmarshal(testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.Ed25519B)}), &k)
		for i := range idpManyKeys {
			p.pad = append(p.pad, []byte(`{"kty":"OKP","crv":"Ed25519","kid":"j`+strconv.Itoa(i)+`","x":"`+k.X+`"}`))
		}
	})
	return p.pad
}

// manyKeysDocument returns a JWKS of idpManyKeys keys: padding keys first
// and keys last, so that the key-count bound (not the byte bound) is what a
// verifier meets.
func manyKeysDocument(pad [][]byte, keys []testkeys.JWK) []byte {
	parts := slices.Clone(pad[:max(idpManyKeys-len(keys), 0)])
	for _, k := range keys {
		parts = append(parts, testkeys.JWKJSON(k))
	}
	var b bytes.Buffer
	b.WriteString(`{"keys":[`)
	b.Write(bytes.Join(parts, []byte(",")))
	b.WriteString(`]}`)
	return b.Bytes()
}

// CheckManyKeys verifies the shape of the many-keys document for keys:
// 10 000 keys, under the default 1 MiB byte bound.
func (p *fakeIdP) CheckManyKeys(t *testing.T, keys []testkeys.JWK) {
	t.Helper()
	doc := manyKeysDocument(p.manyKeysPadding(), keys)
	var parsed struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatalf("many-keys document: %v", err)
	}
	if len(parsed.Keys) != idpManyKeys || len(doc) >= 1<<20 {
		t.Fatalf("many-keys document: %d keys in %d bytes, want %d keys under 1 MiB", len(parsed.Keys), len(doc), idpManyKeys)
	}
}

// describeHits renders hits for a log line: offset from t0, kind, status.
func describeHits(hits []idpHit, t0 time.Time) string {
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%+.2fs:%s/%d", h.Start.Sub(t0).Seconds(), h.Kind, h.Status)
	}
	return b.String()
}
