package policy_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"net/url"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// FuzzSelect feeds raw request targets through the normalizer and the
// route matcher: no panic; an encoded '/', a '\' or a NUL is always
// ErrAmbiguousPath; a path with a dot or an empty segment in any spelling
// is ErrAmbiguousPath and no route, named policy or default allows it; a
// normalized path has as many segments as the target; and the route chosen
// is the one a plain string comparison of the normalized path chooses.
func FuzzSelect(f *testing.F) {
	for _, s := range []string{"/admin", "/public/../admin", "/public/%2e%2e/admin", "/public/%2E%2E/admin", "/public%2F..%2Fadmin",
		"/public/..%5Cadmin", "//admin", "/admin/", "/administrator", "/items/1/detail", "/public/./x", "/%61dmin/x", "/public\x00/../admin",
		"/orders/1?x=/admin", "/a/../../admin", "/public/..;/admin", "/admin/%2e%2e/anon/x", "//anon/admin/secret", "/admin//../anon/x",
		"/admin/x/../../public/y", "/public/.%2E/admin", "http://h//admin", "/public/%7e/x"} {
		f.Add(s)
	}
	s := mustSet(f, policy.Options{
		Policies: []policy.Spec{{Name: "admin"}, {Name: "public"}, {Name: "item"}, {Name: "fallback"}},
		Routes: []policy.Route{
			{Path: "/admin/**", Policy: "admin"},
			{Path: "/public/**", Policy: "public"},
			{Path: "/items/*/detail", Policy: "item"},
		},
		DefaultPolicy: "fallback",
	})
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := request.FromParts("GET", "https", "h", raw)
		path, _, _ := strings.Cut(raw, "?")
		path, _, _ = strings.Cut(path, "#")
		// The oracle reads the path only: an absolute-form target's
		// authority is not routed (the Host header is), so a NUL there is
		// not a path's.
		p := absolutePath(path)
		lower := strings.ToLower(p)
		if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%00") ||
			strings.ContainsAny(p, "\\\x00") {
			if !errors.Is(err, request.ErrAmbiguousPath) {
				t.Fatalf("FromParts(%q) = %q, %v; want ErrAmbiguousPath", raw, o.Path, err)
			}
			return
		}
		if dotOrEmptySegment(path) {
			if !errors.Is(err, request.ErrAmbiguousPath) {
				t.Fatalf("FromParts(%q) = %q, %v; want ErrAmbiguousPath (a dot or empty segment)", raw, o.Path, err)
			}
			for _, name := range []string{"", "admin", "public", "fallback"} {
				if c, cerr := s.Choose(name, o, err); !errors.Is(cerr, policy.ErrAmbiguous) || !errors.Is(cerr, verify.ErrForbidden) {
					t.Fatalf("Choose(%q, %q) = %v, %v; want ErrAmbiguous", name, raw, c.Policy.Name(), cerr)
				}
			}
			return
		}
		if err != nil {
			if !errors.Is(err, request.ErrAmbiguous) {
				t.Fatalf("FromParts(%q) error %v is not ErrAmbiguous", raw, err)
			}
			return
		}
		if strings.HasPrefix(path, "/") && strings.Count(o.Path, "/") != strings.Count(path, "/") {
			t.Fatalf("FromParts(%q).Path = %q: the segments changed", raw, o.Path)
		}
		if !strings.HasPrefix(o.Path, "/") || o.Path == "/.." || strings.HasPrefix(o.Path, "/../") || strings.Contains(o.Path, "/../") || strings.HasSuffix(o.Path, "/..") {
			t.Fatalf("FromParts(%q).Path = %q climbs or keeps a dot segment", raw, o.Path)
		}
		want := "fallback"
		segs := strings.Split(o.Path[1:], "/")
		switch {
		case o.Path == "/admin" || strings.HasPrefix(o.Path, "/admin/"):
			want = "admin"
		case o.Path == "/public" || strings.HasPrefix(o.Path, "/public/"):
			want = "public"
		case len(segs) == 3 && segs[0] == "items" && segs[1] != "" && segs[2] == "detail":
			want = "item"
		}
		if got := s.Select(o).Name(); got != want {
			t.Fatalf("Select(%q → %q) = %q, want %q", raw, o.Path, got, want)
		}
	})
}

