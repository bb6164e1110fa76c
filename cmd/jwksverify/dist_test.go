package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMakeDist runs `make dist` for this machine's platform, twice, and
// checks the archive: the same bytes both times (reproducible), SHA256SUMS
// verifies, the files a release carries, every entry owned by 0:0 with the
// last commit's time and in name order, and the binary reports the version
// `make version` prints. CI's .ci/run builds all four platforms with the
// same target and checks their sums (docs/DECISIONS.md, "make dist").
func TestMakeDist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	for _, tool := range []string{"make", "git", "tar", "gzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI", tool)
			}
			t.Skipf("no %s", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := "../.."
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	version := run("make", "-s", "version")
	if !strings.HasPrefix(version, treeVersion(t)) {
		t.Fatalf("make version = %q, want %s or a development build of it", version, treeVersion(t))
	}
	epoch, err := strconv.ParseInt(run("git", "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	name := "jwksverify_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH
	var archives [2][]byte
	for i := range archives {
		dist := t.TempDir()
		run("make", "dist", "PLATFORMS="+platform, "DIST="+dist)
		b, err := os.ReadFile(filepath.Join(dist, name+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		archives[i] = b
		checkSums(t, dist, []string{name + ".tar.gz"})
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two runs of make dist made different archives (not reproducible)")
	}

	bin := filepath.Join(t.TempDir(), "jwksverify")
	var names []string
	zr, err := gzip.NewReader(bytes.NewReader(archives[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header carries name %q, time %v; want neither (gzip -n)", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != epoch {
			t.Errorf("%s: owner %d:%d, time %v; want 0:0 and the last commit's time %v", h.Name, h.Uid, h.Gid, h.ModTime, time.Unix(epoch, 0))
		}
		if h.Name == name+"/jwksverify" {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bin, data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("archive entries are not in name order: %v", names)
	}
	for _, want := range []string{"jwksverify", "LICENSE", "NOTICE", "README.md", "CHANGELOG.md", "licenses/go.LICENSE", "licenses/google.golang.org/grpc/LICENSE"} {
		if !slices.Contains(names, name+"/"+want) {
			t.Errorf("the archive has no %s/%s", name, want)
		}
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		t.Fatalf("the archived binary's version: %v", err)
	}
	if f := strings.Fields(string(out)); len(f) < 2 || f[0] != "jwksverify" || f[1] != version {
		t.Errorf("the archived binary says %q, want jwksverify %s …", out, version)
	}
}

// checkSums checks that dir/SHA256SUMS lists exactly the files want, with
// their SHA-256 (the format sha256sum -c reads).
func checkSums(t *testing.T, dir string, want []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var listed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not <sum>  <file>", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", file)
		}
		listed = append(listed, file)
	}
	if !slices.Equal(listed, want) {
		t.Errorf("SHA256SUMS lists %v, want %v", listed, want)
	}
}
