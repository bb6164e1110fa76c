package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testlog"
)

// versionVar is the variable -ldflags -X sets (the Makefile and the
// Dockerfile name it).
const versionVar = "github.com/jwksverify/jwksverify/cmd/jwksverify/internal/buildinfo.version"

// treeVersion is the release the source tree carries.
func treeVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("internal/buildinfo/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestVersionFromSourceArchive builds the command from `git archive` output
// of this tree (no .git: no VCS stamp) and checks that the export carries
// LICENSE, NOTICE, SECURITY.md and CHANGELOG.md, that its files agree on
// one version (checkOneVersion), and that the binary reports a development
// build of the tree's release when built plainly or with `make build` (no
// git: no revision), and, built with -ldflags -X as the Makefile does, the
// version given.
func TestVersionFromSourceArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required in CI")
		}
		t.Skip("no git")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	root := "../.."
	// The working tree's tracked files as a commit object (nothing is
	// changed), or HEAD when the tree is clean.
	rev, err := exec.CommandContext(ctx, "git", "-C", root, "stash", "create").Output()
	if err != nil {
		t.Fatalf("git stash create: %v", err)
	}
	ref := strings.TrimSpace(string(rev))
	if ref == "" {
		ref = "HEAD"
	}
	archive, err := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", ref).Output()
	if err != nil {
		t.Fatalf("git archive: %v", err)
	}
	src := t.TempDir()
	untar(t, archive, src)
	if _, err := os.Stat(filepath.Join(src, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the archive has a .git: %v", err)
	}

	t.Run("release-files", func(t *testing.T) { checkReleaseFiles(t, src) })
	t.Run("one-version", func(t *testing.T) { checkOneVersion(t, src) })

	want := treeVersion(t) + "-dev"
	tests := []struct {
		name    string
		make    bool
		ldflags string
		want    string
	}{
		{name: "plain-go-build", want: want},
		{name: "make-build", make: true, want: want},
		{name: "ldflags-X", ldflags: "-X " + versionVar + "=v9.8.7-test", want: "v9.8.7-test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "jwksverify")
			args := []string{"go", "build", "-trimpath", "-o", bin}
			if tt.ldflags != "" {
				args = append(args, "-ldflags", tt.ldflags)
			}
			args = append(args, "./cmd/jwksverify")
			if tt.make {
				if _, err := exec.LookPath("make"); err != nil {
					if os.Getenv("CI") == "true" {
						t.Fatal("make is required in CI")
					}
					t.Skip("no make")
				}
				args = []string{"make", "build", "BIN=" + dir}
			}
			build := exec.CommandContext(ctx, args[0], args[1:]...)
			build.Dir = src
			build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off", "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("%s in the source archive: %v\n%s", strings.Join(args, " "), err, out)
			}
			out, err := exec.CommandContext(ctx, bin, "version").Output()
			if err != nil {
				t.Fatalf("version: %v", err)
			}
			if f := strings.Fields(string(out)); len(f) < 2 || f[1] != tt.want {
				t.Errorf("version = %q, want jwksverify %s …", out, tt.want)
			}
			checkServedVersion(t, ctx, bin, tt.want)
		})
	}
}

