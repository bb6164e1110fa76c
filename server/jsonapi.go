package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// readBody reads r's body, bounded by MaxBodyBytes. A body over the bound
// returns an error matching *http.MaxBytesError.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
}

// tooLarge is the read error of a body over MaxBodyBytes: its token was
// never read, so it is too large.
func (s *Server) tooLarge() error {
	return fmt.Errorf("%w: the request body exceeds %d bytes", verify.ErrTokenTooLarge, s.maxBody)
}

// verifyMembers and requestMembers are the member names /v1/verify reads,
// at the top and in "request".
var (
	verifyMembers  = []string{"token", "policy", "dpop", "request", "client_cert", "mint", "kind", "nonce", "access_token", "code", "max_age", "acr_values"}
	requestMembers = []string{"method", "scheme", "host", "path"}
	// nullRefused are the members whose null would skip a check the
	// caller named.
	nullRefused = []string{"policy", "kind", "nonce", "access_token", "code", "max_age", "acr_values"}
)

// exactMembers returns the members of the JSON object data by name, or an
// error when it holds a member twice, or a member whose name is one of
// names in another case: encoding/json keeps the last of two and matches
// names in any case, while another reader of the same body (a gateway, a
// log) may take the first or the exact one, and so see another token or
// policy than the one decided. It refuses a body that is not UTF-8 as
// well: encoding/json reads each byte that is not as U+FFFD, so
// {"sub":"\x97"} revoked the subject "\uFFFD" and a request path was
// decided on with a character the gateway never saw. So is a \u escape
// of a lone UTF-16 surrogate ("\ud800"), which encoding/json decodes to
// U+FFFD too, while Python's and JavaScript's JSON keep the surrogate.
func exactMembers(data []byte, names []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	members := make(map[string]json.RawMessage)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		if _, dup := members[key]; dup {
			return nil, fmt.Errorf("member %q appears twice", key)
		}
		for _, n := range names {
			if key != n && strings.EqualFold(key, n) {
				return nil, fmt.Errorf("member %q is %q in another case", key, n)
			}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		members[key] = raw
	}
	if p := textProblem(data); p != "" {
		return nil, errors.New(p)
	}
	return members, nil
}

// textProblem says what is wrong with the text of a JSON body that
// encoding/json would read as another one: bytes that are not UTF-8, or a
// \u escape of a lone surrogate, each read as U+FFFD (another reader keeps
// the byte or the surrogate, or refuses the body). "" when nothing is.
func textProblem(b []byte) string {
	switch {
	case !utf8.Valid(b):
		return "the body is not UTF-8"
	case jsonscan.LoneSurrogate(string(b)):
		return `the body holds a lone UTF-16 surrogate escape (\ud800-\udfff not in a pair)`
	}
	return ""
}

