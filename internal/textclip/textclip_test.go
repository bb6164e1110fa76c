package textclip

import (
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"},   // é is two bytes: not cut inside it
		{"a€b", 3, "a"},  // € is three bytes
		{"a€b", 4, "a€"}, // whole
		{"€", 0, ""},
	} {
		got := Clip(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) || len(got) > tt.n && len(tt.s) > tt.n {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
