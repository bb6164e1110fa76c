package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jwksverify/jwksverify/internal/asciifold"
	"github.com/jwksverify/jwksverify/verify"
)

// introspectionClient is a validated [IntrospectionClient], kept as hashes
// so that comparisons take the same time whatever the lengths.
type introspectionClient struct {
	id, secret [sha256.Size]byte
	name       string // the id itself: the aud of an RFC 9701 answer
}

func newClients(in []IntrospectionClient) []introspectionClient {
	out := make([]introspectionClient, 0, len(in))
	for _, c := range in { // checked by CheckOptions
		out = append(out, introspectionClient{id: sha256.Sum256([]byte(c.ID)), secret: sha256.Sum256([]byte(c.Secret)), name: c.ID})
	}
	return out
}

// authenticateClient reports whether r carries the credentials of an
// introspection client: HTTP Basic id:secret (also form-encoded, RFC 6749
// §2.3.1), or Bearer secret. Every client is compared, in constant time,
// whatever matches. When it fails, the reason is one of
// [ClientAuthReasons], and id the Basic id when it is a configured
// client's (an unknown one may be a secret typed in the wrong field: it is
// never logged).
func (s *Server) authenticateClient(r *http.Request) (ok bool, reason, id string) {
	vals := r.Header["Authorization"]
	if len(vals) != 1 {
		return false, ClientAuthMissing, ""
	}
	if bid, secret, isBasic := r.BasicAuth(); isBasic {
		if s.matchClient(bid, secret, true) {
			return true, "", ""
		}
		uid, err1 := url.QueryUnescape(bid)
		usecret, err2 := url.QueryUnescape(secret)
		if err1 == nil && err2 == nil && (uid != bid || usecret != secret) {
			if s.matchClient(uid, usecret, true) {
				return true, "", ""
			}
		}
		for _, cand := range []string{bid, uid} {
			if s.knownClient(cand) {
				return false, ClientAuthWrongSecret, cand
			}
		}
		return false, ClientAuthUnknownClient, ""
	}
	if secret, isBearer := bearerToken(vals[0]); isBearer {
		if s.matchClient("", secret, false) {
			return true, "", ""
		}
		return false, ClientAuthBearer, ""
	}
	return false, ClientAuthMissing, ""
}

// knownClient reports whether id is a configured client's, comparing every
// client in constant time.
func (s *Server) knownClient(id string) bool {
	sum := sha256.Sum256([]byte(id))
	match := 0
	for i := range s.clients {
		match |= subtle.ConstantTimeCompare(sum[:], s.clients[i].id[:])
	}
	return match == 1
}

// clientAuthFailed counts a refused introspection client and logs it (at
// most log.rejections_per_second lines a second, like rejected tokens): the
// reason, the client id when it is a configured one, and the peer. Never a
// secret.
func (s *Server) clientAuthFailed(r *http.Request, reason, id string) {
	if s.metrics != nil {
		s.metrics.ClientAuthFailed(reason)
	}
	ctx := r.Context()
	if !s.log.Enabled(ctx, slog.LevelWarn) || !s.clientLogRate.Allow(ctx, s.log, slog.LevelWarn, s.now()) {
		return
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "introspection client authentication failed",
		slog.String("reason", reason),
		slog.String("client_id", id),
		slog.String("remote", truncate(r.RemoteAddr, maxLogField)),
	)
}

// authenticateCaller reports whether r may use the JSON verify API under
// [Options.APIAuth]: an introspection client's credentials, or a client
// certificate that the TLS listener verified against its client CAs. A
// refused caller is counted and logged as a refused introspection client.
func (s *Server) authenticateCaller(r *http.Request) bool {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return true
	}
	ok, reason, id := s.authenticateClient(r)
	if !ok {
		s.clientAuthFailed(r, reason, id)
	}
	return ok
}

// matchClient compares id (when withID) and secret with every client.
func (s *Server) matchClient(id, secret string, withID bool) bool {
	idSum, secretSum := sha256.Sum256([]byte(id)), sha256.Sum256([]byte(secret))
	match := 0
	for i := range s.clients {
		c := &s.clients[i]
		idOK := 1
		if withID {
			idOK = subtle.ConstantTimeCompare(idSum[:], c.id[:])
		}
		match |= idOK & subtle.ConstantTimeCompare(secretSum[:], c.secret[:])
	}
	return match == 1
}

