package server

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/internal/textclip"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// This file is the last stage and the one renderer: every challenge
// (WWW-Authenticate) and every body a decision is answered with is written
// here — the precomputed 401, 403 and 503 answers, forward-auth's answer,
// /v1/verify's verdict, /introspect's. Front ends pick the shape their
// transport needs; none builds an answer of its own.

// maxLogField bounds an attacker-chosen string (a kid) in a log line.
const maxLogField = 128

// maxMessage bounds the human message of a rejection in responses and logs.
const maxMessage = 512

// denial is a precomputed answer to a call that was not allowed.
type denial struct {
	challenge string   // WWW-Authenticate value, "" for a 503
	www       []string // challenge as a header value, shared
	body      []byte
}

// forbiddenBody is the body of every 403.
var forbiddenBody = []byte(`{"valid":true,"allowed":false,"error":"forbidden"}` + "\n")

// challenge builds a WWW-Authenticate value: scheme, then each name,
// value pair of params as name="value", then the RFC 9728 resource
// metadata URL when metadata is not "". Values are configuration or class
// words, never request data.
func challenge(scheme, metadata string, params ...string) string {
	var b strings.Builder
	b.WriteString(scheme)
	if metadata != "" {
		params = append(params, "resource_metadata", metadata)
	}
	for i := 0; i+1 < len(params); i += 2 {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(", ")
		}
		b.WriteString(params[i])
		b.WriteString(`="`)
		b.WriteString(params[i+1])
		b.WriteByte('"')
	}
	return b.String()
}

// newDenial builds the answer of class with status: for a 401 the RFC 6750
// challenge (no error code when the request carried no token, §3.1),
// naming the resource metadata when metadata is not "", and the JSON body.
func newDenial(class string, status int, noToken bool, metadata string) denial {
	body := []byte(`{"valid":false,"error":"` + class + `"}` + "\n")
	switch {
	case status != http.StatusUnauthorized:
		return denial{body: body}
	case noToken:
		return withChallenge(challenge("Bearer", metadata, "realm", "jwksverify"), body)
	}
	return withChallenge(challenge("Bearer", metadata, "error", "invalid_token", "error_description", class), body)
}

// dpopDenial is the 401 of an invalid proof: the DPoP challenge with the
// accepted algorithms (RFC 9449 §7.1), naming the RFC 9728 resource
// metadata when metadata is not "".
func dpopDenial(algs []string, metadata string) denial {
	const class = "invalid_dpop_proof"
	ch := challenge("DPoP", metadata, "error", class, "error_description", class, "algs", strings.Join(algs, " "))
	return withChallenge(ch, newDenial(class, http.StatusUnauthorized, false, "").body)
}

// newForbidden builds the 403 of a policy: RFC 6750 §3.1
// insufficient_scope, with the policy's scopes when it requires any.
func newForbidden(scopes string) denial {
	params := []string{"error", "insufficient_scope"}
	if scopes != "" {
		params = append(params, "scope", scopes)
	}
	return withChallenge(challenge("Bearer", "", params...), forbiddenBody)
}

func withChallenge(ch string, body []byte) denial {
	return denial{challenge: ch, www: []string{ch}, body: body}
}

// buildDenials precomputes the 401s and 503s of every class; metadata is
// the RFC 9728 resource metadata URL every 401 names ("" for none).
func (s *Server) buildDenials(metadata string) {
	classes := verify.Classes()
	s.rejected = make(map[string]denial, len(classes))
	s.unavailable = make(map[string]denial, len(classes))
	for _, c := range classes {
		s.rejected[c] = newDenial(c, http.StatusUnauthorized, false, metadata)
		s.unavailable[c] = newDenial(c, http.StatusServiceUnavailable, false, metadata)
	}
	s.noTokenDeny = newDenial(verify.Class(errNoToken), http.StatusUnauthorized, true, metadata)
}

// render sets the challenge and body of a decision that is not allowed:
// the precomputed answer of its status and class (of its policy, for a
// 403).
func (s *Server) render(d *Decision) {
	if d.Allowed() {
		return
	}
	var dn denial
	ok := true
	switch {
	case d.NoToken && d.Status == http.StatusUnauthorized:
		dn = s.noTokenDeny
	case d.Status == http.StatusUnauthorized:
		dn, ok = s.rejected[d.Class]
	case d.Status == http.StatusForbidden:
		if dn, ok = s.forbidden[d.forbiddenBy]; !ok {
			dn, ok = s.forbidAny, true
		}
	default:
		dn, ok = s.unavailable[d.Class]
	}
	if !ok {
		dn = newDenial(d.Class, d.Status, false, "")
	}
	d.Challenge, d.Body, d.www = dn.challenge, dn.body, dn.www
}

