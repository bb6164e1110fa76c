package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// The tests of this file keep docs/API.md true: every route, error class
// and /v1/issuers field of the code is documented (gRPC methods in
// server/extauthz, metrics in server/metrics); the
// class table's statuses are the code's; the examples are the golden
// responses; the Go snippets are compiled examples.

const apiDoc = "../docs/API.md"

func readAPIDoc(t *testing.T) string {
	t.Helper()
	return servertest.APIDoc(t, apiDoc)
}

// headings returns the level-3 headings of doc.
func headings(doc string) []string {
	var out []string
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "### ") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// TestAPIDocRoutes checks that each route the server registers has a
// heading naming its path and methods, and that the route table is what the
// handler serves: each listed method is answered (not 404 or 405), another
// method gets 405 with the listed Allow, and forward-auth takes any method
// below /v1/authz.
func TestAPIDocRoutes(t *testing.T) {
	doc := readAPIDoc(t)
	e := newEnv(t, envConfig{revocations: true})
	hs := headings(doc)
	find := func(path string) string {
		for _, h := range hs {
			if strings.Contains(h, "`"+path+"`") {
				return h
			}
		}
		return ""
	}
	routes := e.srv.routeTable()
	if len(routes) < 7 {
		t.Fatalf("routeTable() has %d routes, want every endpoint", len(routes))
	}
	for _, rt := range routes {
		t.Run(strings.Trim(strings.ReplaceAll(rt.path, "/", "-"), "-"), func(t *testing.T) {
			h := find(rt.path)
			if h == "" {
				t.Fatalf("docs/API.md has no ### heading naming `%s`", rt.path)
			}
			for _, m := range rt.methods {
				if !regexp.MustCompile(`\b` + m + `\b`).MatchString(h) {
					t.Errorf("heading %q does not name method %s", h, m)
				}
			}
			handler := e.handler
			if rt.adminOnly {
				handler = e.srv.AdminHandler()
				if w := do(e.handler, httptest.NewRequest(rt.methods[0], rt.path, nil)); w.Code != http.StatusNotFound {
					t.Errorf("%s %s on Handler = %d, want 404: an admin_listen-only endpoint", rt.methods[0], rt.path, w.Code)
				}
			}
			for _, m := range rt.methods {
				w := do(handler, httptest.NewRequest(m, rt.path, strings.NewReader("{}")))
				if w.Code == http.StatusNotFound || w.Code == http.StatusMethodNotAllowed {
					t.Errorf("%s %s = %d, want the endpoint to answer", m, rt.path, w.Code)
				}
			}
			w := do(handler, httptest.NewRequest(http.MethodPatch, rt.path, nil))
			if want := strings.Join(rt.methods, ", "); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != want {
				t.Errorf("PATCH %s = %d Allow %q, want 405 Allow %q", rt.path, w.Code, w.Header().Get("Allow"), want)
			}
		})
	}
	t.Run("authz", func(t *testing.T) {
		h := find(authzPath)
		if h == "" || !strings.Contains(h, "`"+authzPath+"/*`") || !strings.Contains(h, "any method") {
			t.Errorf("docs/API.md heading for forward-auth = %q, want one naming `%s`, `%s/*` and \"any method\"", h, authzPath, authzPath)
		}
		for _, target := range []string{authzPath, authzPath + "/orders/42?x=1"} {
			if w := do(e.handler, authzRequest(http.MethodPatch, target, "")); w.Code != http.StatusUnauthorized {
				t.Errorf("PATCH %s without a token = %d, want 401 (forward-auth, any method)", target, w.Code)
			}
		}
	})
	if w := get(e.handler, "/v1/undocumented"); w.Code != http.StatusNotFound {
		t.Errorf("GET /v1/undocumented = %d, want 404: a route outside routeTable", w.Code)
	}
}

// TestAPIDocErrorClasses checks that each class has a row in the class
// table, and that the statuses the row gives for each HTTP endpoint are the
// ones the code answers a token of that class with (server/extauthz checks
// the gRPC column).
func TestAPIDocErrorClasses(t *testing.T) {
	doc := readAPIDoc(t)
	e := newEnv(t, envConfig{})
	byClass := map[string]error{}
	for _, s := range servertest.ClassSentinels {
		byClass[verify.Class(s)] = s
	}
	httpStatus := regexp.MustCompile(`\b[1-5][0-9]{2}\b`)
	for _, class := range verify.Classes() {
		t.Run(strings.ReplaceAll(class, "_", "-"), func(t *testing.T) {
			sentinel, ok := byClass[class]
			if !ok {
				t.Fatalf("no sentinel of class %s in classSentinels: add it, and document the class", class)
			}
			row := servertest.TableRow(doc, "`"+class+"`")
			if row == "" {
				t.Fatalf("docs/API.md has no class table row for `%s`", class)
			}
			cells := strings.Split(strings.Trim(row, "| "), " | ")
			if len(cells) != 7 {
				t.Fatalf("row %q has %d cells, want 7 (class, meaning, 5 endpoints)", row, len(cells))
			}
			d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointVerify, ReadErr: fmt.Errorf("%w: doc", sentinel)})
			if d.Class != class {
				t.Fatalf("Decide(%s).Class = %q", class, d.Class)
			}
			want := []struct {
				column string
				status int
			}{
				{"/v1/verify", rendered(func(w http.ResponseWriter) { writeVerdict(w, &d, "") })},
				{"/v1/verify/batch", http.StatusOK}, // serveBatch: 200 whatever the verdicts
				{"/introspect", rendered(func(w http.ResponseWriter) { writeIntrospection(w, &d, "") })},
				{"/v1/authz", d.Status}, // writeDenial writes d.Status
			}
			for i, w := range want {
				cell := cells[2+i]
				if got := httpStatus.FindString(cell); got != strconv.Itoa(w.status) {
					t.Errorf("%s on %s: docs/API.md says %q, the code answers %d", class, w.column, cell, w.status)
				}
			}
		})
	}
}