// FuzzClaimMatch feeds claim values (untrusted JSON from a signed token)
// to the claim matcher, the scope reader and the claim scanner: no panic,
// and a number equals the configured one exactly when big.Rat says so.
func FuzzClaimMatch(f *testing.F) {
	for _, s := range []string{`3`, `3.0`, `30e-1`, `-0`, `"3"`, `[1,"x",3]`, `true`, `"a b"`, `["a",["b"]]`, `1e999999999999999`, `0.3e1`, `{"a":3}`} {
		f.Add(s, "3")
	}
	f.Fuzz(func(t *testing.T, value, want string) {
		claims := `{"v":` + value + `,"scope":` + value + `}`
		if !json.Valid([]byte(claims)) || !json.Valid([]byte(want)) {
			return
		}
		num := json.Number(want)
		if _, err := num.Float64(); err != nil || strings.ContainsAny(want, " \t\r\n") {
			return
		}
		s, err := policy.New(policy.Options{Policies: []policy.Spec{
			{Name: "n", Claims: []policy.Claim{{Claim: "v", Equals: num}}},
			{Name: "s", Scopes: policy.Scopes{Any: []string{"a"}}},
		}})
		if err != nil {
			return // a number beyond the exponent bound
		}
		res := &verify.Result{Claims: json.RawMessage(claims)}
		pn, _ := s.Lookup("n")
		got := pn.Evaluate(res, policy.Request{}) == nil
		wantEq := false
		if r1, ok := ratOf(strings.TrimSpace(value)); ok && !strings.ContainsAny(value, "[\"{tfn") {
			if r2, ok := new(big.Rat).SetString(want); ok {
				wantEq = r1.Cmp(r2) == 0
			}
		}
		if strings.HasPrefix(strings.TrimSpace(value), "[") {
			return // arrays: any element; checked by the table tests
		}
		if got != wantEq {
			t.Fatalf("claim %s equals %s = %v, want %v", value, want, got, wantEq)
		}
		ps, _ := s.Lookup("s")
		_ = ps.Evaluate(res, policy.Request{})
	})
}

// ratOf reads a JSON number exactly; a zero mantissa is zero whatever its
// exponent, even one big.Rat cannot hold.
func ratOf(v string) (*big.Rat, bool) {
	if r, ok := new(big.Rat).SetString(v); ok {
		return r, true
	}
	if m, _, found := strings.Cut(strings.ToLower(v), "e"); found {
		if r, ok := new(big.Rat).SetString(m); ok && r.Sign() == 0 {
			return r, true
		}
	}
	return nil, false
}

// dotOrEmptySegment reports whether path, with every escape decoded (an
// encoded '/' is refused before this is asked), holds a "." or ".." segment
// or an empty one before the last: the oracle FuzzSelect holds
// request.NormalizePath to, written without its code.
func dotOrEmptySegment(path string) bool {
	path = absolutePath(path)
	if !strings.HasPrefix(path, "/") {
		return false
	}
	dec, err := url.PathUnescape(path)
	if err != nil {
		return false // a malformed escape: refused anyway
	}
	segs := strings.Split(dec[1:], "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." || (seg == "" && i < len(segs)-1) {
			return true
		}
	}
	return false
}

// absolutePath returns the path of an absolute-form target ("http://h/p"
// is "/p", "http://h" is ""), and any other target as it is.
func absolutePath(target string) string {
	lower := strings.ToLower(target)
	for _, scheme := range []string{"http://", "https://"} {
		if strings.HasPrefix(lower, scheme) {
			rest := target[len(scheme):]
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				return rest[i:]
			}
			return ""
		}
	}
	return target
}