// writeForwardAuth writes the forward-auth answer of d: 200 with the claim
// headers and the minted token's header, or the denial (401, 403, 503).
func (s *Server) writeForwardAuth(w http.ResponseWriter, d *Decision) {
	if !d.Allowed() {
		s.writeDenial(w, d)
		return
	}
	h := w.Header()
	if len(d.headers) > 0 {
		// One backing array for every claim header: one allocation.
		vals := make([]string, len(d.headers))
		for i, ch := range d.headers {
			vals[i] = d.claimValue(ch.claim) // "" for an anonymous request
			h[ch.header] = vals[i : i+1 : i+1]
		}
	}
	if d.minted != nil {
		h[d.mintHeader] = d.minted
	}
	switch {
	case s.proxy == request.Envoy:
		// Envoy keeps a client's own copy of a header the answer does not
		// carry: remove it, as gRPC's answer does (UnmintedHeader), and the
		// CGI twins of the identity and mint headers (TwinsToRemove).
		if rm := s.envoyRemove[b2i(d.unminted != "")][b2i(d.RemoveAuthorization)]; len(rm) > 0 {
			h["X-Envoy-Auth-Headers-To-Remove"] = rm
		}
	case d.RemoveAuthorization:
		h["X-Envoy-Auth-Headers-To-Remove"] = s.static.stripAuthz
	}
	h["Cache-Control"] = s.static.noStore
	w.WriteHeader(http.StatusOK)
}

// writeDenial writes a 401, 403 or 503 for a request that was not allowed,
// with the challenge and the body ({"valid":false,"error":CLASS}, or for a
// 403 {"valid":true,"allowed":false,"error":"forbidden"}).
func (s *Server) writeDenial(w http.ResponseWriter, d *Decision) {
	h := w.Header()
	if d.www != nil {
		h["Www-Authenticate"] = d.www
	}
	h["Content-Type"] = s.static.json
	h["X-Content-Type-Options"] = s.static.nosniff
	h["Cache-Control"] = s.static.noStore
	w.WriteHeader(d.Status)
	_, _ = w.Write(d.Body)
}

// writeVerdict writes the /v1/verify answer of d for token: the verdict
// body (with "allowed" and "policy" when a policy decided, and the binding
// checks when explained), 200 for a verdict, 413 for token_too_large, 503
// when it could not decide.
func writeVerdict(w http.ResponseWriter, d *Decision, token string) {
	status := http.StatusOK
	switch {
	case d.Allowed():
	case d.Status == http.StatusServiceUnavailable:
		status = http.StatusServiceUnavailable
	case d.Class == "token_too_large":
		status = http.StatusRequestEntityTooLarge
	}
	v := d.view(d.authorized)
	writeRaw(w, status, v.append(nil, token))
}

// writeIntrospection writes the /introspect answer of d for token (RFC
// 7662): 200 {"active":true, claims..., "token_type"} for an allowed token,
// exactly {"active":false} for any other verdict; 503 with the class when
// it could not decide (an inactive answer would tell a resource server that
// a good token is bad).
func writeIntrospection(w http.ResponseWriter, d *Decision, token string) {
	switch {
	case d.Status == http.StatusServiceUnavailable:
		writeError(w, http.StatusServiceUnavailable, d.Class, safeMessage(d.Err, d.Class, token))
	case d.Allowed():
		if body, ok := activeBody(d.Result.Claims); ok {
			writeRaw(w, http.StatusOK, body)
			return
		}
		writeRaw(w, http.StatusOK, []byte(`{"active":false}`+"\n"))
	default:
		writeRaw(w, http.StatusOK, []byte(`{"active":false}`+"\n"))
	}
}

// writeTooLarge writes the 413 of a body over MaxBodyBytes, whose token
// was never read: {"error":code,"message":...}.
func writeTooLarge(w http.ResponseWriter, d *Decision, code string) {
	writeError(w, http.StatusRequestEntityTooLarge, code, safeMessage(d.Err, d.Class, ""))
}

