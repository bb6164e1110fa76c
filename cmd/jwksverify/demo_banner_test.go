package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testlog"
)

// bannerCommand is a command line of the demo's banner (indented, or after
// a "Label:" column), with the exit status its "# exit N" comment names (0
// without one).
var bannerCommand = regexp.MustCompile(`(?m)^(?:  |[A-Z][A-Za-z ]+:\s+)((?:curl|ISSUER=|\S*jwksverify\S*|'[^']*jwksverify') .*?|ISSUER=\S+)(?:\s+# exit (\d)[^\n]*)?$`)

// TestDemoBannerCommandsRunAsPrinted starts `serve --demo` and runs every
// command its banner prints, exactly as printed (the lines before it in
// the same shell, so that ISSUER= holds), from a directory that is not the
// repository: the CLI lines name this binary as it was started, and each
// ends with the status it says.
func TestDemoBannerCommandsRunAsPrinted(t *testing.T) {
	requireShellTools(t)
	var out testlog.Buffer
	p := startBin(t, nil, &out, "serve", "--demo", "--listen", "127.0.0.1:0", "--demo-issuer", "127.0.0.1:0")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "Stop with Ctrl-C.") {
		if time.Now().After(deadline) {
			t.Fatalf("no banner on stdout within 30s\nstdout: %s\nstderr: %s", out.String(), p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	banner := out.String()
	matches := bannerCommand.FindAllStringSubmatch(banner, -1)
	var clis int
	for _, m := range matches {
		if strings.Contains(m[1], " verify ") {
			clis++
			if self := strings.Fields(m[1])[0]; self != shellWord(binary(t)) {
				t.Errorf("banner runs the CLI as %s, want this binary's path %s (it is not on PATH)", self, binary(t))
			}
		}
	}
	if len(matches) < 8 || clis < 2 {
		t.Fatalf("found %d command lines (%d CLI) in the banner, want at least 8 (2):\n%s", len(matches), clis, banner)
	}
	var prefix []string // the ISSUER= lines so far
	dir := t.TempDir()
	for i, m := range matches {
		line := m[1]
		want, _ := strconv.Atoi(m[2])
		t.Run(strconv.Itoa(i+1), func(t *testing.T) {
			script := strings.Join(append(prefix, line), "\n")
			code, stdout, stderr := runShell(t, script, dir)
			if code != want {
				t.Fatalf("banner: %s\nexit %d, want %d\nstdout: %s\nstderr: %s", line, code, want, stdout, stderr)
			}
			if strings.HasPrefix(line, "curl") && stdout == "" {
				t.Errorf("banner: %s printed nothing", line)
			}
		})
		if strings.HasPrefix(line, "ISSUER=") {
			prefix = append(prefix, line)
		}
	}
}

// TestSelfCommand: the banner names the program as the user can run it
// again.
func TestSelfCommand(t *testing.T) {
	self := binary(t)
	tests := []struct {
		name, arg0, exe, onPath, version string
		inRoot                           bool
		want                             string
	}{
		{"go-run-in-module-root", "/tmp/go-build123/b001/exe/jwksverify", "/tmp/go-build123/b001/exe/jwksverify", "", "(devel)", true, "go run ./cmd/jwksverify"},
		{"go-run-elsewhere", "/tmp/go-build1/b001/exe/jwksverify", "/tmp/go-build1/b001/exe/jwksverify", "", "v1.2.3", false, "go run github.com/jwksverify/jwksverify/cmd/jwksverify@v1.2.3"},
		{"go-run-devel-elsewhere", "/tmp/go-build1/b001/exe/jwksverify", "/tmp/go-build1/b001/exe/jwksverify", "", "(devel)", false, "go run github.com/jwksverify/jwksverify/cmd/jwksverify@latest"},
		{"on-path", "jwksverify", self, self, "", false, "jwksverify"},
		{"name-on-path-is-another-binary", "jwksverify", self, "/bin/sh", "", false, self},
		{"started-by-path", self, self, "", "", false, self},
		{"relative-path", "./" + filepath.Base(self), self, "", "", false, self},
		{"path-needing-quotes", "/opt/my tools/jwksverify", "/opt/my tools/jwksverify", "", "", false, "'/opt/my tools/jwksverify'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := selfCommandFor(tt.arg0, tt.exe, tt.onPath, tt.version, tt.inRoot); got != tt.want {
				t.Errorf("selfCommandFor(%q, %q, %q) = %q, want %q", tt.arg0, tt.exe, tt.onPath, got, tt.want)
			}
		})
	}
}
