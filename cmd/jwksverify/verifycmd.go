package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// maxPEMBytes bounds a --pem file.
const maxPEMBytes = 1 << 20

// verifyFlags are the flags of `jwksverify verify`.
type verifyFlags struct {
	config, jwks, discovery, secretFile, pem string
	issuer                                   string
	audiences, algs                          []string
	leeway                                   string
	now                                      string
	explain                                  bool
	// dpop is a DPoP proof to check with the token, for the request
	// htm htu.
	dpop, htm, htu string
	// policy names the policy to decide by; method, host and path are the
	// original request the config's routes choose one by (as /v1/authz).
	policy, method, host, path string
	// kind is access_token or id_token; an ID token is checked with the
	// inputs nonce, accessToken, code, maxAge and acr (as /v1/verify).
	kind, nonce, accessToken, code, maxAge string
	acr                                    []string
}

// idToken returns the ID-token inputs the flags ask for, nil for an access
// token, or a usage error: an unknown --kind, inputs without --kind
// id_token, a bad --max-age.
func (f *verifyFlags) idToken() (*verify.IDTokenChecks, error) {
	inputs := f.nonce != "" || f.accessToken != "" || f.code != "" || f.maxAge != "" || len(f.acr) > 0
	switch kind := cmp.Or(f.kind, server.KindAccessToken); {
	case kind == server.KindAccessToken && inputs:
		return nil, errors.New("--nonce, --access-token, --code, --max-age and --acr need --kind id_token")
	case kind == server.KindAccessToken:
		return nil, nil
	case kind != server.KindIDToken:
		return nil, fmt.Errorf("--kind %q: want access_token or id_token", f.kind)
	case f.dpop != "":
		return nil, errors.New("--dpop: an ID token has no sender constraint")
	}
	in := &verify.IDTokenChecks{Nonce: f.nonce, AccessToken: f.accessToken, Code: f.code, ACRValues: f.acr}
	if f.maxAge != "" {
		d, err := time.ParseDuration(f.maxAge)
		if n, nerr := strconv.ParseInt(f.maxAge, 10, 64); nerr == nil {
			// Seconds beyond a Duration's range wrapped (18446744074
			// was 0.29 s, a negative value a positive one).
			d, err = time.Duration(n)*time.Second, nil
			if n > int64(math.MaxInt64/time.Second) || n < 0 {
				err = errors.New("out of range")
			}
		}
		if err != nil || d < 0 {
			return nil, fmt.Errorf("--max-age %q: want seconds (300) or a duration (5m), not negative, at most %d seconds", f.maxAge, int64(math.MaxInt64/time.Second))
		}
		in.MaxAge, in.HasMaxAge = d, true
	}
	return in, nil
}

// nonEmpty is a flag's setter that refuses an empty value (a script's
// unset variable), saying why: an absent flag means something else.
func nonEmpty(why string, set func(string)) func(string) error {
	return func(v string) error {
		if v == "" {
			return errors.New("empty; " + why)
		}
		set(v)
		return nil
	}
}

// notChecked is nonEmpty's reason for a flag whose absence skips a check.
const notChecked = "leave the flag out to not check it"

// authorizes reports whether the flags ask for a policy decision.
func (f *verifyFlags) authorizes() bool {
	return f.policy != "" || f.method != "" || f.host != "" || f.path != ""
}

