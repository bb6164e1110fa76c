package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/jwksverify/jwksverify/mtls"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// readBody reads r's body, bounded by MaxBodyBytes. A body over the bound
// returns an error matching *http.MaxBytesError.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
}

// tooLarge returns the decision of a request whose body exceeds MaxBodyBytes:
// its token was never read, so it is too large.
func (s *Server) tooLarge(ctx context.Context, endpoint string) Decision {
	err := fmt.Errorf("%w: the request body exceeds %d bytes", verify.ErrTokenTooLarge, s.maxBody)
	return s.reject(ctx, endpoint, s.now(), "", err, false)
}

// serveVerify is POST /v1/verify {"token":"..."}: 200 with the verdict,
// 413 for a token (or body) too large, 503 when keys are unavailable, 400
// for a request that is not {"token": string}. Unknown members are ignored.
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
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", `the body must be a JSON object {"token": string}`)
		return
	}
	if req.Token == nil {
		writeError(w, http.StatusBadRequest, "bad_request", `the body has no "token" string`)
		return
	}
	var b *Binding
	if s.constraints != nil {
		b = verifyBinding(req.DPoP, req.Request, req.ClientCert)
	}
	if req.Policy == nil {
		d := s.DecideBound(r.Context(), EndpointVerify, *req.Token, b)
		writeRaw(w, verifyStatus(d), withSteps(AppendVerdict(nil, d.Result, d.Class, d.Err, *req.Token), d.Steps))
		return
	}
	if _, ok := s.policies.Lookup(*req.Policy); !ok {
		writeError(w, http.StatusBadRequest, "bad_request", "no such policy")
		return
	}
	// The request is the caller's word, not a proxy's: absent fields are
	// empty, and a path that does not normalize is denied as forward-auth
	// denies it.
	sel := Selection{Policy: *req.Policy}
	if rq := req.Request; rq != nil {
		sel.Original = request.Original{Method: request.NormalizeMethod(rq.Method), Scheme: rq.Scheme, Host: request.NormalizeHost(rq.Host)}
		sel.Original.Path, sel.OriginalErr = request.NormalizePath(rq.Path)
	} else {
		sel.OriginalErr = request.ErrMissing
	}
	d := s.AuthorizeBound(r.Context(), EndpointVerify, *req.Token, sel, b)
	writeRaw(w, verifyStatus(d), withSteps(AppendAuthorized(nil, d, *req.Token), d.Steps))
}

// withSteps adds the binding checks of a decision to a single /v1/verify
// body: {"valid":…} + "\n" becomes {"valid":…,"binding_checks":[…]} + "\n".
func withSteps(out []byte, steps []verify.Step) []byte {
	if len(steps) == 0 {
		return out
	}
	js, _ := json.Marshal(steps) // verify.Step always encodes
	return append(append(append(out[:len(out)-2], `,"binding_checks":`...), js...), "}\n"...)
}

// AppendAuthorized appends to b the /v1/verify body of a decision made
// under a policy: the verdict of [AppendVerdict] with "allowed" after
// "valid", "error":"forbidden" when a valid token was refused, and the
// "policy" that ran. The failed requirement is not shown: /v1/verify
// callers are not the operator. A single verdict (b nil) ends with a
// newline.
func AppendAuthorized(b []byte, d Decision, token string) []byte {
	single := b == nil
	var v []byte
	switch {
	case d.Status == http.StatusForbidden && d.Result != nil:
		v = AppendVerdict(nil, d.Result, "", nil, token)
		v = append([]byte(`{"valid":true,"allowed":false,"error":"forbidden",`), v[len(`{"valid":true,`):]...)
	case d.Allowed():
		v = AppendVerdict(nil, d.Result, "", nil, token)
		v = append([]byte(`{"valid":true,"allowed":true,`), v[len(`{"valid":true,`):]...)
	default:
		v = AppendVerdict(nil, d.Result, d.Class, d.Err, token)
		v = append([]byte(`{"valid":false,"allowed":false,`), v[len(`{"valid":false,`):]...)
	}
	v = v[:len(v)-2] // "}\n"
	v = append(v, `,"policy":`...)
	v = appendString(v, d.Policy)
	v = append(v, '}')
	b = append(b, v...)
	if single {
		b = append(b, '\n')
	}
	return b
}

