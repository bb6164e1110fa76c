package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/jwks"
)

// keyListing is one key of `jwksverify keys`.
type keyListing struct {
	Kid        string   `json:"kid"`
	Kty        string   `json:"kty"`
	Crv        string   `json:"crv,omitempty"`
	Alg        string   `json:"alg"`
	Use        string   `json:"use"`
	KeyOps     []string `json:"key_ops,omitempty"`
	Size       int      `json:"size"`
	Thumbprint string   `json:"thumbprint"`
	Usable     bool     `json:"usable"`
	Problems   []string `json:"problems"`
}

// keysReport is the --json output of `jwksverify keys`.
type keysReport struct {
	Source  string          `json:"source"`
	Keys    []keyListing    `json:"keys"`
	Skipped []cache.Skipped `json:"skipped"`
	Usable  int             `json:"usable"`
}

func (a *app) keys(ctx context.Context, args []string) int {
	fs := a.newFlagSet("keys")
	src := fs.String("jwks", "", "JWKS `URL or file`")
	disc := fs.String("discovery", "", "OIDC `issuer` whose discovery document names the JWKS")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 || (*src == "") == (*disc == "") {
		fmt.Fprintln(a.stderr, "jwksverify keys: want exactly one of --jwks URL|FILE, --discovery ISSUER")
		return exitUsage
	}
	logger := newLogger(a.stderr, "warn", "text")
	var set *cache.Set
	var source string
	switch {
	case *disc != "":
		source = "discovery:" + *disc
		set, err = jwks.Fetch(ctx, jwks.Options{Issuer: *disc, Discovery: true, Logger: logger})
	case isURL(*src):
		source = *src
		set, err = jwks.Fetch(ctx, jwks.Options{URL: *src, Logger: logger})
	default:
		source = "file:" + *src
		set, err = readJWKSFile(*src, defaultMaxJWKSBytes, defaultMaxKeys)
		if err != nil {
			fmt.Fprintf(a.stderr, "jwksverify keys: %s: %v\n", *src, err)
			return exitUsage
		}
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify keys: %v\n", err)
		return exitFailure
	}
	rep := listKeys(source, set)
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		a.writeKeysTable(rep)
	}
	if rep.Usable == 0 {
		if !*asJSON {
			fmt.Fprintln(a.stderr, "jwksverify keys: no usable signing key")
		}
		return exitFailure
	}
	return exitOK
}

// jwsAlgs are the JWS signature algorithms by key type.
var jwsAlgs = map[string][]string{
	"RSA": {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"},
	"EC":  {"ES256", "ES384", "ES512"},
	"OKP": {"EdDSA"},
	"oct": {"HS256", "HS384", "HS512"},
}

// listKeys describes each key of set and flags its problems. Fatal
// problems (the key can never verify a token) make it unusable.
func listKeys(source string, set *cache.Set) keysReport {
	rep := keysReport{Source: source, Keys: []keyListing{}, Skipped: slices.Clone(set.Skipped())}
	if rep.Skipped == nil {
		rep.Skipped = []cache.Skipped{}
	}
	for _, k := range set.Keys() {
		l := keyListing{
			Kid: k.Kid, Kty: k.Kty, Crv: k.Crv, Alg: k.Alg, Use: k.Use, KeyOps: k.KeyOps,
			Size: k.Size, Thumbprint: k.Thumbprint, Usable: true, Problems: []string{},
		}
		fatal := func(p string) { l.Problems, l.Usable = append(l.Problems, p), false }
		warn := func(p string) { l.Problems = append(l.Problems, p) }
		if k.Use != "" && k.Use != "sig" {
			fatal("use=" + k.Use + ": not a signing key")
		}
		if k.KeyOps != nil && !slices.Contains(k.KeyOps, "verify") {
			fatal("key_ops lacks verify")
		}
		switch {
		case k.Alg == "":
			warn("no alg: tried with every algorithm its kty fits")
		case !slices.Contains(jwsAlgs[k.Kty], k.Alg):
			fatal("alg " + k.Alg + " does not sign with a " + k.Kty + " key")
		}
		if k.Kty == "RSA" && k.Size < cache.MinRSABits {
			fatal("RSA key of " + strconv.Itoa(k.Size) + " bits (minimum 2048)")
		}
		if k.Kty == "oct" && k.Size < 8*minSecretBytes {
			fatal("oct key of " + strconv.Itoa(k.Size/8) + " bytes (minimum 32)")
		}
		if k.Kid == "" {
			warn("no kid: only tokens without kid can select it")
		}
		if l.Usable {
			rep.Usable++
		}
		rep.Keys = append(rep.Keys, l)
	}
	for _, s := range rep.Skipped {
		if s.Reason == "duplicate kid" {
			for i := range rep.Keys {
				if rep.Keys[i].Kid == s.Kid {
					rep.Keys[i].Problems = append(rep.Keys[i].Problems, "duplicate kid: a later key with this kid was skipped")
				}
			}
		}
	}
	return rep
}

func (a *app) writeKeysTable(rep keysReport) {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KID\tKTY\tALG\tUSE\tSIZE\tTHUMBPRINT\tPROBLEMS")
	for _, k := range rep.Keys {
		problems := "-"
		if len(k.Problems) > 0 {
			problems = ""
			for i, p := range k.Problems {
				if i > 0 {
					problems += "; "
				}
				problems += p
			}
		}
		if !k.Usable {
			problems = "UNUSABLE: " + problems
		}
		kty := k.Kty
		if k.Crv != "" {
			kty += "/" + k.Crv
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			orDash(k.Kid), kty, orDash(k.Alg), orDash(k.Use), k.Size, k.Thumbprint, oneLine(problems))
	}
	_ = tw.Flush()
	if len(rep.Skipped) > 0 {
		fmt.Fprintln(a.stdout, "\nSkipped keys:")
		tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "INDEX\tKID\tKTY\tREASON")
		for _, s := range rep.Skipped {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Index, orDash(s.Kid), orDash(s.Kty), oneLine(s.Reason))
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(a.stdout, "\n%s: %d keys, %d usable, %d skipped\n", rep.Source, len(rep.Keys), rep.Usable, len(rep.Skipped))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