func (a *app) verify(ctx context.Context, args []string) int {
	fs := a.newFlagSet("verify")
	var f verifyFlags
	fs.StringVar(&f.config, "config", "", "verify with the issuers of a configuration `file`")
	fs.StringVar(&f.jwks, "jwks", "", "JWKS `URL or file` (a file may hold oct keys)")
	fs.StringVar(&f.discovery, "discovery", "", "OIDC `issuer` whose discovery document names the JWKS")
	fs.StringVar(&f.secretFile, "secret-file", "", "HMAC secret `file` (raw bytes, at least 32)")
	fs.StringVar(&f.pem, "pem", "", "PEM public key or certificate `file`")
	fs.StringVar(&f.issuer, "issuer", "", "required iss (default: the --discovery issuer; not checked when neither is given)")
	fs.Func("audience", "accepted aud (repeatable; not checked when absent)", appendTo(&f.audiences))
	fs.Func("alg", "allowed alg (repeatable; default: every algorithm the keys fit)", appendTo(&f.algs))
	fs.StringVar(&f.leeway, "leeway", "", "clock skew tolerated on exp and nbf (default 30s; 0s for none)")
	fs.StringVar(&f.now, "now", "", "judge the time claims at this instant: RFC 3339 or Unix seconds")
	fs.BoolVar(&f.explain, "explain", false, "print every check and its outcome before the result")
	fs.StringVar(&f.dpop, "dpop", "", "a DPoP `proof` presented with the token (needs --htm and --htu)")
	fs.StringVar(&f.htm, "htm", "", "the `method` of the request the DPoP proof is for")
	fs.StringVar(&f.htu, "htu", "", "the `URL` of the request the DPoP proof is for")
	fs.StringVar(&f.policy, "policy", "", "decide by the policy `name` of --config (as /v1/policy/<name>)")
	fs.StringVar(&f.method, "method", "", "the original request's `method` (default GET when --host or --path is given): --config's routes choose the policy, as /v1/authz")
	fs.StringVar(&f.host, "host", "", "the original request's `host`")
	fs.StringVar(&f.path, "path", "", "the original request's `path` (default /), normalized as forward-auth normalizes it")
	fs.StringVar(&f.kind, "kind", "", "what the token must be: access_token (default) or id_token (an OIDC ID token: --audience gives the client IDs)")
	// An ID-token input given an empty value (--nonce "$NONCE", the
	// variable unset) is a usage error, as /v1/verify's empty "nonce" is
	// 400: read as "not asked", it verified a token of another login.
	fs.Func("nonce", "with --kind id_token: the `nonce` of the authentication request", nonEmpty(notChecked, func(v string) { f.nonce = v }))
	fs.Func("access-token", "with --kind id_token: the access `token` issued with it (at_hash)", nonEmpty(notChecked, func(v string) { f.accessToken = v }))
	fs.Func("code", "with --kind id_token: the authorization `code` issued with it (c_hash)", nonEmpty(notChecked, func(v string) { f.code = v }))
	fs.Func("max-age", "with --kind id_token: the max_age of the authentication request, `seconds` or a duration (auth_time)", nonEmpty(notChecked, func(v string) { f.maxAge = v }))
	fs.Func("acr", "with --kind id_token: an accepted acr value (repeatable: the acr_values)", nonEmpty(notChecked, func(v string) { f.acr = append(f.acr, v) }))
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	code, err := a.runVerify(ctx, f, pos, newLogger(a.stderr, slog.LevelWarn, "text"))
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify verify: %v\n", err)
	}
	return code
}

// runVerify returns the exit status, and an error to print on stderr for
// usage errors.
func (a *app) runVerify(ctx context.Context, f verifyFlags, pos []string, logger *slog.Logger) (int, error) {
	if len(pos) != 1 {
		return exitUsage, errors.New("want exactly one TOKEN argument (or - to read it from standard input)")
	}
	leeway, at, err := f.times()
	if err != nil {
		return exitUsage, err
	}
	idt, err := f.idToken()
	if err != nil {
		return exitUsage, err
	}
	plan, vo, err := a.verifyPlan(f)
	if err != nil {
		return exitUsage, err
	}
	token, err := a.readToken(pos[0], vo.MaxTokenBytes)
	if errors.Is(err, verify.ErrTokenTooLarge) {
		return a.writeVerdict(nil, "", err), nil
	} else if err != nil {
		return exitUsage, err
	}
	if rest, ok := cutBearer(token); ok {
		// A token copied with its header's scheme: the token is what follows.
		fmt.Fprintln(a.stderr, `jwksverify verify: note: removed the "Bearer " prefix (an Authorization header's scheme); verifying the token after it`)
		token = rest
	}

	issuers, err := f.issuers(plan, token, leeway, idt != nil)
	if err != nil {
		return exitUsage, err
	}
	v, err := newCLIVerifier(ctx, vo, issuers, token, at, logger)
	if err != nil {
		return exitUsage, err
	}
	var steps []verify.Step
	var res *verify.Result
	switch {
	case idt != nil && f.explain:
		steps, res, err = v.ExplainIDTokenAt(ctx, token, at, *idt)
	case idt != nil:
		res, err = v.VerifyIDTokenAt(ctx, token, at, *idt)
	case f.explain:
		steps, res, err = v.ExplainAt(ctx, token, at)
	default:
		res, err = v.VerifyAt(ctx, token, at)
	}
	// An ID token has no sender constraint (the server's binding stage
	// skips it too).
	if err == nil && idt == nil && (f.dpop != "" || plan != nil) {
		var bsteps []verify.Step
		bsteps, err = senderBinding(ctx, f, plan, v, res, token, at)
		steps = append(steps, bsteps...)
		if err != nil {
			res = nil
		}
	}
	var pd policyDecision
	var refusedBy *policy.Policy
	if f.authorizes() {
		pd = choosePolicy(plan.Server.Policies, f)
		if err == nil {
			var psteps []verify.Step
			psteps, refusedBy, err = pd.decide(res)
			steps = append(steps, psteps...)
		}
	}
	if f.explain {
		a.writeSteps(steps)
	}
	if f.authorizes() {
		return a.writeAuthorized(res, cmp.Or(refusedBy, pd.choice.Policy), token, err), nil
	}
	return a.writeVerdict(res, token, err), nil
}

