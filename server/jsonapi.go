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
		Token *string `json:"token"`
		// DPoP is a DPoP proof presented with the token (as with
		// Authorization: DPoP), Request the request it is for, and
		// ClientCert the client certificate in a forwarded form.
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
	b := verifyBinding(req.DPoP, req.Request, req.ClientCert)
	d := s.DecideBound(r.Context(), EndpointVerify, *req.Token, b)
	out := AppendVerdict(nil, d.Result, d.Class, d.Err, *req.Token)
	if len(d.Steps) > 0 {
		// {"valid":…} + "\n" becomes {"valid":…,"binding_checks":[…]} + "\n".
		steps, _ := json.Marshal(d.Steps) // verify.Step always encodes
		out = append(append(append(out[:len(out)-2], `,"binding_checks":`...), steps...), "}\n"...)
	}
	writeRaw(w, verifyStatus(d), out)
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
// 200 (valid or not), except token_too_large (413); keys unavailable is 503.
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
// than MaxBatch tokens is 400.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeReadError(w, r, EndpointBatch, err)
		return
	}
	// *string items: a null item is a bad request, as a null token is on
	// /v1/verify (encoding/json would decode it into "" for a []string).
	var req struct {
		Tokens *[]*string `json:"tokens"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", `the body must be a JSON object {"tokens": [string, ...]}`)
		return
	}
	if req.Tokens == nil {
		writeError(w, http.StatusBadRequest, "bad_request", `the body has no "tokens" array`)
		return
	}
	tokens := make([]string, len(*req.Tokens))
	for i, t := range *req.Tokens {
		if t == nil {
			writeError(w, http.StatusBadRequest, "bad_request", "tokens["+strconv.Itoa(i)+"] is null, not a string")
			return
		}
		tokens[i] = *t
	}
	if len(tokens) > s.maxBatch {
		writeError(w, http.StatusBadRequest, "bad_request", "a batch holds at most "+strconv.Itoa(s.maxBatch)+" tokens")
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
