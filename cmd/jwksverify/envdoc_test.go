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
	for _, dir := range []string{".", "../../config", "../../service"} {
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

// TestReloadRestartSettingsDocumented: every setting a reload keeps until a
// restart (restartNeeded, which logs it) is named where CONFIG.md's reload
// section and OPERATIONS.md's log table list them, so that an operator who
// changes one in a reload knows it did not apply.
func TestReloadRestartSettingsDocumented(t *testing.T) {
	src, err := os.ReadFile("../../service/reload.go")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, keeps, _ := strings.Cut(string(cfg), "**keeps the listeners**")
	keeps, _, _ = strings.Cut(keeps, "\n- ")
	row := regexp.MustCompile("(?m)^\\| `reload: this change needs a restart; the running value is kept` .*$").FindString(string(ops))
	names := regexp.MustCompile(`\{"([^"]+)", cur\.`).FindAllStringSubmatch(string(src), -1)
	if len(names) < 5 || keeps == "" || row == "" {
		t.Fatalf("found %d settings in restartNeeded, CONFIG.md section %t, OPERATIONS.md row %t", len(names), keeps != "", row != "")
	}
	for _, m := range names {
		want := "`" + m[1] + "`"
		if strings.HasPrefix(m[1], "HTTP server timeouts") {
			want = "HTTP timeouts"
		}
		if !strings.Contains(strings.Join(strings.Fields(keeps), " "), want) {
			t.Errorf("CONFIG.md's reload section does not say that %s needs a restart", want)
		}
		if !strings.Contains(row, want) {
			t.Errorf("OPERATIONS.md's restart-needed log row does not name %s", want)
		}
	}
}