// serveVerify is POST /v1/verify {"token":"..."}: 200 with the verdict,
// 413 for a token (or body) too large, 503 when keys are unavailable, 400
// for a request that is not {"token": string} (or whose "kind" and ID-token
// members do not fit: idTokenBody.checks). Unknown members are ignored.
func (s *Server) serveVerify(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeReadError(w, r, EndpointVerify, err)
		return
	}
	var req struct {
		Token  *string `json:"token"`
		Policy *string `json:"policy"`
		// DPoP is a DPoP proof presented with the token (as with
		// Authorization: DPoP), Request the request it is for (and the
		// original request a policy is decided by), and ClientCert the
		// client certificate in a forwarded form.
		DPoP       *string      `json:"dpop"`
		Request    *requestBody `json:"request"`
		ClientCert *string      `json:"client_cert"`
		// Mint asks for the token the policy mints for the upstream
		// ("minted" in the answer).
		Mint bool `json:"mint"`
		idTokenBody
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", `the body must be a JSON object {"token": string}`)
		return
	}
	m, err := exactMembers(body, verifyMembers)
	if rq := m["request"]; err == nil && len(rq) > 0 && rq[0] == '{' {
		if _, err = exactMembers(rq, requestMembers); err != nil {
			err = fmt.Errorf("request: %w", err)
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	// A member that names a check, given null, is a caller's missing
	// value ({"nonce": session.get("nonce")}), not a request to skip the
	// check: encoding/json leaves it unset, and the token passed whatever
	// its nonce (or with no policy run). "" is refused alike (checks).
	for _, n := range nullRefused {
		if bytes.Equal(m[n], []byte("null")) {
			writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("%q is null; leave it out to not use it", n))
			return
		}
	}
	if req.Token == nil {
		writeError(w, http.StatusBadRequest, "bad_request", `the body has no "token" string`)
		return
	}
	c := Call{Endpoint: EndpointVerify, Token: *req.Token, Explain: true, OriginalErr: request.ErrMissing, Mint: req.Mint}
	if c.IDToken, err = req.checks(); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if c.IDToken != nil && (req.DPoP != nil || req.ClientCert != nil) {
		// An ID token has no sender constraint: a proof or a certificate
		// would be ignored, and a caller must not believe it was checked
		// (the CLI refuses --dpop with --kind id_token alike).
		writeError(w, http.StatusBadRequest, "bad_request", `"dpop" and "client_cert" need an access token: an ID token has no sender constraint`)
		return
	}
	if req.DPoP != nil {
		if req.Mint && !s.apiAuth {
			// The body's "request" is the caller's word too: a proof made
			// for a request to another server (host B), seen there or in
			// its logs, names the request the caller copies into "request"
			// (htm, htu). Enough for a verdict, not for a bearer token
			// minted from a DPoP-bound one.
			writeError(w, http.StatusBadRequest, "bad_request", `"dpop" with "mint": true needs api_auth: the request a proof names is an unauthenticated caller's word`)
			return
		}
		c.DPoP, c.Proofs = true, []string{*req.DPoP}
	}
	if req.ClientCert != nil {
		if req.Mint && !s.apiAuth {
			// The body's certificate is the caller's word: enough for a
			// verdict, not for a bearer token minted from a
			// certificate-bound one (a stolen token and its victim's
			// public certificate would get it).
			writeError(w, http.StatusBadRequest, "bad_request", `"client_cert" with "mint": true needs api_auth: an unauthenticated caller's certificate proves nothing`)
			return
		}
		c.ClientCert = *req.ClientCert
	}
	if rq := req.Request; rq != nil {
		c.Original, c.OriginalErr = rq.original()
	}
	if req.Policy != nil {
		if _, ok := s.policies.Lookup(*req.Policy); !ok {
			writeError(w, http.StatusBadRequest, "bad_request", "no such policy")
			return
		}
		c.Policy = *req.Policy
	}
	d := s.Decide(r.Context(), &c)
	writeVerdict(w, &d, *req.Token)
}

// The kinds /v1/verify's "kind" names.
const (
	KindAccessToken = "access_token"
	KindIDToken     = "id_token"
)

// idTokenBody are the members of /v1/verify that ask for an ID token and
// carry its inputs ([verify.IDTokenChecks]).
type idTokenBody struct {
	Kind        *string  `json:"kind"`
	Nonce       *string  `json:"nonce"`
	AccessToken *string  `json:"access_token"`
	Code        *string  `json:"code"`
	MaxAge      *int64   `json:"max_age"`
	ACRValues   []string `json:"acr_values"`
}