// times reads --leeway (zero: not given; negative: none) and --now (the
// instant the time claims are judged at).
func (f *verifyFlags) times() (leeway time.Duration, at time.Time, err error) {
	if f.leeway != "" {
		d, err := time.ParseDuration(f.leeway)
		if err != nil || d < 0 || d > verify.MaxLeeway {
			return 0, at, fmt.Errorf("--leeway %q: want a duration in [0s, %gm] such as 30s", f.leeway, verify.MaxLeeway.Minutes())
		}
		leeway = cmp.Or(d, -1) // verify: zero is the default, negative none
	}
	at = time.Now()
	if f.now != "" {
		if at, err = parseNow(f.now); err != nil {
			return 0, at, err
		}
	}
	return leeway, at, nil
}

// verifyPlan checks the key source flags and loads --config: the plan
// (nil without --config) and the verifier's options.
func (a *app) verifyPlan(f verifyFlags) (*config.Plan, verify.Options, error) {
	vo := verify.Options{MaxTokenBytes: verify.DefaultMaxTokenBytes}
	n := 0
	for _, s := range []string{f.config, f.jwks, f.discovery, f.secretFile, f.pem} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return nil, vo, errors.New("want exactly one of --config, --jwks, --discovery, --secret-file, --pem")
	}
	if f.config == "" {
		if f.authorizes() {
			return nil, vo, errors.New("--policy, --method, --host and --path need --config (its policies and routes)")
		}
		return nil, vo, nil
	}
	plan, err := config.Load(f.config, config.Overrides{NoServerSecrets: true}, a.lookupEnv)
	if err != nil {
		return nil, vo, err
	}
	vo = plan.Verify
	vo.MaxTokenBytes, vo.TokenCache = cmp.Or(vo.MaxTokenBytes, verify.DefaultMaxTokenBytes), verify.TokenCacheOptions{}
	if _, ok := plan.Server.Policies.Lookup(f.policy); f.policy != "" && !ok {
		return nil, vo, fmt.Errorf("--policy %q is not a policy of %s", f.policy, f.config)
	}
	return plan, vo, nil
}