// activeBody builds {"active":true, claims..., "token_type"} from the
// token's claims, values passed through exactly (numbers not rounded). A
// claim named "active" never overrides the answer; token_type is "Bearer"
// unless the token has one. A claim that names either in another case
// (Active, TOKEN_TYPE) is left out: beside the answer's own member it
// would make two names equal ignoring case, one member to encoding/json
// (the last winning) and a duplicate to jsonscan.Names, so to
// introspect.Decode. A value holding a lone surrogate escape is given as
// it was read and decided on (jsonscan.AsRead), so that neither the JSON
// answer nor the RFC 9701 JWT vouches for what another reader reads
// otherwise. Members are sorted by name.
func activeBody(claims json.RawMessage) ([]byte, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(claims, &m); err != nil || m == nil {
		return nil, false
	}
	for name, v := range m {
		if (strings.EqualFold(name, "active") || strings.EqualFold(name, "token_type")) && name != "active" && name != "token_type" {
			delete(m, name)
			continue
		}
		if jsonscan.LoneSurrogate(string(v)) {
			// The answer says what was decided on (as a minted token
			// does): the value as encoding/json read it, each lone
			// surrogate U+FFFD, not an escape other readers keep or refuse.
			m[name] = json.RawMessage(jsonscan.AsRead(string(v)))
		}
	}
	m["active"] = json.RawMessage("true")
	if _, ok := m["token_type"]; !ok {
		m["token_type"] = json.RawMessage(`"Bearer"`)
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, false
	}
	return []byte(buf.String()), true
}

// verdictBody is what the /v1/verify body of one answer shows.
type verdictBody struct {
	res   *verify.Result // the valid token; nil when not valid
	class string
	err   error
	// authorized: a policy decided; the body then has "allowed" and
	// "policy".
	authorized, allowed bool
	policy              string
	steps               []verify.Step
	minted              string // the token minted for the upstream, "" none
}

// view is the /v1/verify body of d; authorized says whether to show the
// policy's part.
func (d *Decision) view(authorized bool) verdictBody {
	v := verdictBody{class: d.Class, err: d.Err, authorized: authorized, allowed: d.Allowed(), policy: d.Policy, steps: d.Steps, minted: d.Minted}
	if d.Allowed() || (d.Status == http.StatusForbidden && d.Result != nil) {
		v.res = d.Result
	}
	if d.Anonymous {
		// No token, and an allow_anonymous policy lets the request pass:
		// the body says why it is not valid (missing_token), never the
		// class of a failure to decide that an empty class falls back to.
		v.class, v.err = verify.Class(errNoToken), errNoToken
	}
	return v
}

// append appends the body to b: {"valid":true,"issuer","kid","alg",
// "header","claims"} with header and claims passed through byte for byte
// from the verifier (numbers are never rounded), or
// {"valid":false,"error":class,"message":...}, the message bounded and
// never holding token; under a policy "allowed" follows "valid", a valid
// token it refused has "error":"forbidden", and "policy" names it;
// "minted" holds the token minted for the upstream when one was asked for. An
// empty class is taken from err, and an answer of no class word fails
// closed as "keys_unavailable". A single body (b nil) ends with a newline.
func (v *verdictBody) append(b []byte, token string) []byte {
	single := b == nil
	b = append(b, `{"valid":`...)
	b = appendBool(b, v.res != nil)
	if v.authorized {
		b = append(b, `,"allowed":`...)
		b = appendBool(b, v.allowed)
	}
	if v.res != nil {
		if v.authorized && !v.allowed {
			b = append(b, `,"error":"forbidden"`...)
		}
		b = append(b, `,"issuer":`...)
		b = appendString(b, v.res.Issuer)
		b = append(b, `,"kid":`...)
		b = appendString(b, v.res.Kid)
		b = append(b, `,"alg":`...)
		b = appendString(b, v.res.Alg)
		b = append(b, `,"header":`...)
		b = appendObject(b, v.res.Header)
		b = append(b, `,"claims":`...)
		b = appendObject(b, v.res.Claims)
	} else {
		class := cmp.Or(v.class, verify.Class(v.err), verify.Class(verify.ErrKeysUnavailable))
		b = append(b, `,"error":`...)
		b = appendString(b, class)
		b = append(b, `,"message":`...)
		b = appendString(b, safeMessage(v.err, class, token))
	}
	if v.authorized {
		b = append(b, `,"policy":`...)
		b = appendString(b, v.policy)
	}
	if v.minted != "" {
		b = append(b, `,"minted":`...)
		b = appendString(b, v.minted)
	}
	if len(v.steps) > 0 {
		js, _ := json.Marshal(v.steps) // verify.Step always encodes
		b = append(append(b, `,"binding_checks":`...), js...)
	}
	b = append(b, '}')
	if single {
		b = append(b, '\n')
	}
	return b
}

