package verify_test

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// joseInput is what testdata/idtoken/differential.mjs reads.
type joseInput struct {
	Now     int64                                   `json:"now"`
	Keysets map[string]map[string]map[string]string `json:"keysets"`
	Configs []joseConfig                            `json:"configs"`
	Cases   []joseCase                              `json:"cases"`
}

// joseIssuer is one issuer of a joseConfig and the name of its key set.
type joseIssuer struct {
	Issuer string `json:"issuer"`
	Keyset string `json:"keyset"`
}

// joseConfig is a diffConfig as jwtVerify's options.
type joseConfig struct {
	Issuers        []joseIssuer `json:"issuers"`
	Algorithms     []string     `json:"algorithms"`
	Audience       []string     `json:"audience"`
	ClockTolerance float64      `json:"clockTolerance"`
	RequiredClaims []string     `json:"requiredClaims"`
}

type joseCase struct {
	Name  string `json:"name"`
	Cfg   uint8  `json:"cfg"`
	Token string `json:"token"`
}

// joseVerdict is jwtVerify's answer to one case.
type joseVerdict struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Iss     any    `json:"iss"`
	Sub     any    `json:"sub"`
	Aud     any    `json:"aud"`
	Exp     string `json:"exp"`
}

// TestVerifyDifferentialJose holds the verifier to panva/jose 6 on the
// table's tokens, as FuzzVerifyDifferential holds it to golang-jwt: every
// token it accepts, jwtVerify (the same algorithms, issuer, audiences,
// clock tolerance, exp required when it is, a key chosen by kid) accepts,
// with the same iss, sub, aud and exp. Under CI=true a missing node or jose
// (`npm ci` in testdata/idtoken) fails the test.
func TestVerifyDifferentialJose(t *testing.T) {
	dir, node := nodeWithJose(t, "jose")

	// The key sets of allKeys and of diffConfig.second's issuer.
	all := map[string]map[string]string{}
	for _, alg := range testkeys.Algorithms {
		if n := testkeys.NameForAlg(alg); n != "" {
			pemBytes, _ := publicPEM(t, testkeys.Public(n))
			all[kidFor(alg)] = map[string]string{"pem": string(pemBytes)}
		} else {
			all[kidFor(alg)] = map[string]string{"secret": base64.StdEncoding.EncodeToString(testkeys.Secret())}
		}
	}
	pemB, _ := publicPEM(t, testkeys.Public(testkeys.EC256B))
	in := joseInput{Now: t0.Unix(), Keysets: map[string]map[string]map[string]string{
		"all": all,
		"b":   {kidFor("ES256"): {"pem": string(pemB)}},
	}}
	for _, c := range diffConfigs {
		jc := joseConfig{Issuers: []joseIssuer{{c.issuer.Issuer, "all"}}, Algorithms: c.algs, Audience: c.issuer.Audiences,
			ClockTolerance: c.leeway.Seconds(), RequiredClaims: []string{}}
		if c.second {
			jc.Issuers = append(jc.Issuers, joseIssuer{issB, "b"})
		}
		if c.requireExp {
			jc.RequiredClaims = []string{"exp"}
		}
		in.Configs = append(in.Configs, jc)
	}
	cases := diffCases()
	for _, c := range cases {
		in.Cases = append(in.Cases, joseCase{Name: c.name, Cfg: c.cfg, Token: diffToken(t, int(c.signer), c.header, c.payload, c.mut)})
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := runNode(t, dir, node, "differential.mjs", file)
	var verdicts []joseVerdict
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(in.Cases) {
		t.Fatalf("node differential.mjs: %d verdicts for %d cases (%v)", len(verdicts), len(in.Cases), err)
	}

	h := diffSetup(t)
	for i, c := range in.Cases {
		jv := verdicts[i]
		t.Run(c.Name, func(t *testing.T) {
			if jv.Name != c.Name {
				t.Fatalf("verdict %d is %q's", i, jv.Name)
			}
			res, err, _, _ := h.run(int(c.Cfg), c.Token)
			switch {
			case err != nil && jv.OK:
				// Allowed; the classes are in DECISIONS.
				t.Logf("stricter: Verify() = %v, jose accepts", err)
			case err != nil:
			case !jv.OK:
				// No excuse is needed: jose reads exp and nbf exactly
				// (no truncation), a number beyond float64 as Infinity
				// and int64 overflow does not arise in JavaScript.
				t.Fatalf("Verify() accepted, jose refused: %s %s", jv.Code, jv.Message)
			default:
				aud := joseAud(jv.Aud)
				if jv.Iss != any(res.Issuer) || jv.Sub != any(res.Subject) || !slices.Equal(aud, res.Audience) && len(aud)+len(res.Audience) > 0 {
					t.Fatalf("Verify() iss %q sub %q aud %q, jose %q %q %q", res.Issuer, res.Subject, res.Audience, jv.Iss, jv.Sub, aud)
				}
				if !joseSameExp(res.ExpiresAt, jv.Exp) {
					t.Fatalf("Verify() exp %s, jose %s", res.ExpiresAt, jv.Exp)
				}
			}
		})
	}
}

// joseAud is a jose aud (a string or an array) as a list.
func joseAud(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		out := make([]string, 0, len(a))
		for _, s := range a {
			str, _ := s.(string)
			out = append(out, str)
		}
		return out
	}
	return nil
}

// joseSameExp reports whether the verifier's exp (zero: absent) is jose's
// (a JavaScript number's text, "" when absent), which is a float64: equal
// within a microsecond, or both past the verifier's clamp at year 9999.
func joseSameExp(ours time.Time, theirs string) bool {
	if theirs == "" {
		return ours.IsZero()
	}
	f, err := strconv.ParseFloat(theirs, 64)
	if theirs == "Infinity" {
		f, err = math.Inf(1), nil
	}
	if err != nil {
		return false
	}
	if ours.Equal(maxExp) {
		return f >= float64(maxExp.Unix())
	}
	d := float64(ours.UnixNano())/1e9 - f
	return math.Abs(d) < 1e-6
}