// TestAPIDocIssuerFields checks that every member of /v1/issuers is named
// in docs/API.md.
func TestAPIDocIssuerFields(t *testing.T) {
	doc := readAPIDoc(t)
	var names []string
	for _, typ := range []reflect.Type{
		reflect.TypeFor[issuersView](), reflect.TypeFor[issuerView](), reflect.TypeFor[keyView](),
		reflect.TypeFor[statsView](), reflect.TypeFor[cache.Skipped](),
	} {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	for _, name := range names {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/API.md does not describe the /v1/issuers field `%s`", name)
		}
	}
}

// goldenExample matches a response example: the marker naming the golden
// file, then a fenced block.
var goldenExample = regexp.MustCompile("(?s)<!-- golden: ([a-z0-9-]+) -->\n```[a-z]*\n(.*?)```")

// TestAPIDocExamples checks that each response example of docs/API.md is
// the stored golden response it names: an HTTP response (status line,
// headers, JSON body) or a gRPC answer (JSON).
func TestAPIDocExamples(t *testing.T) {
	doc := readAPIDoc(t)
	examples := goldenExample.FindAllStringSubmatch(doc, -1)
	if len(examples) < 25 {
		t.Fatalf("docs/API.md has %d golden examples, want every endpoint's", len(examples))
	}
	for _, ex := range examples {
		name, block := ex[1], ex[2]
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "golden", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(block, "HTTP/") {
				if !jsonEqual(t, []byte(block), raw) {
					t.Errorf("docs/API.md example %s differs from the golden file:\n%s", name, block)
				}
				return
			}
			var want golden
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			code, headers, body := parseHTTPExample(t, block)
			if code != want.Status {
				t.Errorf("status %d, golden %d", code, want.Status)
			}
			wantHeaders := map[string]string{}
			for k, v := range want.Headers {
				wantHeaders[textproto.CanonicalMIMEHeaderKey(k)] = v
			}
			if !maps.Equal(headers, wantHeaders) {
				t.Errorf("headers %v, golden %v", headers, wantHeaders)
			}
			if string(want.Body) == `""` {
				if strings.TrimSpace(body) != "" {
					t.Errorf("body %q, golden: none", body)
				}
			} else if !jsonEqual(t, []byte(body), want.Body) {
				t.Errorf("body differs from the golden file:\n%s\ngolden:\n%s", body, want.Body)
			}
		})
	}
}

// parseHTTPExample reads "HTTP/1.1 NNN Text", header lines, a blank line
// and a body.
func parseHTTPExample(t *testing.T, block string) (int, map[string]string, string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(block))
	sc.Scan()
	f := strings.Fields(sc.Text())
	if len(f) < 2 {
		t.Fatalf("status line %q", sc.Text())
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("status line %q: %v", sc.Text(), err)
	}
	headers := map[string]string{}
	for sc.Scan() && sc.Text() != "" {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			t.Fatalf("header line %q", sc.Text())
		}
		headers[textproto.CanonicalMIMEHeaderKey(k)] = v
	}
	var body strings.Builder
	for sc.Scan() {
		body.WriteString(sc.Text() + "\n")
	}
	return code, headers, body.String()
}

// jsonEqual reports whether a and b are the same JSON value, number
// literals compared as written.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(data []byte) any {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, data)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// TestAPIDocGoSnippets checks that each Go block of docs/API.md is code of
// a compiled example (example_test.go), line for line.
func TestAPIDocGoSnippets(t *testing.T) {
	doc := readAPIDoc(t)
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) []string {
		var out []string
		for line := range strings.Lines(s) {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
		return out
	}
	code := norm(string(src))
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/API.md has no Go example")
	}
	for i, b := range blocks {
		lines := norm(b[1])
		if !containsRun(code, lines) {
			t.Errorf("docs/API.md Go block %d is not the code of an example in example_test.go:\n%s", i, b[1])
		}
	}
}

// containsRun reports whether want occurs in have as consecutive lines.
func containsRun(have, want []string) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		if slices.Equal(have[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

// TestAPIDocCoversGoldenEndpoints checks that every endpoint has at least
// one example response.
func TestAPIDocCoversGoldenEndpoints(t *testing.T) {
	doc := readAPIDoc(t)
	var names []string
	for _, ex := range goldenExample.FindAllStringSubmatch(doc, -1) {
		names = append(names, ex[1])
	}
	for _, prefix := range []string{"verify-", "batch-", "introspect-", "authz-", "healthz", "readyz-", "issuers", "not-found", "grpc-check-"} {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, prefix) }) {
			t.Errorf("docs/API.md has no example %s*", prefix)
		}
	}
}

// rendered is the status write writes.
func rendered(write func(http.ResponseWriter)) int {
	w := httptest.NewRecorder()
	write(w)
	return w.Code
}
