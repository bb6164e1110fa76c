package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// apacheLicenseSHA256 is the SHA-256 of the Apache License 2.0's standard
// text (https://www.apache.org/licenses/LICENSE-2.0.txt), which pkg.go.dev
// and license scanners recognise only when it is unedited.
const apacheLicenseSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// TestReleaseFiles checks the working tree's LICENSE, NOTICE, SECURITY.md
// and CHANGELOG.md (TestVersionFromSourceArchive checks them in a `git
// archive` export too).
func TestReleaseFiles(t *testing.T) { checkReleaseFiles(t, "../..") }

// TestOneVersion holds the places that name the release to the VERSION file
// the binary embeds (docs/DECISIONS.md, "One version").
func TestOneVersion(t *testing.T) { checkOneVersion(t, "../..") }

func readRoot(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkReleaseFiles checks that root carries the license (the standard
// Apache-2.0 text), a NOTICE naming every directory that carries another
// project's license, a SECURITY.md that says how to report privately and
// which versions are supported, and a CHANGELOG.md in Keep a Changelog form.
func checkReleaseFiles(t *testing.T, root string) {
	t.Helper()
	t.Run("license-is-apache-2.0", func(t *testing.T) {
		sum := sha256.Sum256([]byte(readRoot(t, root, "LICENSE")))
		if got := hex.EncodeToString(sum[:]); got != apacheLicenseSHA256 {
			t.Errorf("LICENSE SHA-256 = %s, want the standard Apache License 2.0 text (%s)", got, apacheLicenseSHA256)
		}
	})
	t.Run("notice-names-copied-code", func(t *testing.T) {
		notice := readRoot(t, root, "NOTICE")
		var dirs []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == "dist" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			if !d.IsDir() && (d.Name() == "LICENSE" || d.Name() == "COPYING") && filepath.Dir(p) != filepath.Clean(root) {
				rel, err := filepath.Rel(root, filepath.Dir(p))
				if err != nil {
					return err
				}
				dirs = append(dirs, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) == 0 {
			t.Fatal("no copied code with its own LICENSE found; this test expects internal/bigmod's")
		}
		for _, d := range dirs {
			if !strings.Contains(notice, d) {
				t.Errorf("NOTICE does not name %s, which carries another project's LICENSE", d)
			}
			if !strings.Contains(notice, readRoot(t, root, d+"/LICENSE")) {
				t.Errorf("NOTICE does not reproduce %s/LICENSE", d)
			}
		}
	})
	t.Run("security-policy", func(t *testing.T) {
		sec := readRoot(t, root, "SECURITY.md")
		release := strings.TrimSpace(readRoot(t, root, "cmd/jwksverify/internal/buildinfo/VERSION"))
		minor := regexp.MustCompile(`^v(\d+\.\d+)\.\d+$`).FindStringSubmatch(release)
		for _, want := range []string{"security/advisories/new", "## Supported versions", "## In scope", "internal/rsaverify", "internal/ecverify", "BoringCrypto", "fips140"} {
			if !strings.Contains(sec, want) {
				t.Errorf("SECURITY.md does not mention %q", want)
			}
		}
		if minor == nil || !strings.Contains(sec, "| "+minor[1]+".x") {
			t.Errorf("SECURITY.md's supported versions do not list the release line of VERSION (%v)", minor)
		}
	})
	t.Run("changelog-form", func(t *testing.T) {
		cl := readRoot(t, root, "CHANGELOG.md")
		if !strings.Contains(cl, "https://keepachangelog.com/") {
			t.Error("CHANGELOG.md does not say it follows Keep a Changelog")
		}
		heads := regexp.MustCompile(`(?m)^## \[([^\]]+)\](?: - (.*))?$`).FindAllStringSubmatch(cl, -1)
		if len(heads) < 2 {
			t.Fatalf("CHANGELOG.md has %d version headings, want the first version and the one in progress", len(heads))
		}
		for _, h := range heads {
			if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(h[1]) || !regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}|Unreleased)$`).MatchString(h[2]) {
				t.Errorf("heading %q: want ## [X.Y.Z] - YYYY-MM-DD or - Unreleased", h[0])
			}
			if !strings.Contains(cl, "\n["+h[1]+"]: ") {
				t.Errorf("no link reference [%s]: at the end", h[1])
			}
		}
		for _, h := range heads[1:] {
			if h[2] == "Unreleased" {
				t.Errorf("%q: only the first heading may be unreleased", h[0])
			}
		}
		for _, want := range []string{"### Upgrading", "check --config", "renamed"} {
			if !strings.Contains(cl, want) {
				t.Errorf("CHANGELOG.md does not say %q (upgrade notes: reload refuses unknown keys)", want)
			}
		}
	})
}

// checkOneVersion checks that every file under root that names the release
// names the one in cmd/jwksverify/internal/buildinfo/VERSION (vX.Y.Z): the
// Helm chart's version (X.Y.Z) and appVersion, the Kubernetes manifests'
// image tag, the image tags DEPLOY.md and the Dockerfile show, and the
// CHANGELOG's newest heading.
func checkOneVersion(t *testing.T, root string) {
	t.Helper()
	release := strings.TrimSpace(readRoot(t, root, "cmd/jwksverify/internal/buildinfo/VERSION"))
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(release) {
		t.Fatalf("VERSION = %q, want vX.Y.Z", release)
	}
	bare := strings.TrimPrefix(release, "v")
	t.Run("helm-chart", func(t *testing.T) {
		var chart struct {
			Version    string `yaml:"version"`
			AppVersion string `yaml:"appVersion"`
		}
		if err := yaml.Unmarshal([]byte(readRoot(t, root, "deploy/helm/jwksverify/Chart.yaml")), &chart); err != nil {
			t.Fatal(err)
		}
		if chart.Version != bare || chart.AppVersion != release {
			t.Errorf("Chart.yaml version %q appVersion %q, want %q and %q", chart.Version, chart.AppVersion, bare, release)
		}
		values := readRoot(t, root, "deploy/helm/jwksverify/values.yaml")
		if !regexp.MustCompile(`(?m)^  tag: ""`).MatchString(values) {
			t.Error(`values.yaml image.tag is not "" (the chart's appVersion)`)
		}
	})
	imageRE := regexp.MustCompile(`jwksverify:(v?\d+\.\d+\.\d+[\w.+-]*|latest)`)
	checkImages := func(t *testing.T, name string, min int) {
		t.Helper()
		text := readRoot(t, root, name)
		found := imageRE.FindAllStringSubmatch(text, -1)
		if len(found) < min {
			t.Errorf("%s names %d images jwksverify:<tag>, want at least %d", name, len(found), min)
		}
		for _, m := range found {
			if m[1] != release && !strings.HasPrefix(m[1], release+"-dev") {
				t.Errorf("%s names image %s, want jwksverify:%s", name, m[0], release)
			}
		}
	}
	t.Run("kubernetes-manifests", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(root, "deploy/kubernetes/*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no manifests: %v", err)
		}
		n := 0
		for _, f := range files {
			text := readRoot(t, root, "deploy/kubernetes/"+filepath.Base(f))
			for _, m := range regexp.MustCompile(`(?m)^\s*image:\s*(\S+)`).FindAllStringSubmatch(text, -1) {
				n++
				if m[1] != "jwksverify:"+release {
					t.Errorf("%s: image %s, want jwksverify:%s", filepath.Base(f), m[1], release)
				}
			}
		}
		if n == 0 {
			t.Error("no image: line in deploy/kubernetes")
		}
	})
	t.Run("deploy-doc", func(t *testing.T) { checkImages(t, "docs/DEPLOY.md", 2) })
	t.Run("dockerfile", func(t *testing.T) { checkImages(t, "Dockerfile", 1) })
	t.Run("changelog", func(t *testing.T) {
		m := regexp.MustCompile(`(?m)^## \[([^\]]+)\]`).FindStringSubmatch(readRoot(t, root, "CHANGELOG.md"))
		if m == nil || m[1] != bare {
			t.Errorf("CHANGELOG.md's newest heading is %v, want ## [%s]", m, bare)
		}
	})
}

