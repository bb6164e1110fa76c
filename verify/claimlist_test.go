package verify_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestExtractedListElementsReadAsOne: an array of strings is sent as its
// elements joined by spaces, so an element that an application's list
// split cuts in two must make the header empty, as ["eng admin"] does.
// Go's strings.Fields, Python's str.split() and JavaScript's /\s+/ cut at
// Unicode white space (U+00A0, U+2000..U+200A, U+3000, ...); Python and
// Node decode header bytes as Latin-1, where the bytes 0x85 and 0xA0 of
// any UTF-8 sequence (à is C3 A0) are white space. A group the user named
// "eng\u00a0admin" or "engàadmin" made the application read the group
// "admin", which the token does not hold.
func TestExtractedListElementsReadAsOne(t *testing.T) {
	fieldsUTF8 := strings.Fields
	fieldsLatin1 := func(v string) []string {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			b.WriteRune(rune(v[i])) // Latin-1: one rune per byte
		}
		return strings.FieldsFunc(b.String(), func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == 0x85 || r == 0xa0 || (r >= 0x1c && r <= 0x1f)
		})
	}
	for _, tc := range []struct{ name, groups string }{
		{"nbsp", `["eng\u00a0admin"]`},
		{"en-quad", `["eng\u2000admin"]`},
		{"ideographic-space", `["eng\u3000admin"]`},
		{"line-separator", `["eng\u2028admin"]`},
		{"a-grave-latin1", `["eng\u00e0admin"]`},  // C3 A0
		{"a-ring-latin1", `["eng\u00c5admin"]`},   // C3 85
		{"byte-order-mark", `["eng\ufeffadmin"]`}, // white space to JavaScript's \s, not to unicode.IsSpace
		{"with-a-real-group", `["users","eng\u00a0admin"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(t), ExtractClaims: []string{"groups"}}}})
			payload := `{"iss":"` + issA + `","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `,"sub":"bob","groups":` + tc.groups + `}`
			res, err := v.Verify(context.Background(), signRaw(t, "EdDSA", `{"alg":"EdDSA","kid":"k-EdDSA"}`, payload))
			if err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			h := res.Extracted["groups"]
			if h != "" {
				t.Errorf("groups %s sent as %q, want empty", tc.groups, h)
			}
			for reader, fields := range map[string]func(string) []string{"utf-8": fieldsUTF8, "latin-1": fieldsLatin1} {
				if slices.Contains(fields(h), "admin") {
					t.Errorf("groups %s sent as %q: a %s list split reads %q, a group the token does not hold", tc.groups, h, reader, fields(h))
				}
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		// Non-ASCII elements without such a byte are sent as they are.
		v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(t), ExtractClaims: []string{"groups"}}}})
		payload := `{"iss":"` + issA + `","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `,"sub":"bob","groups":["caf\u00e9","\u00fcber"]}`
		res, err := v.Verify(context.Background(), signRaw(t, "EdDSA", `{"alg":"EdDSA","kid":"k-EdDSA"}`, payload))
		if err != nil {
			t.Fatalf("Verify() = %v, want nil", err)
		}
		if got := res.Extracted["groups"]; got != "café über" {
			t.Errorf("groups sent as %q, want %q", got, "café über")
		}
	})
}

// TestExtractedScopeStringsReadAsOne: a space-separated scope string, in
// scope or in scp (Entra's name for it), whose scopes hold other white
// space is sent empty, as an array element holding it is: the policy splits
// at U+0020 only, an application's split would read scopes it did not.
func TestExtractedScopeStringsReadAsOne(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(t), ExtractClaims: []string{"scope", "scp"}}}})
	for _, tc := range []struct{ name, value, want string }{
		{"nbsp", `"orders:read eng\u00a0admin"`, ""},
		{"byte-order-mark", `"orders:read eng\ufeffadmin"`, ""},
		{"plain", `"orders:read orders:write"`, "orders:read orders:write"},
	} {
		for _, claim := range []string{"scope", "scp"} {
			t.Run(tc.name+"/"+claim, func(t *testing.T) {
				payload := `{"iss":"` + issA + `","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `,"sub":"bob","` + claim + `":` + tc.value + `}`
				res, err := v.Verify(context.Background(), signRaw(t, "EdDSA", `{"alg":"EdDSA","kid":"k-EdDSA"}`, payload))
				if err != nil {
					t.Fatalf("Verify() = %v, want nil", err)
				}
				if got := res.Extracted[claim]; got != tc.want {
					t.Errorf("%s %s sent as %q, want %q", claim, tc.value, got, tc.want)
				}
			})
		}
	}
}

// TestExtractedLoneSurrogates: JSON lets a string hold a lone surrogate
// escape, which decodes to U+FFFD: "bob\ud800", "bob\udfff" and
// "bob\ufffd" are three different claim values that were sent as one
// header value, "bob\ufffd". A value that must change to become a header
// value is sent empty.
func TestExtractedLoneSurrogates(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(t), ExtractClaims: []string{"name", "groups"}}}})
	for _, tc := range []struct{ name, groups, want string }{
		{`"bob\ud800"`, `["a\udfff"]`, ""},
		{`"bob\udbff\u0041"`, `["a\ud800x"]`, ""},
		{`"bob\ufffd"`, `["a\ud83d\ude00"]`, "bob\ufffd"}, // a real U+FFFD and a real pair stay
	} {
		payload := `{"iss":"` + issA + `","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `,"sub":"s","name":` + tc.name + `,"groups":` + tc.groups + `}`
		res, err := v.Verify(context.Background(), signRaw(t, "EdDSA", `{"alg":"EdDSA","kid":"k-EdDSA"}`, payload))
		if err != nil {
			t.Fatalf("Verify(name %s) = %v, want nil", tc.name, err)
		}
		if got := res.Extracted["name"]; got != tc.want {
			t.Errorf("name %s sent as %q, want %q", tc.name, got, tc.want)
		}
		wantGroups := ""
		if tc.want != "" {
			wantGroups = "a\U0001F600"
		}
		if got := res.Extracted["groups"]; got != wantGroups {
			t.Errorf("groups %s sent as %q, want %q", tc.groups, got, wantGroups)
		}
	}
}
