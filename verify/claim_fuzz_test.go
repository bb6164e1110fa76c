package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/verify"
)

// FuzzClaimValues holds Result.Claim and Result.ClaimValues, the one-pass
// scanner that policies, claim headers and minting read claims with, to
// encoding/json on every claims set the verifier accepts: each top-level
// member encoding/json reads is found, with exactly the JSON text
// encoding/json holds for it; a name it does not read is absent; and a
// verifier that indexed the claims (Options.IndexClaims) answers as one
// that scans. The claims set begins with what the issuer requires and
// goes on with the fuzzed text, so that most inputs are accepted.
func FuzzClaimValues(f *testing.F) {
	for _, s := range []struct{ tail, name string }{
		{`,"sub":"alice","scp":["a","b"]}`, "sub"},
		{`,"\u0073ub":"escaped-name","x":{"sub":"nested"}}`, "sub"},
		{`,"roles":[{"a":"}"},"\"]"],"n":-1.5e3 , "e" : "\u00e9\ud83d\ude00"}`, "roles"},
		{`,"\ud800":1,"a\"b":"q","":true}`, "\ufffd"},
		{`,"x":[[[[]]]],"y":null,"z":false}`, "z"},
		{` , "sub" : "spaced" } `, "sub"},
		{`,"sub":"a","sub":"b"}`, "sub"},
		{`}`, "iss"},
	} {
		f.Add(s.tail, s.name)
	}
	indexed := []string{"sub", "scp", "roles", "x", "\u00e9", ""}
	plain := newVerifier(f, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(f), Audiences: []string{aud}, AllowHMAC: true}}})
	index := newVerifier(f, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(f), Audiences: []string{aud}, AllowHMAC: true}},
		IndexClaims: indexed})
	f.Fuzz(func(t *testing.T, tail, name string) {
		payload := `{"iss":"` + issA + `","aud":"` + aud + `","exp":1900000000` + tail
		tok := signRaw(t, "HS256", `{"alg":"HS256","kid":"k-HS256"}`, payload)
		res, err := plain.Verify(context.Background(), tok)
		res2, err2 := index.Verify(context.Background(), tok)
		if verify.Class(err) != verify.Class(err2) {
			t.Fatalf("Verify() = %v; with IndexClaims %v", err, err2)
		}
		if err != nil {
			return
		}
		var std map[string]json.RawMessage
		if err := json.Unmarshal(res.Claims, &std); err != nil {
			t.Fatalf("encoding/json refuses accepted claims %q: %v", res.Claims, err)
		}
		names := []string{name}
		for n := range std {
			names = append(names, n)
		}
		names = append(names, indexed...)
		slices.Sort(names)
		names = slices.Compact(names)
		for _, n := range names {
			raw, want := std[n]
			got, ok := res.Claim(n)
			if ok != want || got != string(raw) {
				t.Fatalf("Claim(%q) = %q, %v; encoding/json reads %q, %v (claims %s)", n, got, ok, raw, want, res.Claims)
			}
			got2, ok2 := res2.Claim(n)
			if ok2 != ok || got2 != got {
				t.Fatalf("Claim(%q) with IndexClaims = %q, %v; scanning %q, %v (claims %s)", n, got2, ok2, got, ok, res.Claims)
			}
		}
		// Every name at once (more than 8 allocates its spans), in both.
		for _, r := range []*verify.Result{res, res2} {
			out := make([]string, len(names))
			found := r.ClaimValues(names, out)
			n := 0
			for i, name := range names {
				if raw, ok := std[name]; ok {
					n++
					if out[i] != string(raw) {
						t.Fatalf("ClaimValues()[%q] = %q; encoding/json reads %q (claims %s)", name, out[i], raw, res.Claims)
					}
				} else if out[i] != "" {
					t.Fatalf("ClaimValues()[%q] = %q; encoding/json reads none (claims %s)", name, out[i], res.Claims)
				}
			}
			if found != n {
				t.Fatalf("ClaimValues() found %d of %q; encoding/json reads %d (claims %s)", found, names, n, res.Claims)
			}
		}
	})
}

