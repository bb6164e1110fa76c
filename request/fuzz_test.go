package request_test

import (
	"cmp"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// FuzzNormalizePath checks that a normalized path never climbs above '/',
// never holds what is always denied, is stable under a second
// normalization, keeps the segments of its input, and that every error is
// ErrAmbiguousPath; and that a path holding a dot segment ("." or "..") in
// any spelling, or an empty segment (a single trailing '/' is not one), is
// ErrAmbiguousPath: an application behind the proxy routes the raw path,
// and reads such a one differently (issue "Route authorization holds").
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/", "/a/../b", "/%2e%2e/x", "/a%2Fb", "/a\\b", "//a//b/", "/a/./b/.", "/public/..;/admin", "/admin;x/y", "/a#/../b", "/%7E", "/%zz",
		"/orders/1", "/a/b/", "/a/.b", "/a./b", "Shop.Example.COM:8443", "[::1]:80", "bücher.example.", "ÉCOLE.fr",
		"/admin/%2e%2e/anon/x", "/admin/../anon/x", "/admin/x/../../public/y", "//anon/admin/secret", "/admin//../anon/x",
		"/public/.%2E/admin", "/public/%2E./admin", "/a/%2e/b", "/a/.", "/a/%2E", "/a//", "/a/..", "/%2e", "/public/%7e/x", "/.well-known/x", "/a/...", "/a/%252e%252e/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := request.NormalizePath(in)
		// The allocation-free path for already-normal paths answers as the
		// full normalizer does.
		if full, ferr := request.NormalizePathFull(in); full != p || (ferr == nil) != (err == nil) {
			t.Fatalf("NormalizePath(%q) = %q, %v; the full normalizer gives %q, %v", in, p, err, full, ferr)
		}
		if h, full := request.NormalizeHost(in), request.NormalizeHostFull(in); h != full {
			t.Fatalf("NormalizeHost(%q) = %q; the full normalizer gives %q", in, h, full)
		}
		if dotOrEmptySegment(in) && !errors.Is(err, request.ErrAmbiguousPath) {
			t.Fatalf("NormalizePath(%q) = %q, %v; want ErrAmbiguousPath (a dot or an empty segment)", in, p, err)
		}
		if err != nil {
			if !errors.Is(err, request.ErrAmbiguousPath) {
				t.Fatalf("NormalizePath(%q) error %v is not ErrAmbiguousPath", in, err)
			}
			return
		}
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
			t.Fatalf("NormalizePath(%q) = %q: not one '/' between segments", in, p)
		}
		if in != "" && strings.Count(p, "/") != strings.Count(in, "/") {
			t.Fatalf("NormalizePath(%q) = %q: the segments changed (an empty segment merged?)", in, p)
		}
		if dotOrEmptySegment(p) {
			t.Fatalf("NormalizePath(%q) = %q holds a dot or an empty segment", in, p)
		}
		lower := strings.ToLower(p)
		for _, bad := range []string{"%2f", "%5c", "%00", "\\", "\x00", ";", "#"} {
			if strings.Contains(lower, bad) {
				t.Fatalf("NormalizePath(%q) = %q holds %q", in, p, bad)
			}
		}
		if strings.Contains(lower, "%2e") || strings.Contains(lower, "%7e") || strings.Contains(lower, "%41") {
			t.Fatalf("NormalizePath(%q) = %q keeps an unreserved escape", in, p)
		}
		if again, err := request.NormalizePath(p); err != nil || again != p {
			t.Fatalf("NormalizePath(%q) = %q, but normalizing that gives %q, %v", in, p, again, err)
		}
		for _, prefix := range []string{"/..", "/../"} {
			if p == prefix || strings.HasPrefix(p, "/../") {
				t.Fatalf("NormalizePath(%q) = %q climbs above '/'", in, p)
			}
		}
	})
}

