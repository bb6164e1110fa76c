package celexpr

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// lazyExprs exercise every way an expression reads claims and request:
// selection, index, presence, in, size, iteration, equality, conversion.
var lazyExprs = []string{
	`claims.tid == "t1" && claims.level >= 3 && request.method != "DELETE"`,
	`claims["tid"] == "t1"`,
	`has(claims.tid)`,
	`has(claims.nope)`,
	`"tid" in claims`,
	`"nope" in claims`,
	`claims.nope == "x"`,
	`size(claims) == 4`,
	`claims.exists(k, k == "groups")`,
	`claims.all(k, k != "admin")`,
	`claims == {"tid": "t1", "level": 3, "groups": ["dev", "ops"], "obj": {"a": 1, "b": null}}`,
	`{"tid": "t1"} == claims`,
	`claims.groups.exists(g, g == "ops")`,
	`"ops" in claims.groups`,
	`claims.obj.a == 1 && claims.obj.b == null`,
	`claims.level == 3.0 && claims.level > 2`,
	`claims.tid + "x" == "t1x"`,
	`claims.tid.startsWith("t")`,
	`string(claims.level) == "3"`,
	`type(claims) == map`,
	`request.path.startsWith("/orders/") && request.host == "api.example.com"`,
	`request["method"] == "GET" && "path" in request && !("x" in request)`,
	`size(request) == 3 && request.exists(k, k == "host")`,
	`request == {"method": "GET", "host": "api.example.com", "path": "/orders/1"}`,
	`request.nope == "x"`,
	`header.kid == "k1" && issuer == "https://a.example/"`,
	`dyn(claims)[1] == "x"`,
	`dyn(claims).tid == "t1"`,
}

var lazyClaims = []string{
	`{"tid":"t1","level":3,"groups":["dev","ops"],"obj":{"a":1,"b":null}}`,
	`{"tid":"t\u0031","level":3.0e0,"groups":[],"obj":{}}`,
	`{"tid":2,"level":"3","groups":"ops","obj":[1]}`,
	`{}`,
	`{"big":1e400,"level":-0}`,
	`{"admin":true,"tid":null}`,
}

// referenceEval evaluates p as the package did before lazy maps: every
// variable decoded into Go maps up front.
func referenceEval(p *program, res *verify.Result, o request.Original) (bool, error) {
	claims, _ := decodeObject(res.Claims) // empty when it does not decode, as before
	header, _ := decodeObject(res.Header)
	return p.run(map[string]any{
		"claims":  claims,
		"header":  header,
		"issuer":  res.ConfiguredIssuer,
		"request": map[string]string{"method": o.Method, "host": o.Host, "path": o.Path},
	})
}

func newResult(claims string) *verify.Result {
	return &verify.Result{ConfiguredIssuer: "https://a.example/", Claims: json.RawMessage(claims), Header: json.RawMessage(`{"alg":"ES256","kid":"k1"}`)}
}

var lazyRequest = request.Original{Method: "GET", Host: "api.example.com", Path: "/orders/1"}

// TestLazyMatchesDecoded holds the lazy claims and request maps to the full
// decoding they replace: the same value, or an error in both. A claims set
// encoding/json cannot read has no such reference (the old decoding saw it
// empty); TestUndecodableClaims covers it.
func TestLazyMatchesDecoded(t *testing.T) {
	var c Compiler
	for _, src := range lazyExprs {
		e, err := c.Compile(src, 10000)
		if err != nil {
			t.Fatalf("Compile(%s) = %v", src, err)
		}
		p := e.(*program)
		for _, claims := range lazyClaims {
			t.Run(src+"/"+claims, func(t *testing.T) {
				res := newResult(claims)
				got, gotErr := p.Eval(res, lazyRequest)
				want, wantErr := referenceEval(p, res, lazyRequest)
				if decodes(claims) && (got != want || (gotErr == nil) != (wantErr == nil)) {
					t.Fatalf("lazy = %v, %v; decoded = %v, %v", got, gotErr, want, wantErr)
				}
				if !bytes.Equal(res.Claims, []byte(claims)) {
					t.Fatalf("the evaluation modified the Result's claims")
				}
			})
		}
	}
}

