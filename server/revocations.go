package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
)

// This file is the admin API of revocations, served on the admin listener
// only ([Server.AdminHandler]) to callers that authenticate as
// [Options.APIAuth] callers do (an introspection client's credentials, or
// a verified client certificate): POST /v1/revocations,
// GET /v1/revocations[?issuer=], DELETE /v1/revocations/{id}.

// maxRevocationBody bounds the body of POST /v1/revocations.
const maxRevocationBody = 8 << 10

// revocationsPath is the admin API's collection.
const revocationsPath = "/v1/revocations"

// revocationRequest is the body of POST /v1/revocations: the issuer, at
// most one of jti, sid, sub and client_id (none: the whole issuer), and
// issued_before for sub, client_id and issuer entries (default now).
type revocationRequest struct {
	Issuer       string     `json:"issuer"`
	JTI          entryValue `json:"jti"`
	SID          entryValue `json:"sid"`
	Sub          entryValue `json:"sub"`
	ClientID     entryValue `json:"client_id"`
	IssuedBefore *string    `json:"issued_before"`
}

// revocationMembers are the member names of a revocationRequest.
var revocationMembers = []string{"issuer", "jti", "sid", "sub", "client_id", "issued_before"}

// entryValue is a kind member of a revocationRequest: given (null
// included: {"jti": null} is a script's missing value, not a request for
// the whole issuer), and its string.
type entryValue struct {
	set, null bool
	v         string
}

func (e *entryValue) UnmarshalJSON(b []byte) error {
	e.set = true
	if string(b) == "null" {
		e.null = true
		return nil
	}
	return json.Unmarshal(b, &e.v)
}

// entry is the entry the request asks for, or why it is refused (a
// message for the caller).
func (s *Server) entry(req *revocationRequest, now time.Time) (revoke.Entry, string) {
	is, ok := s.byName[req.Issuer]
	if !ok {
		return revoke.Entry{}, "issuer is not a configured issuer"
	}
	e := revoke.Entry{Issuer: req.Issuer, Kind: revoke.KindIssuer, Source: revoke.SourceAdmin}
	n := 0
	for _, f := range []struct {
		v *entryValue
		k revoke.Kind
	}{{&req.JTI, revoke.KindJTI}, {&req.SID, revoke.KindSID}, {&req.Sub, revoke.KindSub}, {&req.ClientID, revoke.KindClientID}} {
		if f.v.set {
			n++
			e.Kind, e.Value = f.k, f.v.v
			if f.v.null {
				return revoke.Entry{}, string(f.k) + " is null"
			}
			if f.v.v == "" {
				return revoke.Entry{}, string(f.k) + " is empty"
			}
		}
	}
	if n > 1 {
		return revoke.Entry{}, "give at most one of jti, sid, sub and client_id"
	}
	if req.IssuedBefore != nil {
		if e.Kind == revoke.KindJTI || e.Kind == revoke.KindSID {
			return revoke.Entry{}, "issued_before applies to sub, client_id and issuer entries only"
		}
		t, err := time.Parse(time.RFC3339Nano, *req.IssuedBefore)
		if err != nil {
			return revoke.Entry{}, "issued_before is not an RFC 3339 time"
		}
		if t.After(now.Add(is.leeway)) {
			// Up to the issuer's leeway ahead: an identity provider whose
			// clock runs ahead (within it) stamps the tokens it issued
			// just before the entry with an iat after this clock's now,
			// and the operator can cover them. Further ahead names tokens
			// not yet issued (a lock-out for the whole retention).
			return revoke.Entry{}, "issued_before is in the future by more than the issuer's leeway"
		}
		if t.IsZero() {
			// 0001-01-01T00:00:00Z is Go's zero time, which a store reads
			// as "not given" (now); it names no token, as 1970 does.
			t = time.Unix(0, 0).UTC()
		}
		e.IssuedBefore = t
	}
	if err := revoke.Check(e); err != nil {
		return revoke.Entry{}, strings.TrimPrefix(err.Error(), revoke.ErrInvalid.Error()+": ")
	}
	return e, ""
}

