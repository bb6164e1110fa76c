package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// docConfigBlock is one fenced yaml block of a doc that is a whole
// configuration (it has a top-level issuers key), as an adopter copies it.
type docConfigBlock struct {
	where string // doc:line
	yaml  string
}

var (
	yamlFence = regexp.MustCompile("(?ms)^( *)```ya?ml\n(.*?)^ *```")
	// A path an example names (a mounted Secret, a state directory, a
	// key set), with the key it is the value of.
	docPath = regexp.MustCompile(`\b(jwks_file|secret_file|keys_file|ca_file|fetch_bearer_token_file|bearer_token_file|client_secret_file|password_file|key_file|state_dir|bundle_file): *([^\s,}\]"'#][^\s,}\]"']*)`)
)

// docConfigBlocks returns the whole configurations of the adopter's docs.
func docConfigBlocks(t *testing.T) []docConfigBlock {
	t.Helper()
	var out []docConfigBlock
	for _, doc := range []string{"README.md", "docs/CONFIG.md", "docs/API.md", "docs/DEPLOY.md", "docs/OPERATIONS.md", "docs/POLICIES.md"} {
		b, err := os.ReadFile(filepath.Join("../..", doc))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, m := range yamlFence.FindAllStringSubmatchIndex(s, -1) {
			indent := m[3] - m[2]
			var body strings.Builder
			for line := range strings.Lines(s[m[4]:m[5]]) {
				body.WriteString(line[min(indent, len(line)-len(strings.TrimLeft(line, " "))):])
			}
			if !regexp.MustCompile(`(?m)^issuers:`).MatchString(body.String()) {
				continue // a fragment: one section, a proxy's file, a Helm value
			}
			out = append(out, docConfigBlock{fmt.Sprintf("%s:%d", doc, strings.Count(s[:m[0]], "\n")+1), body.String()})
		}
	}
	return out
}

// docStub writes, in dir, a file fit to be the value of key, and returns
// its name.
func docStub(t *testing.T, dir, key string, n int) string {
	t.Helper()
	name := fmt.Sprintf("stub%d", n)
	var data []byte
	switch key {
	case "state_dir":
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		return name
	case "keys_file": // mint: a private JWKS whose kids the examples name
		data = testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "k1"},
			testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "k2"})
	case "jwks_file":
		var err error
		if data, err = os.ReadFile("../../testdata/idp-jwks/keycloak.jwks.json"); err != nil {
			t.Fatal(err)
		}
	case "ca_file":
		data = testkeys.NewCA("doc example CA").PEM
	default: // secrets and bearer tokens
		data = []byte(strings.Repeat("s3cr3t-", 8))
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestDocConfigExamplesPassCheck: every whole configuration the docs show
// (README, CONFIG, API, DEPLOY, OPERATIONS, POLICIES) passes `jwksverify
// check` offline once the files it names exist: an adopter who copies one
// and fills in the files is not met by a configuration error the page did
// not mention. The paths it names are moved into a temp dir, each a stub of
// what its key reads (a JWKS, a mint JWKS, a CA, a secret); every secret_env is
// set (and no JWKSVERIFY_ variable).
func TestDocConfigExamplesPassCheck(t *testing.T) {
	blocks := docConfigBlocks(t)
	if len(blocks) < 7 {
		t.Fatalf("found %d whole configurations in the docs, want the ~8 they show", len(blocks))
	}
	env := func(name string) (string, bool) {
		if strings.HasPrefix(name, "JWKSVERIFY_") {
			return "", false // the file alone, as written
		}
		return strings.Repeat("e", 32), true // an introspection client's secret_env
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, b := range blocks {
		t.Run(b.where, func(t *testing.T) {
			dir := t.TempDir()
			n := 0
			doc := docPath.ReplaceAllStringFunc(b.yaml, func(s string) string {
				m := docPath.FindStringSubmatch(s)
				n++
				return m[1] + ": " + docStub(t, dir, m[1], n)
			})
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			plan, err := config.Load(path, config.Overrides{}, env)
			if err != nil {
				t.Fatalf("the example is refused: %v\n%s", err, b.yaml)
			}
			for _, p := range checkPlan(context.Background(), plan, false, logger, func(string, ...any) {}) {
				t.Errorf("jwksverify check: %v", p)
			}
		})
	}
}
