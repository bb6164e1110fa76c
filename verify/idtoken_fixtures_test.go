package verify_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// joseFixture is one ID token of testdata/idtoken/fixtures.json: signed by
// panva/jose with the test key of its alg, its at_hash and c_hash computed
// by panva/oidc-token-hash (testdata/idtoken/gen.mjs).
type joseFixture struct {
	Alg         string `json:"alg"`
	Kid         string `json:"kid"`
	Token       string `json:"token"`
	AccessToken string `json:"access_token"`
	Code        string `json:"code"`
	Nonce       string `json:"nonce"`
	AtHash      string `json:"at_hash"`
	CHash       string `json:"c_hash"`
}

func readFixtures(t *testing.T, data []byte) []joseFixture {
	t.Helper()
	var fx []joseFixture
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatalf("fixtures: %v", err)
	}
	if len(fx) != len(idAlgs) {
		t.Fatalf("fixtures hold %d tokens, want one per algorithm of %v", len(fx), idAlgs)
	}
	return fx
}

// checkFixtures verifies each fixture's ID token with its inputs, and with
// each input changed; HalfHash agrees with oidc-token-hash.
func checkFixtures(t *testing.T, fx []joseFixture) {
	t.Helper()
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{idIssuer(allKeys(t), verify.AZPAlways)}})
	for _, f := range fx {
		t.Run(f.Alg, func(t *testing.T) {
			if at, _ := verify.HalfHash(f.Alg, f.AccessToken); at != f.AtHash {
				t.Errorf("HalfHash(%s, access token) = %s, oidc-token-hash says %s", f.Alg, at, f.AtHash)
			}
			if c, _ := verify.HalfHash(f.Alg, f.Code); c != f.CHash {
				t.Errorf("HalfHash(%s, code) = %s, oidc-token-hash says %s", f.Alg, c, f.CHash)
			}
			good := verify.IDTokenChecks{Nonce: f.Nonce, AccessToken: f.AccessToken, Code: f.Code,
				HasMaxAge: true, MaxAge: 120e9, ACRValues: []string{"urn:mace:incommon:iap:silver"}}
			tests := []struct {
				name    string
				change  func(*verify.IDTokenChecks)
				wantErr error
			}{
				{"all-match", func(*verify.IDTokenChecks) {}, nil},
				{"wrong-nonce", func(in *verify.IDTokenChecks) { in.Nonce += "-" }, verify.ErrWrongNonce},
				{"wrong-access-token", func(in *verify.IDTokenChecks) { in.AccessToken += "-" }, verify.ErrWrongHash},
				{"wrong-code", func(in *verify.IDTokenChecks) { in.Code += "-" }, verify.ErrWrongHash},
				{"auth-too-old", func(in *verify.IDTokenChecks) { in.MaxAge = 10e9 }, verify.ErrAuthTooOld},
				{"wrong-acr", func(in *verify.IDTokenChecks) { in.ACRValues = []string{"gold"} }, verify.ErrWrongACR},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					in := good
					tt.change(&in)
					res, err := v.VerifyIDTokenAt(context.Background(), f.Token, t0, in)
					if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
						t.Fatalf("VerifyIDTokenAt(jose %s) = %v, want %v", f.Alg, err, tt.wantErr)
					}
					if err == nil && res.Alg != f.Alg {
						t.Fatalf("Alg = %s, want %s", res.Alg, f.Alg)
					}
				})
			}
		})
	}
}

// TestIDTokenJoseFixtures checks the committed fixtures.
func TestIDTokenJoseFixtures(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "idtoken", "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkFixtures(t, readFixtures(t, data))
}

// TestIDTokenJoseRegenerate runs the generator again (node, jose and
// oidc-token-hash: `npm ci` in testdata/idtoken) and checks what it makes
// now: its hashes must be the committed ones, and its tokens (PSS, ECDSA
// and so on sign with fresh randomness) must verify. Under CI=true
// (.ci/run installs them) a missing node or package fails the test.
func TestIDTokenJoseRegenerate(t *testing.T) {
	dir, node := nodeWithJose(t, "jose", "oidc-token-hash")
	out := runNode(t, dir, node, "gen.mjs")
	fresh := readFixtures(t, out)
	data, err := os.ReadFile(filepath.Join(dir, "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range readFixtures(t, data) {
		g := fresh[i]
		if g.Alg != f.Alg || g.AtHash != f.AtHash || g.CHash != f.CHash {
			t.Errorf("regenerated %s: at_hash %s c_hash %s; committed %s: %s %s", g.Alg, g.AtHash, g.CHash, f.Alg, f.AtHash, f.CHash)
		}
	}
	checkFixtures(t, fresh)
}

// nodeWithJose returns testdata/idtoken, where `npm ci` installs the
// packages named (checked by their package.json), and the path of node.
// Under CI=true (.ci/run installs them) a missing node or package fails
// the test; elsewhere it skips.
func nodeWithJose(t *testing.T, packages ...string) (dir, node string) {
	t.Helper()
	dir = filepath.Join("testdata", "idtoken")
	node, err := exec.LookPath("node")
	for _, p := range packages {
		if err == nil {
			_, err = os.Stat(filepath.Join(dir, "node_modules", p, "package.json"))
		}
	}
	if err != nil {
		need := strings.Join(packages, " and ")
		if os.Getenv("CI") == "true" {
			t.Fatalf("node with %s is required (cd verify/testdata/idtoken && npm ci): %v", need, err)
		}
		t.Skipf("node with %s not available (cd verify/testdata/idtoken && npm ci): %v", need, err)
	}
	return dir, node
}

// runNode runs node with args in dir and returns its standard output; a
// failure, or a run past a minute (a hung script), fails the test with the
// script's standard error.
func runNode(t *testing.T, dir, node string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v (ctx: %v)\n%s", strings.Join(args, " "), err, ctx.Err(), stderr.String())
	}
	return out
}