// dotOrEmptySegment reports whether path, split at its raw '/' and each
// segment's escapes decoded, holds a "." or ".." segment, or an empty one
// other than the last (the single trailing '/' of "/a/"). It is the oracle
// FuzzNormalizePath holds NormalizePath to, written without its code.
func dotOrEmptySegment(path string) bool {
	if path == "" || path == "/" {
		return false
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, seg := range segs {
		if seg == "" && i < len(segs)-1 {
			return true
		}
		if d, err := url.PathUnescape(seg); err == nil && (d == "." || d == "..") {
			return true
		}
	}
	return false
}

// FuzzFromPartsHost checks that a host FromParts accepts is read alike by
// nginx (the host ends at the first ':'; ASCII letters lower-cased; one
// trailing '.' dropped) and by Go's net.SplitHostPort, with a port of
// digits only; that every host it refuses is ErrAmbiguousHost; and that a
// host it accepts which an IP parser reads as an address (Go's netip, or
// inet_aton's short, hex and octal forms) is that address's canonical
// spelling, never an IPv4-mapped IPv6 one: a route for the address sees
// every request that names it.
func FuzzFromPartsHost(f *testing.F) {
	for _, s := range []string{"api.example.com", "API.example.com.:8443", "admin.example.com:1:2", "admin.example.com:x:", "h:",
		"[::1]:80", "[::1", "[fe80::1%25eth0]", "\u212Aiosk.example.com", "a..b", ".", "", "svc_a:80", "10.0.0.1", "a,b", "u@h", "h:123456",
		"127.1", "0x7f.0.0.1", "0177.0.0.1", "127.000.000.001", "2130706433", "127.0.0.1.", "1.2.3", "0x1", "a1.example",
		"[0:0::1]", "[::0001]", "[::ffff:127.0.0.1]", "[::FFFF:7f00:1]:80", "[2001:DB8::1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		o, err := request.FromParts("GET", "", host, "/")
		if err != nil {
			if !errors.Is(err, request.ErrAmbiguousHost) {
				t.Fatalf("FromParts(host %q) error %v is not ErrAmbiguousHost", host, err)
			}
			return
		}
		for i := 0; i < len(o.Host); i++ {
			if c := o.Host[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._:", c) >= 0) {
				t.Fatalf("FromParts(host %q).Host = %q holds %q", host, o.Host, c)
			}
		}
		if strings.Trim(o.Port, "0123456789") != "" || len(o.Port) > 5 {
			t.Fatalf("FromParts(host %q).Port = %q", host, o.Port)
		}
		if !strings.HasPrefix(host, "[") {
			nginx, _, _ := strings.Cut(host, ":")
			if got := strings.TrimSuffix(strings.ToLower(nginx), "."); got != o.Host {
				t.Fatalf("FromParts(host %q).Host = %q; nginx reads %q", host, o.Host, got)
			}
		}
		if o.Port != "" {
			h, p, err := net.SplitHostPort(host)
			if err != nil || strings.TrimSuffix(strings.ToLower(h), ".") != o.Host || p != o.Port {
				t.Fatalf("FromParts(host %q) = %q, %q; net.SplitHostPort reads %q, %q, %v", host, o.Host, o.Port, h, p, err)
			}
		}
		name, _, _ := strings.Cut(host, ":")
		if strings.HasPrefix(host, "[") {
			name = host[1:strings.IndexByte(host, ']')]
		}
		if a, err := netip.ParseAddr(name); err == nil && (a.String() != o.Host || a.Is4In6()) {
			t.Fatalf("FromParts(host %q).Host = %q: netip reads %v, whose canonical spelling it is not", host, o.Host, a)
		}
		if a, ok := inetAton(strings.TrimSuffix(name, ".")); ok && (a.String() != o.Host || name != o.Host) {
			t.Fatalf("FromParts(host %q).Host = %q: inet_aton reads %v, whose canonical spelling it is not", host, o.Host, a)
		}
	})
}

// inetAton reads s as glibc's inet_aton does (one to four parts, each
// decimal, octal with a leading 0, or hex with 0x; the last part fills
// the remaining bytes), or reports false.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" && base != 16 {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(cmp.Or(p, "0"), base, 32)
		if err != nil || strings.ContainsAny(p, "+-_") {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
