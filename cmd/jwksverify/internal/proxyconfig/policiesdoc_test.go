package proxyconfig

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPoliciesDocExcerpts holds docs/POLICIES.md's worked examples to the
// generated proxy files: every code block that starts with
// "# from deploy/FILE" must be a run of FILE's lines (compared without
// indentation), and each proxy's section must quote its file.
func TestPoliciesDocExcerpts(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs/POLICIES.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```[a-z]*\n# from (deploy/\\S+)\n(.*?)```")
	quoted := map[string]bool{}
	for _, m := range block.FindAllStringSubmatch(string(doc), -1) {
		file, excerpt := m[1], m[2]
		data, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Errorf("POLICIES.md quotes %s: %v", file, err)
			continue
		}
		if !containsRun(trimmedLines(string(data)), trimmedLines(excerpt)) {
			t.Errorf("POLICIES.md's excerpt of %s is not in the file (regenerate the docs' excerpt):\n%s", file, excerpt)
		}
		quoted[file] = true
	}
	for _, file := range deployFiles {
		if !quoted[file] {
			t.Errorf("POLICIES.md has no excerpt of %s (a worked example per proxy)", file)
		}
	}
}

// trimmedLines returns the non-empty lines of s without their indentation.
func trimmedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// containsRun reports whether run occurs in lines, contiguous.
func containsRun(lines, run []string) bool {
	if len(run) == 0 {
		return false
	}
	for i := range lines {
		if i+len(run) <= len(lines) && slices.Equal(lines[i:i+len(run)], run) {
			return true
		}
	}
	return false
}