// TestGoDirectiveIsTheDependenciesFloor checks that each module's go.mod
// (and go.work) declares the highest go version its dependencies declare,
// not the maintainers' toolchain, which goes in the toolchain line: a
// module requiring jwksverify is raised to this module's go line.
func TestGoDirectiveIsTheDependenciesFloor(t *testing.T) {
	for _, dir := range []string{"../..", "../../integration", "../../bench"} {
		t.Run(filepath.Base(filepath.Clean(dir)), func(t *testing.T) {
			// A copy of go.mod and go.sum (-modfile): listing the whole graph
			// adds checksums to go.sum, which must stay what tidy makes it.
			tmp := t.TempDir()
			for _, f := range []string{"go.mod", "go.sum"} {
				if err := os.WriteFile(filepath.Join(tmp, f), []byte(readRoot(t, dir, f)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("go", "list", "-modfile="+filepath.Join(tmp, "go.mod"), "-m", "-f", "{{if not .Main}}{{.GoVersion}}{{end}}", "all")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -m all: %v", err)
			}
			floor := "1.0"
			for _, v := range strings.Fields(string(out)) {
				if gover(v) > gover(floor) {
					floor = v
				}
			}
			mod := readRoot(t, dir, "go.mod")
			m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(mod)
			if m == nil || m[1] != floor {
				t.Errorf("go.mod says go %v; its dependencies' highest go line is %s", m, floor)
			}
			if !regexp.MustCompile(`(?m)^toolchain go\d+\.\d+\.\d+$`).MatchString(mod) {
				t.Error("go.mod has no toolchain line (the maintainers' patch release)")
			}
		})
	}
	work := readRoot(t, "../..", "go.work")
	if mod := readRoot(t, "../..", "go.mod"); regexp.MustCompile(`(?m)^go .*$`).FindString(work) != regexp.MustCompile(`(?m)^go .*$`).FindString(mod) {
		t.Error("go.work's go line differs from go.mod's")
	}
}

// gover makes a go version comparable as a string: "1.26.0" → "001026000".
func gover(v string) string {
	var b strings.Builder
	parts := strings.SplitN(v, ".", 3)
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	for _, p := range parts {
		n := strings.TrimLeft(p, "0123456789")
		p = strings.TrimSuffix(p, n) // drop rc/beta suffixes
		b.WriteString(strings.Repeat("0", max(0, 3-len(p))) + p)
	}
	return b.String()
}

// TestConsumerModuleKeepsItsGoVersion: an empty module that requires the
// library at go 1.26.0 keeps that line after `go mod tidy` (the library's
// go line must not raise its users to a patch release).
func TestConsumerModuleKeepsItsGoVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy over the library's module graph")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const goLine = "go 1.26.0"
	files := map[string]string{
		"go.mod": "module example.com/consumer\n\n" + goLine + "\n\nrequire github.com/jwksverify/jwksverify v0.0.0\n\nreplace github.com/jwksverify/jwksverify => " + root + "\n",
		"main.go": `package main

import (
	"fmt"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

func main() { fmt.Println(verify.Algorithms(), cache.ErrWeakKey) }
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		// The proxy is the environment's (GOPROXY); the module cache usually
		// holds every module already. GOTOOLCHAIN=local: the go line, not a
		// toolchain switch, is what is checked.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the consumer module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	mod := readRoot(t, dir, "go.mod")
	if got := regexp.MustCompile(`(?m)^go .*$`).FindString(mod); got != goLine {
		t.Errorf("after go mod tidy the consumer's go.mod says %q, want %q:\n%s", got, goLine, mod)
	}
	if strings.Contains(mod, "\ntoolchain ") {
		t.Errorf("go mod tidy added a toolchain line to the consumer:\n%s", mod)
	}
}

// TestExamplesPerPublicPackage checks that every public package of the
// library has a runnable example (an Example function with an output
// comment) and that no file holding examples imports an internal package:
// a reader copies an example as it is (STYLE.md 21).
func TestExamplesPerPublicPackage(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Dir}} {{join .TestGoFiles \",\"}},{{join .XTestGoFiles \",\"}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 || strings.Contains(f[0], "/internal") || strings.Contains(f[0], "/cmd/") {
			continue
		}
		n++
		pkg, dir := f[0], f[1]
		runnable := 0
		for _, name := range strings.Split(strings.Join(f[2:], ""), ",") {
			if name == "" {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			examples := 0
			for _, d := range file.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Recv != nil {
					continue
				}
				examples++
				for _, c := range file.Comments {
					if c.Pos() > fn.Body.Lbrace && c.End() < fn.Body.Rbrace && regexp.MustCompile(`^// (Unordered output|Output):`).MatchString(c.List[0].Text) {
						runnable++
						break
					}
				}
			}
			if examples == 0 {
				continue
			}
			for _, imp := range file.Imports {
				if p := strings.Trim(imp.Path.Value, `"`); strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal") {
					t.Errorf("%s: a file with examples imports %s", filepath.Join(dir, name), p)
				}
			}
		}
		if runnable == 0 {
			t.Errorf("%s has no runnable example (an Example function with // Output:)", pkg)
		}
	}
	if n < 5 {
		t.Fatalf("found %d public packages; go list output: %s", n, out)
	}
}

// TestAPIDocExamplesExist checks that every example docs/API.md names
// (pkg.ExampleName) is a function of that package's tests.
func TestAPIDocExamplesExist(t *testing.T) {
	doc := readRoot(t, "../..", "docs/API.md")
	named := regexp.MustCompile("`([a-z]+)\\.(Example\\w*)`").FindAllStringSubmatch(doc, -1)
	if len(named) < 10 {
		t.Fatalf("docs/API.md names %d examples, want the list of every package's", len(named))
	}
	for _, m := range named {
		files, err := filepath.Glob(filepath.Join("../..", "*", "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		more, _ := filepath.Glob(filepath.Join("../..", "*", "*", "*_test.go"))
		found := false
		for _, f := range append(files, more...) {
			if filepath.Base(filepath.Dir(f)) != m[1] {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "\nfunc "+m[2]+"() {") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/API.md names %s.%s, which no test file of package %s defines", m[1], m[2], m[1])
		}
	}
}