// checks returns the ID-token inputs the body asks for, nil for an access
// token (no kind, or "access_token"), or why the body is a bad request: an
// unknown kind, an input without kind "id_token" (it would be ignored: a
// caller must not believe a nonce was checked), a negative max_age or an
// empty input.
func (b *idTokenBody) checks() (*verify.IDTokenChecks, error) {
	kind := KindAccessToken
	if b.Kind != nil {
		kind = *b.Kind
	}
	inputs := b.Nonce != nil || b.AccessToken != nil || b.Code != nil || b.MaxAge != nil || b.ACRValues != nil
	switch {
	case kind == KindAccessToken && inputs:
		return nil, errors.New(`"nonce", "access_token", "code", "max_age" and "acr_values" need "kind": "id_token"`)
	case kind == KindAccessToken:
		return nil, nil
	case kind != KindIDToken:
		return nil, errors.New(`"kind" must be "access_token" or "id_token"`)
	}
	in := &verify.IDTokenChecks{ACRValues: b.ACRValues}
	for _, f := range []struct {
		name string
		v    *string
		to   *string
	}{{"nonce", b.Nonce, &in.Nonce}, {"access_token", b.AccessToken, &in.AccessToken}, {"code", b.Code, &in.Code}} {
		if f.v != nil && *f.v == "" {
			return nil, fmt.Errorf("%q is empty; leave it out to not check it", f.name)
		}
		if f.v != nil {
			*f.to = *f.v
		}
	}
	if b.ACRValues != nil && len(b.ACRValues) == 0 {
		return nil, errors.New(`"acr_values" is empty; leave it out to not check it`)
	}
	if slices.Contains(b.ACRValues, "") {
		return nil, errors.New(`"acr_values" holds an empty value`)
	}
	if b.MaxAge != nil {
		if *b.MaxAge < 0 || *b.MaxAge > maxMaxAge {
			return nil, fmt.Errorf(`"max_age" must be seconds in [0, %d]`, maxMaxAge)
		}
		in.MaxAge, in.HasMaxAge = time.Duration(*b.MaxAge)*time.Second, true
	}
	return in, nil
}

// maxMaxAge bounds max_age (seconds): 100 years, far below a Duration's range.
const maxMaxAge = 100 * 366 * 24 * 3600

// requestBody is the "request" member of /v1/verify: the request a DPoP
// proof is for. Absent fields are empty.
type requestBody struct {
	Method string `json:"method"`
	Scheme string `json:"scheme"`
	Host   string `json:"host"`
	Path   string `json:"path"`
}

// original is the request the body names: the one a DPoP proof is for and
// a policy is decided by, read as gRPC's attributes are
// (request.FromParts: a query in path is the request's, and its _method
// overrides count; a non-default port is kept for htu). It is the caller's
// word, not a proxy's: absent fields are empty — an absent method too,
// which FromParts would refuse: the request is then known with no method,
// which no route's methods match — and a path that does not normalize is
// denied as forward-auth denies it.
func (rq *requestBody) original() (request.Original, error) {
	o, err := request.FromParts(cmp.Or(rq.Method, http.MethodGet), rq.Scheme, rq.Host, rq.Path)
	if err == nil && rq.Method == "" {
		o.Method = ""
	}
	return o, err
}

// writeReadError answers a body that could not be read: 413 when too
// large, else 400.
func (s *Server) writeReadError(w http.ResponseWriter, r *http.Request, endpoint string, err error) {
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		writeError(w, http.StatusBadRequest, "bad_request", "the request body could not be read")
		return
	}
	d := s.Decide(r.Context(), &Call{Endpoint: endpoint, ReadErr: s.tooLarge()})
	if endpoint == EndpointVerify {
		writeVerdict(w, &d, "")
		return
	}
	// A batch answers no 503: its 413 says the body is too large, also
	// on a closed server (whose Decide refuses every call 503).
	writeError(w, http.StatusRequestEntityTooLarge, verify.Class(verify.ErrTokenTooLarge), safeMessage(s.tooLarge(), "", ""))
}

// serveBatch is POST /v1/verify/batch {"tokens":[...]}: 200
// {"results":[...]} in order, each result shaped like /v1/verify's body,
// whatever the verdicts (an unavailable issuer shows in its items). More
// than MaxBatch tokens is 400, found while decoding (decodeBatch).
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(w, r.Body, s.maxBody)
	tokens, msg, err := decodeBatch(body, s.maxBatch)
	switch {
	case err != nil:
		s.writeReadError(w, r, EndpointBatch, err)
		return
	case msg != "":
		// A short body's rest is read (not decoded) before the answer, as
		// net/http would read it after: a client still sending it would
		// otherwise race the answer and may see a broken pipe instead. A
		// long or unknown-length one is answered at once.
		if r.ContentLength > 0 && r.ContentLength <= drainBeforeAnswer {
			_, _ = io.Copy(io.Discard, body)
		}
		writeError(w, http.StatusBadRequest, "bad_request", msg)
		return
	}
	out := append(make([]byte, 0, 256*len(tokens)+16), `{"results":[`...)
	for i, tok := range tokens {
		if errors.Is(r.Context().Err(), context.Canceled) {
			return // the caller is gone; nobody reads the answer
		}
		// A deadline that passed is the request's wait budget
		// (config.Timeouts.Wait), not the caller: the rest of the items
		// are decided without waits (an unknown kid is unknown_kid, an
		// opaque token without a fresh answer keys_unavailable) and the
		// caller gets every result.
		if i > 0 {
			out = append(out, ',')
		}
		d := s.Decide(r.Context(), &Call{Endpoint: EndpointBatch, Token: tok})
		v := d.view(false)
		out = v.append(out, tok)
	}
	out = append(out, "]}\n"...)
	writeRaw(w, http.StatusOK, out)
}

