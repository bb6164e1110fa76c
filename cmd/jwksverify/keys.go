package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
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
	Thumbprint string   `json:"thumbprint,omitempty"` // none for oct keys
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
	o := jwks.Options{Issuer: *disc, Discovery: *disc != "", Logger: newLogger(a.stderr, slog.LevelWarn, "text")}
	source := "discovery:" + *disc
	switch {
	case *disc != "":
	case isURL(*src):
		o.URL, source = *src, *src
	default:
		o.File, source = *src, "file:"+*src
	}
	set, err := jwks.Fetch(ctx, o)
	switch {
	case set == nil && o.File != "":
		fmt.Fprintf(a.stderr, "jwksverify keys: %s: %v\n", *src, err)
		return exitUsage
	case set == nil && permanentFetchError(err):
		fmt.Fprintf(a.stderr, "jwksverify keys: %v%s\n", err, fetchHint(err))
		return exitUsage
	case set == nil:
		fmt.Fprintf(a.stderr, "jwksverify keys: %v\n", err)
		return exitUndecided
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

// listKeys describes each key of set and flags its problems. Fatal
// problems (the key can never verify a token) make it unusable.
func listKeys(source string, set *cache.Set) keysReport {
	// Empty lists, not null, in the JSON.
	rep := keysReport{Source: source, Keys: []keyListing{}, Skipped: append([]cache.Skipped{}, set.Skipped()...)}
	for _, k := range set.Keys() {
		l := keyListing{
			Kid: k.Kid, Kty: k.Kty, Crv: k.Crv, Alg: k.Alg, Use: k.Use, KeyOps: k.KeyOps,
			Size: k.Size, Thumbprint: k.Thumbprint, Usable: true, Problems: []string{},
		}
		if k.Kty == "oct" {
			// A secret's thumbprint is a hash of the secret: an offline guess
			// checks against it. /v1/issuers hides it too.
			l.Thumbprint = ""
		}
		fatal := func(p string) { l.Problems, l.Usable = append(l.Problems, p), false }
		warn := func(p string) { l.Problems = append(l.Problems, p) }
		// The set holds only signing keys the parser kept, of sound
		// material: what can still be wrong is whether a key fits its alg.
		if k.Alg == "" {
			warn("no alg: tried with every algorithm its kty fits")
		}
		err := verify.CheckHMACKey(k) // a secret: its alg, else the shortest HMAC's
		if k.Kty != "oct" && k.Alg != "" {
			err = verify.KeyFits(k, k.Alg)
		}
		if err != nil {
			fatal(err.Error())
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
		problems := cmp.Or(strings.Join(k.Problems, "; "), "-")
		if !k.Usable {
			problems = "UNUSABLE: " + problems
		}
		kty := k.Kty
		if k.Crv != "" {
			kty += "/" + k.Crv
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			cmp.Or(k.Kid, "-"), kty, cmp.Or(k.Alg, "-"), cmp.Or(k.Use, "-"), k.Size, cmp.Or(k.Thumbprint, "-"), oneLine(problems))
	}
	_ = tw.Flush()
	if len(rep.Skipped) > 0 {
		fmt.Fprintln(a.stdout, "\nSkipped keys:")
		tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "INDEX\tKID\tKTY\tREASON")
		for _, s := range rep.Skipped {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Index, cmp.Or(s.Kid, "-"), cmp.Or(s.Kty, "-"), oneLine(s.Reason))
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(a.stdout, "\n%s: %s, %d usable, %d skipped\n", rep.Source, plural(len(rep.Keys), "key", "keys"), rep.Usable, len(rep.Skipped))
}