// serveIntrospect is POST /introspect, RFC 7662: the caller authenticates
// (401 otherwise); the form parameter token is verified; an accepted token
// answers {"active":true, its claims..., "token_type"}; any rejected token
// answers exactly {"active":false}; keys unavailable answer 503, a fault
// rather than a verdict (an inactive answer would tell a resource server
// that a good token is bad). Responses are never cached.
func (s *Server) serveIntrospect(w http.ResponseWriter, r *http.Request) {
	if ok, reason, id := s.authenticateClient(r); !ok {
		s.clientAuthFailed(r, reason, id)
		w.Header().Set("WWW-Authenticate", `Basic realm="jwksverify"`)
		writeError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	if !utf8MediaType(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			d := s.Decide(r.Context(), &Call{Endpoint: EndpointIntrospect, ReadErr: s.tooLarge()})
			if d.Status == http.StatusServiceUnavailable {
				// A closed server: every call is refused 503, as a
				// token in a body that fits would be.
				writeIntrospection(w, &d, "")
				return
			}
			writeTooLarge(w, &d, "invalid_request")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request", "the form could not be parsed")
		return
	}
	toks := r.PostForm["token"]
	switch {
	case len(toks) == 0 || toks[0] == "":
		writeError(w, http.StatusBadRequest, "invalid_request", "the form has no token parameter")
		return
	case len(toks) > 1:
		// RFC 6749 §3.1: parameters must not be included more than once.
		writeError(w, http.StatusBadRequest, "invalid_request", "the token parameter is given more than once")
		return
	case len(r.PostForm["token_type_hint"]) > 1:
		writeError(w, http.StatusBadRequest, "invalid_request", "the token_type_hint parameter is given more than once")
		return
	}
	d := s.Decide(r.Context(), &Call{Endpoint: EndpointIntrospect, Token: toks[0], SkipBinding: true})
	if s.minter != nil && acceptsJWT(r) && d.Status != http.StatusServiceUnavailable {
		s.writeIntrospectionJWT(w, &d, s.clientOf(r))
		return
	}
	writeIntrospection(w, &d, toks[0])
}

// utf8MediaType reports whether the Content-Type value ct is the media
// type mt with no charset or UTF-8: a body labelled with another is read as
// UTF-8 here and otherwise by whoever honours the label. A charset given
// as an RFC 2231 extended parameter (charset*) is refused whatever it says:
// mime.ParseMediaType drops one whose own charset it cannot decode (an
// ISO-8859-1 encoded charset* naming latin1 reads as no charset, and beside
// charset=utf-8 as utf-8), which a reader honouring RFC 2231 takes.
func utf8MediaType(ct, mt string) bool {
	got, params, err := mime.ParseMediaType(ct)
	if err != nil || got != mt || strings.Contains(asciifold.ToLower(ct), "charset*") {
		return false
	}
	cs, ok := params["charset"]
	return !ok || asciifold.EqualFold(cs, "utf-8")
}

// introspectionJWT is the media type of an RFC 9701 answer.
const introspectionJWT = "application/token-introspection+jwt"

// acceptsJWT reports whether r asks for an RFC 9701 answer: its Accept
// names application/token-introspection+jwt with a q above 0 and not
// below the q JSON gets (RFC 9110 §12.5.1: application/json, else
// application/*, else */*, the most specific range deciding; a tie goes to
// the JWT type, named explicitly).
func acceptsJWT(r *http.Request) bool {
	qJWT, qJSON := -1.0, -1.0
	jsonRank := 0 // 3 application/json, 2 application/*, 1 */*
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if qs, ok := params["q"]; ok {
				f, err := strconv.ParseFloat(qs, 64)
				if err != nil || f != f || f < 0 || f > 1 {
					continue
				}
				q = f
			}
			rank := 0
			switch mt {
			case introspectionJWT:
				qJWT = max(qJWT, q)
				continue
			case "application/json":
				rank = 3
			case "application/*":
				rank = 2
			case "*/*":
				rank = 1
			default:
				continue
			}
			switch {
			case rank > jsonRank:
				jsonRank, qJSON = rank, q
			case rank == jsonRank:
				qJSON = max(qJSON, q)
			}
		}
	}
	// q=0: not acceptable (RFC 9110 §12.4.2).
	return qJWT > 0 && qJWT >= qJSON
}

// clientOf returns the id of the introspection client r authenticated as
// (r passed authenticateClient): the Basic id, or the client whose secret
// the Bearer credential is.
func (s *Server) clientOf(r *http.Request) string {
	if id, secret, ok := r.BasicAuth(); ok {
		if s.matchClient(id, secret, true) {
			return id
		}
		uid, _ := url.QueryUnescape(id)
		return uid
	}
	secret, _ := bearerToken(r.Header.Get("Authorization"))
	sum := sha256.Sum256([]byte(secret))
	for i := range s.clients {
		if subtle.ConstantTimeCompare(sum[:], s.clients[i].secret[:]) == 1 {
			return s.clients[i].name
		}
	}
	return ""
}

// writeIntrospectionJWT writes the RFC 9701 answer of d to client: a JWS
// signed by the minter's signing key, typ token-introspection+jwt, with
// iss (mint.issuer), aud (the client), iat and token_introspection (the
// RFC 7662 answer writeIntrospection would write). A signature that
// cannot be made is a 503.
func (s *Server) writeIntrospectionJWT(w http.ResponseWriter, d *Decision, client string) {
	answer := []byte(`{"active":false}`)
	if d.Allowed() {
		if body, ok := activeBody(d.Result.Claims); ok {
			answer = bytes.TrimSpace(body)
		}
	}
	claims := []byte(`{"iss":`)
	claims = appendString(claims, s.minter.Issuer())
	claims = append(claims, `,"aud":`...)
	claims = appendString(claims, client)
	claims = append(claims, `,"iat":`...)
	claims = strconv.AppendInt(claims, s.now().Unix(), 10)
	claims = append(claims, `,"token_introspection":`...)
	claims = append(append(claims, answer...), '}')
	jws, err := s.minter.Sign("token-introspection+jwt", claims)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, verify.Class(verify.ErrKeysUnavailable), "the introspection answer could not be signed")
		return
	}
	h := w.Header()
	h["Content-Type"] = []string{introspectionJWT}
	h["Cache-Control"] = s.static.noStore
	h["X-Content-Type-Options"] = s.static.nosniff
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, jws)
}
