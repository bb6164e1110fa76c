package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testlog"
)

// readmeLine is one command of the README's CLI examples.
type readmeLine struct {
	cmd       string
	wantCode  int
	wantClass string // the "error" of the JSON verdict, when the comment names one
}

var readmeComment = regexp.MustCompile(`^(.*\S)\s+# exit (\d)(?:: ([a-z_]+))?`)

// readmeCLIExamples returns the commands of the README's fenced sh block
// that holds `jwksverify verify` examples.
func readmeCLIExamples(t *testing.T) []readmeLine {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	for _, blk := range blocks {
		if !strings.Contains(blk[1], "jwksverify verify") {
			continue
		}
		var out []readmeLine
		for _, line := range strings.Split(blk[1], "\n") {
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			m := readmeComment.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("README example %q does not end with the exit status it has (# exit N)", line)
			}
			code, _ := strconv.Atoi(m[2])
			out = append(out, readmeLine{cmd: m[1], wantCode: code, wantClass: m[3]})
		}
		return out
	}
	t.Fatal("README.md has no sh block with jwksverify verify examples")
	return nil
}

// TestReadmeCLIExamples runs the README's CLI examples with the built
// binary (for `go run ./cmd/jwksverify`) against a running `serve --demo`
// (ISSUER from its tour) and the repository's testdata/, offline, and
// checks each exit status and named class.
func TestReadmeCLIExamples(t *testing.T) {
	requireShellTools(t)
	examples := readmeCLIExamples(t)
	bin := binary(t)
	var out testlog.Buffer
	p := startBin(t, nil, &out, "serve", "--demo", "--listen", "127.0.0.1:0", "--demo-issuer", "127.0.0.1:0")
	issuerRE := regexp.MustCompile(`(?m)^  ISSUER=(http://127\.0\.0\.1:\d+)$`)
	deadline := time.Now().Add(30 * time.Second)
	for !issuerRE.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no ISSUER= line on stdout within 30s\nstdout: %s\nstderr: %s", out.String(), p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	issuer := issuerRE.FindStringSubmatch(out.String())[1]
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for i, ex := range examples {
		t.Run(strconv.Itoa(i+1), func(t *testing.T) {
			cmd := strings.ReplaceAll(ex.cmd, "go run ./cmd/jwksverify", shellQuote(bin))
			if cmd == ex.cmd {
				t.Fatalf("README example %q does not run go run ./cmd/jwksverify", ex.cmd)
			}
			code, stdout, stderr := runShell(t, cmd, root, "ISSUER="+issuer)
			if code != ex.wantCode {
				t.Fatalf("README: %s\nexit %d, want %d\nstdout: %s\nstderr: %s", ex.cmd, code, ex.wantCode, stdout, stderr)
			}
			if ex.wantClass != "" && !strings.Contains(stdout, `"error":"`+ex.wantClass+`"`) {
				t.Errorf("README: %s\nstdout %s, want error %s", ex.cmd, stdout, ex.wantClass)
			}
		})
	}
}

// requireShellTools skips the test without sh and curl (fails under CI).
func requireShellTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"sh", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI", tool)
			}
			t.Skipf("no %s", tool)
		}
	}
}

// runShell runs script with sh -c in dir, with a clean environment plus
// env, and returns its exit status and output.
func runShell(t *testing.T, script, dir string, env ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-c", script)
	sh.Dir = dir
	sh.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &errb
	err := sh.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