// AppendVerdict appends to b the /v1/verify body of one verifier answer for
// token: the one shape of a verdict, which `jwksverify verify` prints too.
// An accepted token (err nil, res set) is
// {"valid":true,"issuer","kid","alg","header","claims"} with header and
// claims passed through byte for byte from the verifier (numbers are never
// rounded); a rejected one is {"valid":false,"error":class,"message":...},
// the message bounded and never holding the token. An empty class is taken
// from err, and an answer of no class word (no result and no class) fails
// closed as "keys_unavailable", as [Server.Decide] does: the error is
// always a SPEC class word. A single verdict (b nil) ends with a newline.
// It is safe for concurrent use and retains nothing.
func AppendVerdict(b []byte, res *verify.Result, class string, err error, token string) []byte {
	v := verdictBody{class: class, err: err}
	if err == nil {
		v.res = res
	}
	return v.append(b, token)
}

// AppendAuthorized appends to b the /v1/verify body of a decision made
// under a policy: the verdict of [AppendVerdict] with "allowed" after
// "valid", "error":"forbidden" when a valid token was refused, and the
// "policy" that ran. The failed requirement is not shown: /v1/verify
// callers are not the operator. A single verdict (b nil) ends with a
// newline.
func AppendAuthorized(b []byte, d Decision, token string) []byte {
	v := d.view(true)
	v.steps = nil // a body of its own: the caller adds what it explains
	return v.append(b, token)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	j, _ := json.Marshal(s) // a string always encodes
	return append(b, j...)
}

// appendObject appends raw, a JSON object from the verifier (valid by its
// contract), or {} when empty.
func appendObject(b []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return append(b, "{}"...)
	}
	return append(b, raw...)
}

// safeMessage returns the human message of a rejection: the verifier's error
// text (which never holds the token), bounded. As a second line of defence,
// a message that contains the token or one of its segments is replaced by the
// class word.
func safeMessage(err error, class, token string) string {
	if err == nil {
		return class
	}
	msg := err.Error()
	if leaksToken(msg, token) {
		return class
	}
	return truncate(msg, maxMessage)
}

// leaksToken reports whether msg contains token, or one of its segments long
// enough to matter.
func leaksToken(msg, token string) bool {
	if len(token) >= 8 && strings.Contains(msg, token) {
		return true
	}
	for seg := range strings.SplitSeq(token, ".") {
		if len(seg) >= 16 && strings.Contains(msg, seg) {
			return true
		}
	}
	return false
}

// truncate bounds s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textclip.Clip(s, n) + "…"
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// setAnswerTwins precomputes the CGI twins an allowed answer removes
// (answerTwins) and forward-auth's Envoy removal lists (envoyRemove).
func (s *Server) setAnswerTwins() {
	var twins []string
	add := func(name string) {
		for _, t := range HeaderTwins(name) {
			if t = strings.ToLower(t); !slices.Contains(twins, t) {
				twins = append(twins, t)
			}
		}
	}
	for _, h := range s.identity {
		add(h.header)
	}
	if s.minter != nil && s.mintHeader != "Authorization" {
		add(s.mintHeader)
	}
	s.answerTwins = slices.Clip(twins)
	if s.proxy != request.Envoy {
		return
	}
	for u := range 2 {
		for a := range 2 {
			rm := slices.Clone(twins)
			if u == 1 {
				rm = append(rm, strings.ToLower(s.mintHeader))
			}
			if a == 1 {
				rm = append(rm, "authorization")
			}
			if len(rm) > 0 {
				// One value, the names joined by commas: Envoy splits each
				// value of the header on them (ext_authz's HTTP client), and
				// net/http writes one line per value, replacing and trimming
				// each.
				s.envoyRemove[u][a] = []string{strings.Join(rm, ", ")}
			}
		}
	}
}

// TwinsToRemove returns, for an allowed decision of a call that sets the
// upstream's headers ([Call.Mint]: forward-auth and gRPC), the CGI twins of
// every identity header and of the mint header, in lower case: a CGI,
// FastCGI or WSGI upstream reads X_Auth_Subject as X-Auth-Subject
// (HTTP_X_AUTH_SUBJECT), so a client's copy under a twin would stand beside,
// or instead of, the one the answer sets. Nil otherwise. The slice is
// shared: do not modify it.
func (d Decision) TwinsToRemove() []string {
	if !d.Allowed() {
		return nil
	}
	return d.twins
}
