package main

import (
	"go/ast"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestOperationsLogLevels: the level column of docs/OPERATIONS.md's log
// table names the level each message is written at, for every message
// written by a call whose method fixes the level (Info, Warn, …; a Log or
// LogAttrs call chooses it at run time and is left to the table's words).
// An on-call engineer filtering on level=error must not miss a line the
// page says is an error, nor page on one that is not.
func TestOperationsLogLevels(t *testing.T) {
	levels := map[string]map[string]string{} // message → level → where
	inspectCalls(t, "../..", func(fset *token.FileSet, _ string, c *ast.CallExpr) {
		sel, ok := c.Fun.(*ast.SelectorExpr)
		if !ok {
			return
		}
		level, ctx := strings.CutSuffix(sel.Sel.Name, "Context")
		i := 0
		if ctx {
			i = 1
		}
		switch level {
		case "Debug", "Info", "Warn", "Error":
		default:
			return
		}
		if len(c.Args) <= i {
			return
		}
		bl, ok := c.Args[i].(*ast.BasicLit)
		if !ok || bl.Kind != token.STRING {
			return
		}
		msg, err := strconv.Unquote(bl.Value)
		if err != nil {
			t.Fatalf("%s: %v", fset.Position(c.Pos()), err)
		}
		if levels[msg] == nil {
			levels[msg] = map[string]string{}
		}
		levels[msg][strings.ToLower(level)] = fset.Position(c.Pos()).String()
	})
	documented := logTable(t)
	checked := 0
	for msg, lv := range levels {
		col, ok := documented[msg]
		if !ok {
			continue // TestOperationsLogMessages reports it
		}
		for level, pos := range lv {
			checked++
			if !regexp.MustCompile(`\b` + level + `\b`).MatchString(col) {
				t.Errorf("%q is written at %s (%s); docs/OPERATIONS.md's log table says %q", msg, level, pos, strings.TrimSpace(col))
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d levels, want most of the table (is the scan broken?)", checked)
	}
}

// logTable returns docs/OPERATIONS.md's log table: each message of a row's
// first cell, with the row's level cell.
func logTable(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "| `msg` | level | when |")
	if start < 0 {
		t.Fatal("docs/OPERATIONS.md has no log table (| `msg` | level | when |)")
	}
	out := map[string]string{}
	cell := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(doc[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cols := strings.Split(line, "|")
		for _, m := range cell.FindAllStringSubmatch(cols[1], -1) {
			out[m[1]] = cols[2]
		}
	}
	return out
}