// issuers returns the issuers to verify token with: the plan's (the one of
// --issuer, if given) or the one of the key source flags, with --audience,
// --alg and --leeway replacing each one's own. For an ID token (idToken),
// --audience replaces the client IDs (id_token.client_ids) instead.
func (f *verifyFlags) issuers(plan *config.Plan, token string, leeway time.Duration, idToken bool) ([]config.Issuer, error) {
	var issuers []config.Issuer
	if plan != nil {
		for _, is := range plan.Issuers {
			if f.issuer == "" || is.Verify.Issuer == f.issuer {
				issuers = append(issuers, is)
			}
		}
		if len(issuers) == 0 {
			return nil, fmt.Errorf("--issuer %q is not configured in %s", f.issuer, f.config)
		}
	} else {
		if idToken && len(f.audiences) == 0 {
			return nil, errors.New("--kind id_token needs --audience: the client IDs the ID token's aud must hold")
		}
		is, err := flagIssuer(*f, peekKid(token))
		if err != nil {
			return nil, err
		}
		issuers = []config.Issuer{is}
	}
	for i := range issuers {
		v := &issuers[i].Verify
		switch {
		case len(f.audiences) > 0 && idToken:
			v.IDToken.ClientIDs = f.audiences
		case len(f.audiences) > 0:
			v.Audiences = f.audiences
		}
		if len(f.algs) > 0 {
			v.Algorithms = f.algs
		}
		if leeway != 0 {
			v.Leeway = leeway
		}
	}
	return issuers, nil
}

