package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureGraph: docs/ARCHITECTURE.md's package table is the
// module's package graph as `go list -deps` reports it: every package of
// the module (non-test code) with the packages of the module it imports,
// and nothing else.
func TestArchitectureGraph(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n## Packages\n")
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md has no Packages section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| (.*) \\|$")
	name := regexp.MustCompile("`([^`]+)`")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		var imports []string
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			imports = append(imports, n[1])
		}
		slices.Sort(imports)
		documented[m[1]] = strings.Join(imports, ", ")
	}

	const module = "github.com/jwksverify/jwksverify"
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if eq .Module.Path "`+module+`"}}{{.ImportPath}}:{{range .Imports}} {{.}}{{end}}{{"\n"}}{{end}}{{end}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	actual := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, _ := strings.Cut(line, ":")
		var imports []string
		for _, i := range strings.Fields(imps) {
			if rel, ok := strings.CutPrefix(i, module+"/"); ok {
				imports = append(imports, rel)
			}
		}
		slices.Sort(imports)
		actual[strings.TrimPrefix(pkg, module+"/")] = strings.Join(imports, ", ")
	}
	if len(actual) < 20 {
		t.Fatalf("go list found %d packages, want the module's: is the query broken?", len(actual))
	}
	for pkg, imports := range actual {
		doc, ok := documented[pkg]
		switch {
		case !ok:
			t.Errorf("ARCHITECTURE.md's package table lacks `%s` (imports: %s)", pkg, imports)
		case doc != imports:
			t.Errorf("ARCHITECTURE.md: `%s` imports %q, the table says %q", pkg, imports, doc)
		}
	}
	for pkg := range documented {
		if _, ok := actual[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md's package table lists `%s`, which is not a package of the module", pkg)
		}
	}
}