// requestBody is the "request" member of /v1/verify: the request a DPoP
// proof is for. Absent fields are empty.
type requestBody struct {
	Method string `json:"method"`
	Scheme string `json:"scheme"`
	Host   string `json:"host"`
	Path   string `json:"path"`
}

// verifyBinding builds the Binding of a /v1/verify body: the proof (as the
// DPoP scheme), the request it names, the client certificate. Every
// binding check is explained.
func verifyBinding(proof *string, req *requestBody, cert *string) *Binding {
	b := &Binding{Explain: true}
	if proof != nil {
		b.DPoP, b.Proofs = true, []string{*proof}
	}
	if req != nil {
		rb := *req
		b.Request = func() (request.Original, error) {
			return request.FromParts(rb.Method, rb.Scheme, rb.Host, rb.Path)
		}
	}
	if cert != nil {
		c := *cert
		b.ClientCert = func() (string, error) {
			t, err := mtls.ThumbprintForwarded(c)
			if errors.Is(err, mtls.ErrNoCertificate) {
				return "", nil
			}
			return t, err
		}
	}
	return b
}

// writeReadError answers a body that could not be read: 413 when too
// large, else 400.
func (s *Server) writeReadError(w http.ResponseWriter, r *http.Request, endpoint string, err error) {
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		writeError(w, http.StatusBadRequest, "bad_request", "the request body could not be read")
		return
	}
	d := s.tooLarge(r.Context(), endpoint)
	if endpoint == EndpointVerify {
		writeRaw(w, http.StatusRequestEntityTooLarge, AppendVerdict(nil, d.Result, d.Class, d.Err, ""))
		return
	}
	writeError(w, http.StatusRequestEntityTooLarge, d.Class, safeMessage(d.Err, d.Class, ""))
}

// verifyStatus maps a decision to the status of /v1/verify: a verdict is
// 200 (valid or not, allowed or forbidden), except token_too_large (413);
// keys unavailable is 503.
func verifyStatus(d Decision) int {
	switch {
	case d.Allowed():
		return http.StatusOK
	case d.Status == http.StatusServiceUnavailable:
		return http.StatusServiceUnavailable
	case d.Class == "token_too_large":
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusOK
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
		if r.Context().Err() != nil {
			return // the caller is gone; nobody reads the answer
		}
		if i > 0 {
			out = append(out, ',')
		}
		d := s.Decide(r.Context(), EndpointBatch, tok)
		out = AppendVerdict(out, d.Result, d.Class, d.Err, tok)
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
	dec := json.NewDecoder(body)
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
	seen := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return bad(err, errBadBatch)
		}
		if key != "tokens" {
			if err := skipValue(dec); err != nil {
				return bad(err, errBadBatch)
			}
			continue
		}
		if seen {
			return nil, `the body has "tokens" more than once`, nil
		}
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
	single := b == nil
	if err == nil && res != nil {
		b = append(b, `{"valid":true,"issuer":`...)
		b = appendString(b, res.Issuer)
		b = append(b, `,"kid":`...)
		b = appendString(b, res.Kid)
		b = append(b, `,"alg":`...)
		b = appendString(b, res.Alg)
		b = append(b, `,"header":`...)
		b = appendObject(b, res.Header)
		b = append(b, `,"claims":`...)
		b = appendObject(b, res.Claims)
		b = append(b, '}')
	} else {
		class = cmp.Or(class, verify.Class(err), verify.Class(verify.ErrKeysUnavailable))
		b = append(b, `{"valid":false,"error":`...)
		b = appendString(b, class)
		b = append(b, `,"message":`...)
		b = appendString(b, safeMessage(err, class, token))
		b = append(b, '}')
	}
	if single {
		b = append(b, '\n')
	}
	return b
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