// newCLIVerifier builds the verifier of one run over issuers: local keys
// read at once (a broken file is a usage error), remote keys fetched only
// for the issuer the verifier routes token to, as its answer says
// (keys_unavailable for that issuer).
func newCLIVerifier(ctx context.Context, vo verify.Options, issuers []config.Issuer, token string, at time.Time, logger *slog.Logger) (*verify.Verifier, error) {
	vo.Issuers = make([]verify.Issuer, len(issuers))
	for i, is := range issuers {
		vo.Issuers[i] = is.Verify
		vo.Issuers[i].Keys = &cache.Keys{}
	}
	if err := readKeys(ctx, issuers, vo.Issuers, config.Issuer.Local, logger); err != nil {
		return nil, err
	}
	v, err := verify.New(vo) // refuses a bad --alg or --audience
	if err != nil {
		return nil, err
	}
	_, err = v.VerifyAt(ctx, token, at)
	if ve := (*verify.Error)(nil); errors.As(err, &ve) && errors.Is(err, verify.ErrKeysUnavailable) {
		// A source that cannot ever answer (a discovery document naming
		// another issuer, a 404, an http:// URL) is a mistake in the flags
		// or the configuration, not an outage to retry: a usage error.
		if err := readKeys(ctx, issuers, vo.Issuers, func(is config.Issuer) bool {
			return !is.Local() && (len(issuers) == 1 || is.Verify.Issuer == ve.Issuer)
		}, logger); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// policyDecision is the policy of --policy or of the original request
// (--method --host --path, by the routes), chosen as the server chooses it
// (policy.Set.Choose).
type policyDecision struct {
	choice policy.Choice
	err    error // the choice failed: forbidden whatever the token
	step   verify.Step
	o      request.Original
	oerr   error
	// also are the other readings the server decides the request as too
	// (policy.Set.AlsoAs: GET for a HEAD; policy.Set.AlsoUnder: the route
	// ending in "*" an application may run a deeper path with), each with
	// its choice.
	also []policy.Reading // as the server decides (policy.Set.Readings)
}

// choosePolicy chooses the policy of the flags; its step says which and how.
func choosePolicy(set *policy.Set, f verifyFlags) policyDecision {
	d := policyDecision{oerr: request.ErrMissing}
	req := "no original request (--method, --host, --path)"
	if f.method != "" || f.host != "" || f.path != "" {
		method, path := cmp.Or(f.method, "GET"), cmp.Or(f.path, "/")
		d.o, d.oerr = request.FromParts(method, "", f.host, path)
		req = fmt.Sprintf("%s %s %s", method, cmp.Or(request.NormalizeHost(f.host), "(no host)"), path)
		if d.oerr == nil {
			req = fmt.Sprintf("%s %s %s", d.o.Method, cmp.Or(d.o.Host, "(no host)"), d.o.Path)
		}
	}
	d.choice, d.err = set.Choose(f.policy, d.o, d.oerr)
	if d.err == nil && d.oerr == nil {
		d.also = set.Readings(f.policy, d.o, d.choice.Route)
	}
	c := d.choice
	d.step = verify.Step{Check: "policy", OK: d.err == nil}
	switch {
	case d.err != nil:
		d.step.Detail = d.err.Error() + "; request " + req
		if !errors.Is(d.oerr, request.ErrMissing) && d.oerr != nil {
			d.step.Detail += ": " + d.oerr.Error()
		}
	case c.By == policy.ByName:
		d.step.Detail = fmt.Sprintf("%s (--policy); request %s", c.Policy.Name(), req)
	case c.By == policy.ByRoute:
		d.step.Detail = fmt.Sprintf("%s (%s matched %s)", c.Policy.Name(), set.RouteString(c.Route), req)
	case c.Policy.Name() != "":
		d.step.Detail = fmt.Sprintf("%s (default_policy: no route matched %s)", c.Policy.Name(), req)
	default:
		d.step.Detail = fmt.Sprintf("any valid token (no route matched %s, no default_policy)", req)
	}
	return d
}

// decide evaluates the chosen policy on the verified token res
// (policy.Policy.Explain, the server's decision): the choice's step, then
// one per requirement, up to the first that failed. The error is the
// refusal (verify.ErrForbidden).
// decide evaluates the chosen policies for res; by is the policy that
// refused it when another reading's did (the server's 403 and its "policy"
// name that one), else nil.
func (d policyDecision) decide(res *verify.Result) (steps []verify.Step, by *policy.Policy, err error) {
	steps = []verify.Step{d.step}
	if d.err != nil {
		return steps, nil, d.err
	}
	psteps, err := d.choice.Policy.Explain(res, policy.Request{Original: d.o, Known: d.oerr == nil})
	steps = append(steps, psteps...)
	if err != nil {
		return steps, nil, err
	}
	// As the server: every other reading of the request must be allowed
	// too (a HEAD runs as GET; a path below a route ending in "*").
	for _, a := range d.also {
		how := cmp.Or(a.How, fmt.Sprintf("%s runs as %s", d.o.Method, a.Original.Method))
		if a.Err != nil {
			return append(steps, verify.Step{Check: "policy", Detail: how + ": " + a.Err.Error()}), nil, a.Err
		}
		asteps, err := a.Choice.Policy.Explain(res, policy.Request{Original: a.Original, Known: true})
		if err != nil {
			return append(append(steps, verify.Step{Check: "policy", OK: true, Detail: how + ": " + a.Choice.Policy.Name()}), asteps...), a.Choice.Policy, err
		}
	}
	return steps, nil, nil
}

// writeAuthorized prints the result of a decision under a policy as the
// body /v1/verify writes with "policy" (server.AppendAuthorized: "valid",
// "allowed", "policy") and returns the exit status: 0 allowed, 1 rejected
// or forbidden, 3 could not decide.
func (a *app) writeAuthorized(res *verify.Result, p *policy.Policy, token string, err error) int {
	if res == nil {
		err = cmp.Or(err, verify.ErrMalformed) // no result is never a pass
	}
	d := server.Decision{Status: server.StatusOf(err), Result: res, Class: verify.Class(err), Err: err}
	if p != nil {
		d.Policy = p.Name()
	}
	if d.Status != http.StatusOK && d.Status != http.StatusForbidden {
		d.Result = nil // a result only of a valid token
	}
	_, _ = a.stdout.Write(server.AppendAuthorized(nil, d, token))
	a.writeHint(err)
	return verdictExit(err)
}

// senderBinding applies the sender constraints to the verified token res.
// With --config they are the issuer's sender_constraint, applied by the
// server's binding stage as /v1/verify applies them (server.Decide at
// --now, with a replay store of this one run): a DPoP-bound token needs
// --dpop, an issuer whose dpop is required refuses a token without
// cnf.jkt, one whose dpop is off does not look at --dpop (the token is a
// bearer token), and a certificate-bound token fails (no client
// certificate reaches the CLI). Without --config there is no constraint:
// --dpop is checked against the token's cnf.jkt with the dpop defaults.
func senderBinding(ctx context.Context, f verifyFlags, plan *config.Plan, v *verify.Verifier, res *verify.Result, token string, at time.Time) ([]verify.Step, error) {
	var proofs []string
	if f.dpop != "" {
		proofs = []string{f.dpop}
	}
	if plan == nil {
		return checkProof(ctx, f, proofs, v, res, token, at)
	}
	sc := plan.Server.SenderConstraints[res.ConfiguredIssuer]
	so := server.Options{Verifier: v, ClientCert: plan.Server.ClientCert, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return at }}
	if sc != (server.SenderConstraint{}) {
		so.SenderConstraints = map[string]server.SenderConstraint{res.ConfiguredIssuer: sc}
	}
	var err error
	if sc.DPoP != server.ConstraintOff {
		if so.DPoP, err = oneRunChecker(plan.DPoP); err != nil {
			return nil, err
		}
	}
	srv, err := server.New(so)
	if err != nil {
		return nil, err
	}
	call := &server.Call{Endpoint: server.EndpointVerify, Token: token, DPoP: f.dpop != "", Proofs: proofs, Explain: f.explain}
	call.Original, call.OriginalErr = f.dpopRequest()
	d := srv.Decide(ctx, call)
	steps := d.Steps
	if f.dpop != "" && sc.DPoP == server.ConstraintOff && f.explain {
		steps = append(steps, verify.Step{Check: "dpop", OK: true,
			Detail: "--dpop not checked: the issuer's sender_constraint.dpop is off, so the token is accepted as a bearer token"})
	}
	return steps, d.Err
}

// dpopRequest is the request --htm --htu that the DPoP proof is for.
func (f verifyFlags) dpopRequest() (request.Original, error) {
	u, err := url.Parse(f.htu)
	if err != nil || !u.IsAbs() {
		return request.Original{}, fmt.Errorf("--htu %q is not an absolute URL", f.htu)
	}
	return request.FromParts(f.htm, u.Scheme, u.Host, u.EscapedPath())
}

// checkProof runs the checks of the DPoP proofs of --dpop, for the request
// --htm --htu, against the verified token res (its cnf.jkt), with the dpop
// defaults and a replay store of this one run.
func checkProof(ctx context.Context, f verifyFlags, proofs []string, v *verify.Verifier, res *verify.Result, token string, at time.Time) ([]verify.Step, error) {
	c, err := oneRunChecker(nil)
	if err != nil {
		return nil, err
	}
	in := dpop.Input{Proofs: proofs, AccessToken: token, Issuer: res.ConfiguredIssuer}
	if res.Confirmation != nil {
		in.JKT = res.Confirmation.JKT
	}
	for _, is := range v.Issuers() {
		if is.Issuer == res.ConfiguredIssuer {
			in.Leeway = max(is.Leeway, 0)
		}
	}
	in.Request, in.RequestErr = f.dpopRequest()
	steps, _, err := c.Explain(ctx, in, at)
	return steps, err
}

// oneRunChecker is a DPoP checker of p's algorithms and max_age (nil p:
// the defaults) over a replay store of this one run: the commands that do
// not serve (verify --dpop, check) never dial the configured store.
func oneRunChecker(p *config.DPoP) (*dpop.Checker, error) {
	var opts dpop.Options
	if p != nil {
		opts = p.Checker
	}
	opts.Replay, _ = replay.NewMemory(1)
	return dpop.New(opts)
}

// flagIssuer is the one issuer of --jwks, --discovery, --secret-file or
// --pem. The one key of --secret-file or --pem is named kid, the token's,
// so that the verifier selects it.
func flagIssuer(f verifyFlags, kid string) (config.Issuer, error) {
	// --discovery names the issuer: its tokens' iss is checked against it
	// (as the discovery document's issuer is), unless --issuer says otherwise.
	iss := cmp.Or(f.issuer, f.discovery)
	is := config.Issuer{Verify: verify.Issuer{Issuer: iss, SkipIssuerCheck: iss == ""}}
	is.JWKS.Issuer = iss
	switch {
	case f.discovery != "":
		is.JWKS.Issuer, is.JWKS.Discovery = f.discovery, true
	case isURL(f.jwks):
		is.JWKS.URL = f.jwks
	case f.jwks != "":
		is.JWKS.File, is.Verify.AllowHMAC = f.jwks, true
	case f.secretFile != "":
		k, algs, err := config.SecretKey(f.secretFile, kid)
		if err != nil {
			return is, fmt.Errorf("--secret-file: %w", err)
		}
		for _, alg := range f.algs {
			if err := config.CheckSecretAlgorithm(alg, k); err != nil {
				return is, fmt.Errorf("--alg: %w", err)
			}
		}
		is.JWKS.StaticKeys = []*cache.Key{k}
		is.Verify.AllowHMAC, is.Verify.Algorithms = true, algs
	default:
		k, err := readPEMKey(f.pem, kid)
		if err != nil {
			return is, fmt.Errorf("--pem %s: %w", f.pem, err)
		}
		is.JWKS.StaticKeys = []*cache.Key{k}
	}
	return is, nil
}

// readKeys reads once, concurrently, the keys of each issuer that want
// accepts into its verifier issuer's Keys, with no staleness bound, so that
// --now may lie anywhere. A local source that cannot be read is an error; a
// remote one leaves its issuer without keys (keys_unavailable).
func readKeys(ctx context.Context, issuers []config.Issuer, out []verify.Issuer, want func(config.Issuer) bool, logger *slog.Logger) error {
	errs := make([]error, len(issuers))
	var wg sync.WaitGroup
	for i, is := range issuers {
		if !want(is) {
			continue
		}
		wg.Go(func() {
			o := is.JWKS
			o.Logger, o.StateDir = logger, ""
			set, err := jwks.Fetch(ctx, o)
			switch {
			case err == nil:
				out[i].Keys.Store(cache.NewSet(set.Keys(), set.Skipped(), set.FetchedAt, time.Time{}))
			case is.Local():
				errs[i] = err
			case permanentFetchError(err):
				errs[i] = fmt.Errorf("issuer %q: %w%s", is.Verify.Issuer, err, fetchHint(err))
			default:
				logger.Warn("no keys for issuer", "issuer", is.Verify.Issuer, "err", err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// permanentFetchError reports whether a failed fetch of a remote key
// source is a mistake that no retry mends: a discovery document that names
// another issuer, a URL the transport rule refuses, a document that is not
// a key set, or an answer 4xx other than 408 and 429. An unreachable host,
// a timeout or a 5xx is an outage (keys_unavailable, exit 3).
func permanentFetchError(err error) bool {
	for _, p := range []error{jwks.ErrIssuerMismatch, jwks.ErrInsecureURL, jwks.ErrInvalidOptions,
		jwks.ErrMalformed, jwks.ErrNoKeys, jwks.ErrTooLarge, jwks.ErrTooManyRedirects} {
		if errors.Is(err, p) {
			return true
		}
	}
	if !errors.Is(err, jwks.ErrStatus) {
		return false
	}
	// jwks.ErrStatus's detail ends in the status code: "GET URL: 404".
	msg := err.Error()
	code, cerr := strconv.Atoi(msg[strings.LastIndexByte(msg, ' ')+1:])
	return cerr == nil && code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// fetchHint is what to do about a permanent fetch error, after "; ", or "".
func fetchHint(err error) string {
	switch {
	case errors.Is(err, jwks.ErrIssuerMismatch):
		return "; the issuer must be written exactly as the discovery document writes it (a trailing '/' included)"
	case errors.Is(err, jwks.ErrStatus):
		return "; check the URL (for --discovery: the issuer, without /.well-known/openid-configuration)"
	}
	return ""
}

// cutBearer returns token without one leading "Bearer " (any case, one or
// more spaces after it), and whether it had one: a token pasted from an
// Authorization header.
func cutBearer(token string) (string, bool) {
	const scheme = "bearer "
	if len(token) <= len(scheme) || !strings.EqualFold(token[:len(scheme)], scheme) {
		return token, false
	}
	return strings.TrimLeft(token[len(scheme):], " "), true
}

// parseNow reads --now: RFC 3339 or Unix seconds.
func parseNow(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--now %q: want RFC 3339 (2025-01-02T15:04:05Z) or Unix seconds", s)
	}
	return t, nil
}

// readToken returns arg, or for "-" the token read from stdin (bounded,
// surrounding white space removed; a longer one is verify.ErrTokenTooLarge,
// a verdict).
func (a *app) readToken(arg string, limit int) (string, error) {
	if arg == "" {
		return "", errors.New(`the TOKEN argument is empty (an unset variable, as in "$TOKEN"?)`)
	}
	if arg != "-" {
		return arg, nil
	}
	// Room for surrounding white space (a trailing newline, CRLF). An
	// input that does not fit is too large whatever it ends with: what
	// follows the bound is never read, so it cannot be judged.
	room := int64(limit) + 1024
	b, err := io.ReadAll(io.LimitReader(a.stdin, room+1))
	if err != nil {
		return "", fmt.Errorf("reading the token from standard input: %w", err)
	}
	tok := string(bytes.TrimSpace(b))
	if len(tok) > limit || int64(len(b)) > room {
		return "", fmt.Errorf("%w: the token on standard input is larger than %d bytes", verify.ErrTokenTooLarge, limit)
	}
	if tok == "" {
		return "", errors.New("no token on standard input")
	}
	return tok, nil
}

// readPEMKey reads the first public key of a PEM file — PUBLIC KEY (PKIX),
// RSA PUBLIC KEY (PKCS #1) or CERTIFICATE (its subject key) — as a local key
// named kid.
func readPEMKey(path, kid string) (*cache.Key, error) {
	data, err := config.ReadFile(path, maxPEMBytes)
	if err != nil {
		return nil, err
	}
	var pub any
	for pub == nil && err == nil {
		var blk *pem.Block
		if blk, data = pem.Decode(data); blk == nil {
			return nil, errors.New("no PEM public key or certificate found")
		}
		switch blk.Type {
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(blk.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(blk.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(blk.Bytes); err == nil {
				pub = cert.PublicKey
			}
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("holds a %s; give the public key (openssl pkey -pubout) instead", blk.Type)
		}
	}
	if err != nil {
		return nil, err
	}
	return cache.NewKey(pub, cache.KeyMeta{Kid: kid, Local: true})
}

// peekKid returns the kid of token's header, without verifying anything:
// it names the one key of --pem or --secret-file after the token's kid, so
// that the verifier selects it. "" when there is none.
func peekKid(token string) string {
	var h struct {
		Kid string `json:"kid"`
	}
	if seg, _, _ := strings.Cut(token, "."); len(seg) <= 2*verify.DefaultMaxTokenBytes {
		if b, err := base64.RawURLEncoding.DecodeString(seg); err == nil {
			_ = json.Unmarshal(b, &h)
		}
	}
	return h.Kid
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// writeVerdict prints the result as the body /v1/verify writes
// (server.AppendVerdict: the message never holds the token) and returns the
// exit status: 0 valid, 1 rejected, 3 could not decide (the verifier's
// family of the error, ErrUnavailable, says so).
func (a *app) writeVerdict(res *verify.Result, token string, err error) int {
	if res == nil {
		err = cmp.Or(err, verify.ErrMalformed) // no result is never a pass
	}
	_, _ = a.stdout.Write(server.AppendVerdict(nil, res, verify.Class(err), err, token))
	a.writeHint(err)
	return verdictExit(err)
}

// writeHint prints the rejection's hint (verify.Error.Hint: the configured
// audiences, a near-miss issuer) on standard error: the CLI's user is the
// operator, to whom the server's log says the same.
func (a *app) writeHint(err error) {
	if ve := (*verify.Error)(nil); errors.As(err, &ve) && ve.Hint != "" {
		fmt.Fprintf(a.stderr, "jwksverify verify: hint: %s\n", ve.Hint)
	}
}

// verdictExit is the exit status of a verdict, from the status the server
// answers it with (server.StatusOf): 0 valid (allowed), 1 rejected or
// forbidden, 3 could not decide.
func verdictExit(err error) int {
	switch server.StatusOf(err) {
	case http.StatusOK:
		return exitOK
	case http.StatusServiceUnavailable:
		return exitUndecided
	}
	return exitFailure
}

// writeSteps prints the checks of --explain as a table.
func (a *app) writeSteps(steps []verify.Step) {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tCHECK\tRESULT\tDETAIL")
	for i, s := range steps {
		r := "ok"
		if !s.OK {
			r = "FAIL"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", i+1, s.Check, r, oneLine(s.Detail))
	}
	_ = tw.Flush()
	fmt.Fprintln(a.stdout)
}

// oneLine keeps a detail on one table row.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(s)
}