// TestCompileAnalysis checks what compile derives from an expression: the
// claims it names (which the verifier indexes) and whether it needs the
// run-time cost tracker.
func TestCompileAnalysis(t *testing.T) {
	tests := []struct {
		src         string
		wantClaims  []string
		wantTracked bool
	}{
		{`claims.tid == "t1" && claims.level >= 3 && request.method != "DELETE"`, []string{"level", "tid"}, false},
		{`claims["a"] == 1 || "b" in claims || has(claims.c) || claims.a == 2`, []string{"a", "b", "c"}, false},
		{`request.path == "/" && header.kid == "k"`, nil, false},
		{`claims.groups.exists(g, g == "ops")`, []string{"groups"}, true},
		{`claims.email.matches("^[a-z]+@example[.]com$")`, []string{"email"}, true},
		{`claims.l.all(x, claims.l.all(y, x == y))`, []string{"l"}, true},
		{`claims.tid + claims.sub == "ab"`, []string{"sub", "tid"}, true},
	}
	var c Compiler
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := c.Compile(tt.src, 10000)
			if err != nil {
				t.Fatalf("Compile() = %v", err)
			}
			p := e.(*program)
			if got := p.Claims(); !slices.Equal(got, tt.wantClaims) {
				t.Errorf("Claims() = %q, want %q", got, tt.wantClaims)
			}
			if p.tracked != tt.wantTracked {
				t.Errorf("tracked = %v, want %v", p.tracked, tt.wantTracked)
			}
		})
	}
	// A limit below an expression's estimated worst case tracks it.
	e, err := c.Compile(`claims.a == 1 && claims.b == 2`, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !e.(*program).tracked {
		t.Errorf("an expression over a cost limit of 1 is not tracked")
	}
}

// FuzzLazyClaims holds the lazy claims map to the full decoding on any
// claims set the verifier would accept (a JSON object without duplicate
// names).
func FuzzLazyClaims(f *testing.F) {
	for _, c := range lazyClaims {
		f.Add(c)
	}
	f.Add(`{"tid":"\ud83d\ude00","level":[3],"groups":{"a":"ops"}}`)
	var c Compiler
	var progs []*program
	for _, src := range lazyExprs {
		e, err := c.Compile(src, 10000)
		if err != nil {
			f.Fatal(err)
		}
		progs = append(progs, e.(*program))
	}
	f.Fuzz(func(t *testing.T, claims string) {
		if len(claims) > 4096 || !verifiable(claims) || !decodes(claims) {
			return
		}
		res := newResult(claims)
		for i, p := range progs {
			got, gotErr := p.Eval(res, lazyRequest)
			want, wantErr := referenceEval(p, res, lazyRequest)
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%s: lazy = %v, %v; decoded = %v, %v", lazyExprs[i], got, gotErr, want, wantErr)
			}
		}
	})
}

// verifiable reports whether s is what the verifier accepts as a claims
// set: a valid JSON object, in valid UTF-8, whose top-level names are
// unique.
func verifiable(s string) bool {
	if !utf8.ValidString(s) || !json.Valid([]byte(s)) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &m) != nil {
		return false
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	n := 0
	for d.More() {
		if _, err := d.Token(); err != nil {
			return false
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return false
		}
		n++
	}
	return n == len(m)
}

// decodes reports whether claims decode for CEL as an object (decodeExact:
// a verified claims set may hold a number beyond float64, or beyond what
// a double holds exactly, which it refuses).
func decodes(claims string) bool {
	x, err := decodeExact([]byte(claims))
	_, ok := x.(map[string]any)
	return err == nil && ok
}

// TestUndecodableClaims: on a claims set encoding/json cannot read, a key
// lookup reads the claim it names, and a whole-map operation fails the
// evaluation (the policy denies) instead of seeing an empty map.
func TestUndecodableClaims(t *testing.T) {
	res := newResult(`{"big":1e400,"level":3,"tid":"t1"}`)
	// A header encoding/json cannot read is seen empty as such a claims
	// set is: !header.exists(k, k == "jku") must not allow.
	bigHeader := newResult(`{"level":3}`)
	bigHeader.Header = json.RawMessage(`{"alg":"ES256","kid":"k1","jku":"https://evil.example/","big":1e400}`)
	var c Compiler
	for _, tt := range []struct {
		src     string
		want    bool
		wantErr bool
		res     *verify.Result // res when nil
	}{
		{`claims.level == 3.0 && claims.tid == "t1"`, true, false, nil},
		{`has(claims.big)`, false, true, nil},  // has() reads the value too
		{`claims.big > 0.0`, false, true, nil}, // the value itself does not decode
		{`size(claims) == 0`, false, true, nil},
		{`!claims.exists(k, k == "admin")`, false, true, nil},
		{`claims == {}`, false, true, nil},
		{`claims.level == 3.0`, true, false, bigHeader}, // the header not read
		{`!header.exists(k, k == "jku")`, false, true, bigHeader},
		{`size(header) == 0`, false, true, bigHeader},
		{`header == {}`, false, true, bigHeader},
	} {
		t.Run(tt.src, func(t *testing.T) {
			e, err := c.Compile(tt.src, 10000)
			if err != nil {
				t.Fatal(err)
			}
			r := res
			if tt.res != nil {
				r = tt.res
			}
			got, err := e.Eval(r, lazyRequest)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("Eval() = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
