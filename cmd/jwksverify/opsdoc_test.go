package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// logMessageArg is, for each slog method (and loglimit.New, whose second
// argument is its summary line's message, and signals' refused and
// notStored, which log their third), the index of the message.
var logMessageArg = map[string]int{
	"Debug": 0, "Info": 0, "Warn": 0, "Error": 0,
	"DebugContext": 1, "InfoContext": 1, "WarnContext": 1, "ErrorContext": 1,
	"Log": 2, "LogAttrs": 2, "loglimit.New": 1, "refused": 2, "notStored": 2,
}

// codeLogMessages returns every log message literal of the module's
// non-test Go files (bench/ and integration/ are other modules), with
// where it is. A Log or LogAttrs call whose message is not a literal is an
// error, except the limiter's summary (its message is loglimit.New's
// argument, scanned) and signals' refused (its message argument, scanned).
func codeLogMessages(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	inspectCalls(t, root, func(fset *token.FileSet, p string, c *ast.CallExpr) {
		var name string
		switch fn := c.Fun.(type) {
		case *ast.SelectorExpr:
			name = fn.Sel.Name
			if x, ok := fn.X.(*ast.Ident); ok && x.Name == "loglimit" {
				name = "loglimit." + name
			}
		case *ast.Ident:
			name = fn.Name
		}
		i, ok := logMessageArg[name]
		if !ok || len(c.Args) <= i {
			return
		}
		pos := fset.Position(c.Pos()).String()
		bl, ok := c.Args[i].(*ast.BasicLit)
		switch {
		case ok && bl.Kind == token.STRING:
			msg, err := strconv.Unquote(bl.Value)
			if err != nil {
				t.Fatalf("%s: %v", pos, err)
			}
			out[msg] = pos
		case (name == "Log" || name == "LogAttrs") && !strings.HasSuffix(filepath.ToSlash(p), "internal/loglimit/loglimit.go"):
			t.Errorf("%s: a log message that is not a string literal: OPERATIONS.md cannot list it", pos)
		}
	})
	return out
}

// inspectCalls calls visit with every call expression of the module's
// non-test Go files under root (bench/ and integration/ are other modules).
func inspectCalls(t *testing.T, root string, visit func(fset *token.FileSet, path string, c *ast.CallExpr)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "bench" || n == "integration" || n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				visit(fset, p, c)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOperationsLogMessages: docs/OPERATIONS.md's log table lists every
// message the code can write, and no other.
func TestOperationsLogMessages(t *testing.T) {
	code := codeLogMessages(t, "../..")
	if len(code) < 10 {
		t.Fatalf("found %d log messages in the source, want the lot: is the scan broken?", len(code))
	}
	documented := map[string]bool{}
	for msg := range logTable(t) {
		documented[msg] = true
	}
	var missing, stale []string
	for msg, pos := range code {
		if !documented[msg] {
			missing = append(missing, msg+" ("+pos+")")
		}
	}
	for msg := range documented {
		if _, ok := code[msg]; !ok {
			stale = append(stale, msg)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	for _, m := range missing {
		t.Errorf("docs/OPERATIONS.md's log table lacks %q", m)
	}
	for _, m := range stale {
		t.Errorf("docs/OPERATIONS.md lists %q, which no code writes", m)
	}
}