// FuzzExtracted holds Result.Extracted, the claim values the server puts
// in headers for the upstream, to its rule (verify.MaxExtractedLen,
// headerValue) read against encoding/json: a claim present is in the map,
// one absent is not; a value sent is a valid header value without
// surrounding spaces, at most MaxExtractedLen bytes, and exactly what
// encoding/json reads: a string's text, an array of strings joined by
// single spaces (no element that a list split at white space would cut),
// a number's literal, anything else its compact JSON (an empty element
// of a scope list is no scope); null is sent empty, as no value. Two claims that
// differ never become the same header: a value that would have to change
// is sent empty.
func FuzzExtracted(f *testing.F) {
	for _, s := range []string{
		`,"sub":"alice","scp":["a","b"],"scope":"read write","roles":{"x" : [1, 2]}}`,
		`,"sub":"ad\u0000min","scp":["eng admin"],"scope":"a\u00a0b","roles":1.50e3}`,
		`,"sub":" alice","scp":["\u00e0"],"scope":"a  b","roles":[1,"x"]}`,
		`,"sub":"\ud800","scp":[],"scope":"","roles":null}`,
		`,"sub":"a\tb","scp":["a,b"],"scope":"a\u2028b","roles":true}`,
	} {
		f.Add(s)
	}
	names := []string{"sub", "scp", "scope", "roles"}
	v := newVerifier(f, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(f), Audiences: []string{aud}, AllowHMAC: true,
		ExtractClaims: names}}})
	f.Fuzz(func(t *testing.T, tail string) {
		payload := `{"iss":"` + issA + `","aud":"` + aud + `","exp":1900000000` + tail
		res, err := v.Verify(context.Background(), signRaw(t, "HS256", `{"alg":"HS256","kid":"k-HS256"}`, payload))
		if err != nil {
			return
		}
		var std map[string]json.RawMessage
		if err := json.Unmarshal(res.Claims, &std); err != nil {
			t.Fatalf("encoding/json refuses accepted claims %q: %v", res.Claims, err)
		}
		for _, name := range names {
			raw, present := std[name]
			got, ok := res.Extracted[name]
			if ok != present {
				t.Fatalf("Extracted[%q] = %q, %v; encoding/json reads %q, %v", name, got, ok, raw, present)
			}
			if string(raw) == "null" && got != "" {
				t.Fatalf("Extracted[%q] = %q for null: no value is sent empty, as an absent claim", name, got)
			}
			if got == "" {
				continue
			}
			if !httpguts.ValidHeaderFieldValue(got) || strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") || len(got) > verify.MaxExtractedLen {
				t.Fatalf("Extracted[%q] = %q: not a header value as it is", name, got)
			}
			var want string
			var s string
			var items []string
			var num json.Number
			switch {
			case json.Unmarshal(raw, &s) == nil:
				want = s
				if name == "scp" || name == "scope" {
					items = strings.Split(s, " ")
				}
			case json.Unmarshal(raw, &items) == nil:
				want = strings.Join(items, " ")
			case json.Unmarshal(raw, &num) == nil:
				want = string(raw)
			default:
				var b bytes.Buffer
				if err := json.Compact(&b, raw); err != nil {
					t.Fatal(err)
				}
				want = b.String()
			}
			if got != want {
				t.Fatalf("Extracted[%q] = %q; encoding/json reads %s as %q", name, got, raw, want)
			}
			for _, it := range items {
				if it != "" && len(strings.Fields(it)) != 1 || strings.ContainsAny(it, "\u0085\u00a0") || strings.ContainsRune(it, '\ufeff') ||
					bytes.ContainsAny([]byte(it), "\x85\xa0") {
					t.Fatalf("Extracted[%q] = %q: element %q is cut by a list split", name, got, it)
				}
			}
		}
	})
}
