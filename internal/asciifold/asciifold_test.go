package asciifold

import (
	"strings"
	"testing"
)

func TestEqualFold(t *testing.T) {
	for _, tt := range []struct {
		name string
		s, t string
		want bool
	}{
		{"same", "websocket", "websocket", true},
		{"upper", "WebSocket", "websocket", true},
		{"all-upper", "AT+JWT", "at+jwt", true},
		{"empty", "", "", true},
		{"long-s", "webſocket", "websocket", false},
		{"kelvin", "webſoc\u212aet", "websocket", false},
		{"kelvin-alone", "\u212a", "k", false},
		{"long-s-alone", "ſ", "s", false},
		{"dotted-i", "İ", "i", false},
		{"non-ascii-same", "joſe", "joſe", true},
		{"non-ascii-case", "é", "É", false}, // not ASCII: bytes must match
		{"length", "bearer", "bearer ", false},
		{"case-bit-not-letter", "@", "`", false}, // 0x40 and 0x60
		{"case-bit-bracket", "[", "{", false},
		{"case-bit-digit", "1", "\x11", false},
		{"case-bit-high", "\xc1", "\xe1", false},
		{"letter-and-not", "a", "!", false},
		{"other-letter", "Bearer", "Xearer", false}, // both letters, not one case of the other
		{"other-letter-upper", "A", "b", false},
		{"first-letter", "A", "a", true},
		{"last-letter", "Z", "z", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := EqualFold(tt.s, tt.t); got != tt.want {
				t.Errorf("EqualFold(%q, %q) = %v, want %v", tt.s, tt.t, got, tt.want)
			}
			if got := EqualFold(tt.t, tt.s); got != tt.want {
				t.Errorf("EqualFold(%q, %q) = %v, want %v", tt.t, tt.s, got, tt.want)
			}
		})
	}
}

func TestHasPrefixFold(t *testing.T) {
	for _, tt := range []struct {
		name      string
		s, prefix string
		want      bool
	}{
		{"bearer", "Bearer x", "bearer ", true},
		{"upper", "BEARER x", "Bearer ", true},
		{"short", "Bear", "Bearer ", false},
		{"empty-prefix", "x", "", true},
		{"long-s", "application/ſecevent+jwt", "application/s", false},
		{"kelvin", "to\u212aen", "token", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := HasPrefixFold(tt.s, tt.prefix); got != tt.want {
				t.Errorf("HasPrefixFold(%q, %q) = %v, want %v", tt.s, tt.prefix, got, tt.want)
			}
		})
	}
}

func TestToLower(t *testing.T) {
	for _, tt := range []struct {
		name, s, want string
	}{
		{"lower", "example.com", "example.com"},
		{"upper", "EXAMPLE.Com", "example.com"},
		{"kelvin-kept", "\u212aelvin.example", "\u212aelvin.example"},
		{"dotted-i-kept", "\u0130nfo", "\u0130nfo"},
		{"non-ascii-upper-kept", "\u00c9A", "\u00c9a"},
		{"last-letter", "Zone", "zone"},
		{"last-letter-later", "aZ", "az"},
		{"empty", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToLower(tt.s); got != tt.want {
				t.Errorf("ToLower(%q) = %q, want %q", tt.s, got, tt.want)
			}
		})
	}
}

func TestDisagree(t *testing.T) {
	for _, tt := range []struct {
		name string
		s, t string
		want bool
	}{
		{"ascii-equal", "Hash", "hash", false},
		{"ascii-unequal", "Hash", "Cash", false},
		{"long-s", "Haſh", "Hash", true},
		{"kelvin", "to\u212aen", "token", true},
		{"both-folds", "ACCEſS_TOKEN", "access_token", true},
		{"non-ascii-same", "joſe", "joſe", false},
		{"non-ascii-other", "jo\u00dfe", "jose", false}, // ß folds to no ASCII letter
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Disagree(tt.s, tt.t); got != tt.want {
				t.Errorf("Disagree(%q, %q) = %v, want %v", tt.s, tt.t, got, tt.want)
			}
		})
	}
}

// FuzzEqualFold checks EqualFold against strings.EqualFold: on ASCII input
// they agree, on any input EqualFold implies strings.EqualFold and equal
// lengths, and Disagree is exactly where they differ.
func FuzzEqualFold(f *testing.F) {
	for _, s := range [][2]string{
		{"websocket", "WebSocket"}, {"webſocket", "websocket"}, {"\u212a", "k"},
		{"@", "`"}, {"at+jwt", "AT+JWT"}, {"\xff", "\xfe"}, {"", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, s, u string) {
		got, uni := EqualFold(s, u), strings.EqualFold(s, u)
		if ascii(s) && ascii(u) && got != uni {
			t.Fatalf("EqualFold(%q, %q) = %v, strings.EqualFold %v", s, u, got, uni)
		}
		if got && (!uni || len(s) != len(u)) {
			t.Fatalf("EqualFold(%q, %q) = true, strings.EqualFold %v", s, u, uni)
		}
		if d := Disagree(s, u); d != (uni && !got) {
			t.Fatalf("Disagree(%q, %q) = %v, want %v", s, u, d, uni && !got)
		}
		if got != EqualFold(u, s) {
			t.Fatalf("EqualFold(%q, %q) is not symmetric", s, u)
		}
		if want := ToLower(s) == ToLower(u); got != want {
			t.Fatalf("EqualFold(%q, %q) = %v, ASCII lower-casing says %v", s, u, got, want)
		}
		if HasPrefixFold(s, u) != (len(s) >= len(u) && EqualFold(s[:len(u)], u)) {
			t.Fatalf("HasPrefixFold(%q, %q) is not EqualFold of the prefix", s, u)
		}
	})
}

// BenchmarkEqualFold compares EqualFold with strings.EqualFold on the ASCII
// words server/extract.go compares on every request, one input at a time.
func BenchmarkEqualFold(b *testing.B) {
	for _, in := range [][2]string{
		{"Bearer", "bearer"}, // a scheme in another case
		{"x-forwarded-client-cert", "X-Forwarded-Client-Cert"}, // a header name
		{"authorization", "x-request-id"},                      // different words
	} {
		for _, bb := range []struct {
			name string
			fold func(s, t string) bool
		}{
			{"strings", strings.EqualFold},
			{"asciifold", EqualFold},
		} {
			b.Run(in[0]+"/"+bb.name, func(b *testing.B) {
				for b.Loop() {
					bb.fold(in[0], in[1])
				}
			})
		}
	}
}