// adminAuth wraps an admin API endpoint: a caller that does not
// authenticate gets 401 before its body is read.
func (s *Server) adminAuth(serve http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authenticateCaller(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="jwksverify"`)
			writeError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
			return
		}
		serve(w, r)
	}
}

// serveRevocations is GET and POST /v1/revocations.
func (s *Server) serveRevocations(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		s.addRevocation(w, r)
		return
	}
	// The query is read strictly: net/url drops a pair holding ';' and
	// Get takes the first of two values, so ?issuer=A;x or
	// ?issuer=A&issuer=B listed another set than the one asked for.
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the query could not be parsed")
		return
	}
	for k, vs := range q {
		switch {
		case k != "issuer":
			writeError(w, http.StatusBadRequest, "invalid_request", "the query may hold issuer only")
			return
		case len(vs) > 1:
			writeError(w, http.StatusBadRequest, "invalid_request", "issuer is given more than once")
			return
		}
	}
	issuer := q.Get("issuer")
	if issuer != "" {
		if _, ok := s.byName[issuer]; !ok {
			writeError(w, http.StatusBadRequest, "invalid_request", "issuer is not a configured issuer")
			return
		}
	}
	es, err := s.revocations.List(r.Context(), issuer)
	if err != nil {
		s.storeFailed(w, r, "list", err)
		return
	}
	if es == nil {
		es = []revoke.Entry{}
	}
	writeJSON(w, http.StatusOK, struct {
		Revocations []revoke.Entry `json:"revocations"`
	}{es})
}

// addRevocation is POST /v1/revocations: 201 with the entry once the store
// holds it.
func (s *Server) addRevocation(w http.ResponseWriter, r *http.Request) {
	if !utf8MediaType(r.Header.Get("Content-Type"), "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "invalid_request", "the body must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRevocationBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request", "the body is larger than 8 KiB")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request", "the body could not be read")
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req revocationRequest
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not a revocation: "+jsonProblem(err))
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body holds more than one JSON value")
		return
	}
	// encoding/json keeps the last of two members and matches names in
	// any case: {"jti":"a","JTI":"b"} revoked b while the operator's
	// script, its log and jq read a.
	if _, err := exactMembers(body, revocationMembers); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not a revocation: "+err.Error())
		return
	}
	e, problem := s.entry(&req, s.now())
	if problem != "" {
		writeError(w, http.StatusBadRequest, "invalid_request", problem)
		return
	}
	e, err = s.revocations.Add(r.Context(), e)
	if err != nil {
		s.storeFailed(w, r, "add", err)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "revocation added", slog.String("id", e.ID),
		slog.String("issuer", e.Issuer), slog.String("kind", string(e.Kind)), slog.String("source", string(e.Source)))
	writeJSON(w, http.StatusCreated, e)
}

// jsonProblem says what is wrong with a body that does not decode, without
// repeating it.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return te.Field + " has the wrong type"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	return "not a JSON object"
}

// deleteRevocation is DELETE /v1/revocations/{id}: 204 once the store has
// lifted it.
func (s *Server) deleteRevocation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := s.revocations.Delete(r.Context(), id)
	switch {
	case errors.Is(err, revoke.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no such revocation")
		return
	case err != nil:
		s.storeFailed(w, r, "delete", err)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "revocation lifted", slog.String("id", id))
	w.Header()["Cache-Control"] = s.static.noStore
	w.WriteHeader(http.StatusNoContent)
}

// storeFailed answers a store that could not (op: "list", "add" or
// "delete"): 400 for an entry it refuses, else 503 (for a change, nothing
// was acknowledged: with acknowledge_replicas, a change the replicas did
// not confirm in time may be in force all the same).
func (s *Server) storeFailed(w http.ResponseWriter, r *http.Request, op string, err error) {
	if errors.Is(err, revoke.ErrInvalid) {
		writeError(w, http.StatusBadRequest, "invalid_request", strings.TrimPrefix(err.Error(), revoke.ErrInvalid.Error()+": "))
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "revocation store failed", slog.String("op", op), slog.String("err", err.Error()))
	msg := "the revocation store did not acknowledge the change; it may be in force or not: check, or send it again"
	if op == "list" {
		msg = "the revocation store is unavailable"
	}
	writeError(w, http.StatusServiceUnavailable, "unavailable", msg)
}
