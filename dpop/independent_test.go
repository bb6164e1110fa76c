package dpop_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/verify"
)

// TestIndependentProofs checks proofs minted by an independent
// implementation (testdata/mint_proofs.py: Python's cryptography, with its
// own JWS encoding and RFC 7638 thumbprint) for ES256, PS256 and EdDSA: the
// valid proof passes, and each proof with one field mutated fails with its
// class. python3 with cryptography is required under CI=true (.ci/run
// installs python3-cryptography).
func TestIndependentProofs(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import cryptography").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with cryptography is required (apt-get install python3-cryptography): %v", err)
		}
		t.Skipf("python3 with cryptography not available: %v", err)
	}
	now := time.Unix(time.Now().Unix(), 0)
	out, err := exec.Command(py, "testdata/mint_proofs.py", accessToken, strconv.FormatInt(now.Unix(), 10),
		"POST", "https://api.example.com/orders/1?q=1").Output()
	if err != nil {
		t.Fatalf("mint_proofs.py: %v", err)
	}
	var minted map[string]struct {
		JKT    string            `json:"jkt"`
		Proofs map[string]string `json:"proofs"`
	}
	if err := json.Unmarshal(out, &minted); err != nil {
		t.Fatal(err)
	}
	want := map[string]error{
		"valid": nil, "typ": verify.ErrInvalidDPoPProof, "alg": verify.ErrInvalidDPoPProof,
		"jwk-private": verify.ErrInvalidDPoPProof, "jwk-other-key": verify.ErrInvalidDPoPProof,
		"htm": verify.ErrInvalidDPoPProof, "htu": verify.ErrInvalidDPoPProof, "iat": verify.ErrInvalidDPoPProof,
		"ath": verify.ErrInvalidDPoPProof, "signature": verify.ErrInvalidDPoPProof, "jkt": verify.ErrBindingMismatch,
	}
	for _, alg := range []string{"ES256", "PS256", "EdDSA"} {
		m, ok := minted[alg]
		if !ok || len(m.Proofs) != len(want) {
			t.Fatalf("%s: minted %d proofs, want %d", alg, len(m.Proofs), len(want))
		}
		for name, wantErr := range want {
			t.Run(alg+"/"+name, func(t *testing.T) {
				c := newChecker(t, dpop.Options{})
				_, err := c.Check(context.Background(), input(m.Proofs[name], m.JKT), now)
				if (wantErr == nil) != (err == nil) || !errors.Is(err, wantErr) {
					t.Errorf("Check() = %v, want %v", err, wantErr)
				}
				if wantErr != nil && verify.Class(err) != verify.Class(wantErr) {
					t.Errorf("class = %s, want %s", verify.Class(err), verify.Class(wantErr))
				}
			})
		}
	}
}