// checkServedVersion runs bin's `serve --demo` and checks that /healthz and
// jwksverify_build_info report want.
func checkServedVersion(t *testing.T, ctx context.Context, bin, want string) {
	t.Helper()
	var out testlog.Buffer
	cmd := exec.CommandContext(ctx, bin, "serve", "--demo", "--listen", "127.0.0.1:0", "--demo-issuer", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	baseRE := regexp.MustCompile(`Metrics: +curl -s (http://127\.0\.0\.1:\d+)/metrics`)
	deadline := time.Now().Add(30 * time.Second)
	for !baseRE.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("serve --demo printed no tour within 30s: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	base := baseRE.FindStringSubmatch(out.String())[1]
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var health struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal([]byte(get("/healthz")), &health); err != nil || health.Version != want {
		t.Errorf("/healthz version = %q (%v), want %s", health.Version, err, want)
	}
	if m := get("/metrics"); !regexp.MustCompile(`(?m)^jwksverify_build_info\{go="go[^"]+",revision="[^"]+",version="` + regexp.QuoteMeta(want) + `"\} 1$`).MatchString(m) {
		t.Errorf("/metrics has no jwksverify_build_info{version=%q} 1", want)
	}
}

func untar(t *testing.T, b []byte, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(io.LimitReader(tr, 64<<20))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBuildRecipesSetVersion checks the Dockerfile and the Makefile
// textually (no Docker engine needed): the Makefile links the version and
// revision in with -X in its one LDFLAGS, which build, build-boring, dist
// and deb use; the Dockerfile builds with `make build`, passing its build
// args; and the VERSION file the fallback reads reaches the image's build
// context.
func TestBuildRecipesSetVersion(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	docker, makefile, ignore := read("Dockerfile"), read("Makefile"), read(".dockerignore")
	revisionVar := strings.TrimSuffix(versionVar, "version") + "revision"
	checks := []struct {
		name, text string
		re         string
	}{
		{"dockerfile-arg-version", docker, `(?m)^ARG VERSION`},
		{"dockerfile-arg-revision", docker, `(?m)^ARG REVISION`},
		{"dockerfile-make-build-after-args", docker, `(?s)ARG VERSION.*ARG REVISION.*\nRUN make build [^\n]*VERSION="\$VERSION"[^\n]*REVISION="\$REVISION"`},
		{"makefile-ldflags", makefile, regexp.QuoteMeta("-X " + versionVar + "=$(VERSION)")},
		{"makefile-revision", makefile, regexp.QuoteMeta("-X " + revisionVar + "=$(REVISION)")},
		{"makefile-reproducible", makefile, regexp.QuoteMeta("LDFLAGS    := -s -w -buildid= ")},
		{"makefile-build-uses-ldflags", makefile, `(?m)^build:\n\tCGO_ENABLED=0 [^\n]*-trimpath -ldflags '\$\(LDFLAGS\)'`},
		{"makefile-dist-uses-ldflags", makefile, `(?m)^dist:\n(\t[^\n]*\n)*\t[^\n]*CGO_ENABLED=0 [^\n]*-trimpath -ldflags '\$\(LDFLAGS\)'`},
		{"makefile-deb-uses-ldflags", makefile, `(?m)^deb:\n(\t[^\n]*\n)*\tCGO_ENABLED=0 [^\n]*-trimpath -ldflags '\$\(LDFLAGS\)'`},
		{"makefile-boring-uses-ldflags", makefile, `(?m)^build-boring:\n\t[^\n]*-ldflags '\$\(LDFLAGS\)'`},
		{"makefile-reads-the-version-file", makefile, `(?m)^VERSION_FILE := cmd/jwksverify/internal/buildinfo/VERSION\nRELEASE +:= \$\(shell cat \$\(VERSION_FILE\)\)`},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !regexp.MustCompile(c.re).MatchString(c.text) {
				t.Errorf("no match for %s", c.re)
			}
		})
	}
	t.Run("only-the-makefile-links", func(t *testing.T) {
		if n := strings.Count(makefile, "-X "+versionVar); n != 1 {
			t.Errorf("the Makefile names %s %d times, want once (LDFLAGS)", versionVar, n)
		}
		if strings.Contains(docker, "-ldflags") || strings.Contains(docker, "go build") {
			t.Error("the Dockerfile builds by itself; it should run make build (one set of flags)")
		}
	})
	t.Run("dockerignore-keeps-the-build-inputs", func(t *testing.T) {
		for _, line := range strings.Split(ignore, "\n") {
			pat := strings.TrimSpace(line)
			if pat == "" || strings.HasPrefix(pat, "#") {
				continue
			}
			for _, p := range []string{"Makefile", "cmd", "cmd/jwksverify/internal/buildinfo", "cmd/jwksverify/internal/buildinfo/VERSION"} {
				if ok, _ := filepath.Match(pat, p); ok {
					t.Errorf(".dockerignore pattern %q drops %s", pat, p)
				}
			}
		}
	})
}
