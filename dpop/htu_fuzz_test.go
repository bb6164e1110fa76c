package dpop

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// FuzzHTU holds a proof's htu reading (checkHTU's normalizeHTU, which the
// signature check keeps FuzzCheck from reaching) to the request it is
// compared with: the URL of any request FromParts accepts (Original.URL)
// reads back as itself, so a client that names the request's own URL
// passes; an htu read is a fixed point, with no query or fragment, whose
// host is the htu's as net/url reads it (lower case, one trailing dot
// dropped) and whose port is the htu's unless it is the scheme's default.
func FuzzHTU(f *testing.F) {
	for _, s := range [][4]string{
		{"https", "api.example.com", "/orders/1?x=1", "https://API.example.com:443/orders/1?x=2#f"},
		{"http", "[::1]:8080", "/a/%7Eb", "http://[::1]:8080/a/~b"},
		{"https", "h.example.:8443", "/", "HTTPS://h.example.:8443"},
		{"https", "10.0.0.1", "/a%2fb", "https://user@10.0.0.1/"},
		{"http", "h", "/%41", "http://h:80/%41"},
		{"https", "h", "/a/../b", "https://h/a/./b"},
		{"https", "bücher.example", "/", "https://xn--bcher-kva.example/"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, scheme, host, target, htu string) {
		// A request's own URL reads as itself. A request without a host
		// (FromParts accepts one: no route naming a host matches it) has
		// no absolute URL ("http:///"): no proof can name it, and
		// normalizeHTU refuses that URL, as it must.
		if o, err := request.FromParts("GET", scheme, host, target); err == nil && o.Scheme != "" && o.Host != "" {
			if got, err := normalizeHTU(o.URL()); err != nil || got != o.URL() {
				t.Fatalf("normalizeHTU(%q) = %q, %v; the request's own URL must read as itself", o.URL(), got, err)
			}
		}
		got, err := normalizeHTU(htu)
		if err != nil {
			return
		}
		if again, err := normalizeHTU(got); err != nil || again != got {
			t.Fatalf("normalizeHTU(%q) = %q, then %q, %v", htu, got, again, err)
		}
		u, err := url.Parse(htu)
		if err != nil {
			t.Fatalf("normalizeHTU(%q) = %q; net/url refuses it: %v", htu, got, err)
		}
		g, err := url.Parse(got)
		if err != nil || g.RawQuery != "" || g.Fragment != "" || strings.ContainsAny(got, "?#") {
			t.Fatalf("normalizeHTU(%q) = %q: a query or fragment, or no URL (%v)", htu, got, err)
		}
		if want := strings.TrimSuffix(strings.ToLower(u.Hostname()), "."); g.Hostname() != want {
			t.Fatalf("normalizeHTU(%q) = %q: host %q, net/url reads %q", htu, got, g.Hostname(), want)
		}
		port := u.Port()
		if (strings.EqualFold(u.Scheme, "http") && port == "80") || (strings.EqualFold(u.Scheme, "https") && port == "443") {
			port = ""
		}
		if g.Port() != port {
			t.Fatalf("normalizeHTU(%q) = %q: port %q, net/url reads %q", htu, got, g.Port(), u.Port())
		}
	})
}

// TestHTUHostNoRequestCanName: an htu whose host no request can name is
// refused as such. "https://." and "http://:" read as the empty host and
// were normalized to "https:///", which is no absolute URI any more (the
// reading was not a fixed point: FuzzHTU); "a%20b" read as "a b".
func TestHTUHostNoRequestCanName(t *testing.T) {
	tests := []struct {
		htu, want string // want "" = refused
	}{
		{"https://API.example.com:443/a?x=1#f", "https://api.example.com/a"},
		{"http://[::1]:8080/a", "http://[::1]:8080/a"},
		{"https://h.example./", "https://h.example/"},
		{"https://.", ""},
		{"http://:", ""},
		{"https://:443/", ""},
		{"https://a%20b/", ""},
		{"https://127.1/", ""},
		{"https://[::ffff:127.0.0.1]/", ""},
	}
	for _, tt := range tests {
		t.Run(tt.htu, func(t *testing.T) {
			got, err := normalizeHTU(tt.htu)
			if (err == nil) != (tt.want != "") || got != tt.want {
				t.Fatalf("normalizeHTU(%q) = %q, %v; want %q", tt.htu, got, err, tt.want)
			}
		})
	}
}