// drainBeforeAnswer is the largest refused batch body whose rest is read
// before the answer (net/http's own post-handler discard is 256 KiB).
const drainBeforeAnswer = 256 << 10

// errBadBatch is what decodeBatch says of a body that is not
// {"tokens": [string, ...]}.
const errBadBatch = `the body must be a JSON object {"tokens": [string, ...]}`

// decodeBatch reads {"tokens": [string, ...]} from body as a stream,
// enforcing max while it decodes: it stops at the max+1-th item, so a batch
// over the bound costs no more than one within it. Other members are
// skipped token by token, never kept. It returns the tokens, or the message
// of a bad request, or the error of reading body (a *http.MaxBytesError
// when it is too large).
func decodeBatch(body io.Reader, max int) (_ []string, badRequest string, _ error) {
	// raw keeps what the decoder read (at most the body limit, as
	// /v1/verify's body): a body that is not UTF-8, or holds a lone
	// surrogate escape, is refused as exactMembers refuses it; encoding/json
	// would read each as U+FFFD and decide another token than the caller's.
	var raw bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(body, &raw))
	// bad turns a decoding error into a bad request, or returns it when it
	// is the body's (too large, cut).
	bad := func(err error, msg string) ([]string, string, error) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, "", err
		}
		return nil, msg, nil
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad(err, errBadBatch)
	}
	var tokens []string
	// seen: a "tokens" array was read; named: the member was (null too).
	// As /v1/verify's members (exactMembers), "tokens" comes once and in
	// that case only: encoding/json matches "Tokens" to it and keeps the
	// last of two, so another reader of the body would see other tokens.
	seen, named := false, false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return bad(err, errBadBatch)
		}
		if k, _ := key.(string); k != "tokens" && strings.EqualFold(k, "tokens") {
			return nil, `the body has "tokens" in another case`, nil
		}
		if key != "tokens" {
			if err := skipValue(dec); err != nil {
				return bad(err, errBadBatch)
			}
			continue
		}
		if named {
			return nil, `the body has "tokens" more than once`, nil
		}
		named = true
		seen = true
		tok, err := dec.Token()
		switch {
		case err != nil:
			return bad(err, errBadBatch)
		case tok == nil: // "tokens": null
			seen = false
			continue
		case tok != json.Delim('['):
			return nil, errBadBatch, nil
		}
		tokens = []string{}
		for dec.More() {
			if len(tokens) == max {
				return nil, "a batch holds at most " + strconv.Itoa(max) + " tokens", nil
			}
			item, err := dec.Token()
			if err != nil {
				return bad(err, errBadBatch)
			}
			switch v := item.(type) {
			case string:
				tokens = append(tokens, v)
			case nil:
				return nil, "tokens[" + strconv.Itoa(len(tokens)) + "] is null, not a string", nil
			default:
				return nil, errBadBatch, nil
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return bad(err, errBadBatch)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return bad(err, errBadBatch)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad(err, errBadBatch) // trailing data
	}
	if p := textProblem(raw.Bytes()); p != "" {
		return nil, p, nil
	}
	if !seen {
		return nil, `the body has no "tokens" array`, nil
	}
	return tokens, "", nil
}

// skipValue reads past one JSON value of dec, token by token: nothing of it
// is kept, however large.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
