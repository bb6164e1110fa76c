package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEnvironmentDocumented: every JWKSVERIFY_* variable the command or its
// configuration loader reads is in docs/CONFIG.md's Overrides table and in
// `jwksverify help serve`, so that an operator who keeps a secret out of the
// file (JWKSVERIFY_DPOP_REDIS_URL) can find the variable.
func TestEnvironmentDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, overrides, ok := strings.Cut(string(doc), "\n## Overrides\n")
	if !ok {
		t.Fatal("docs/CONFIG.md has no Overrides section")
	}
	overrides, _, _ = strings.Cut(overrides, "\n## ")
	var files []string
	for _, dir := range []string{".", "internal/config"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"(JWKSVERIFY_[A-Z0-9_]+)"`).FindAllSubmatch(src, -1) {
			if n := string(m[1]); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) < 6 {
		t.Fatalf("found %v in the source, want every variable read (at least 6)", names)
	}
	for _, n := range names {
		if !strings.Contains(overrides, "`"+n) {
			t.Errorf("docs/CONFIG.md's Overrides table does not name %s", n)
		}
		if !strings.Contains(commandUsage["serve"], n) {
			t.Errorf("jwksverify help serve does not name %s", n)
		}
	}
}

// TestDemoNamesReadmeSections: each README section the demo's banner sends
// the reader to (README, "TITLE") is a heading of README.md.
func TestDemoNamesReadmeSections(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("demo.go")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`README, "([^"]+)"`).FindAllSubmatch(src, -1)
	if len(refs) == 0 {
		t.Fatal(`demo.go names no README section (README, "TITLE"); update this test`)
	}
	for _, m := range refs {
		if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(string(m[1])) + `$`).Match(readme) {
			t.Errorf("the demo's banner names the README section %q, which README.md does not have", m[1])
		}
	}
}
