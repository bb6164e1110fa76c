package signals_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// FuzzLogout signs fuzzed claims (and a fuzzed typ) with issuerA's P-256
// key under ES256 (signRawES256: an RSA signature per input held the
// fuzzer to a fraction of the executions), so that the parser past the
// signature is explored. Oracle: never a panic;
// an invalid token stores nothing; an accepted token holds every BCL §2.6
// rule as an independent decoder reads it, and stores exactly one entry of
// issuerA from the back-channel logout source.
func FuzzLogout(f *testing.F) {
	valid, _ := json.Marshal(logoutClaims(nil))
	f.Add("logout+jwt", string(valid))
	f.Add("", string(valid))
	f.Add("at+jwt", string(valid))
	noSub, _ := json.Marshal(logoutClaims(map[string]any{"sub": nil, "nonce": "x"}))
	f.Add("JWT", string(noSub))
	f.Add("JWT", `{"iss":"`+issuerA+`","aud":"web-app","iat":1893553444,"jti":"j","sid":"s","events":{"`+signals.BackchannelLogoutEvent+`":{}},"Events":{}}`)
	f.Add("JWT", `{"iss":"`+issuerA+`","aud":["web-app"],"iat":1893553444.5,"jti":"j","sub":"a","events":{"`+signals.BackchannelLogoutEvent+`":{"a":{"a":[]}}}}`)
	e := newEnv(f, signals.RevokeSession)
	f.Fuzz(func(t *testing.T, typ, payload string) {
		e.reset(t)
		hdr := `{"alg":"ES256","kid":"ec-a"}`
		if typ != "" {
			b, _ := json.Marshal(typ)
			hdr = `{"alg":"ES256","kid":"ec-a","typ":` + string(b) + `}`
		}
		tok := signRawES256(t, hdr, payload)
		got, err := e.r.Logout(context.Background(), tok, epoch)
		stored := e.store.stored()
		if err != nil {
			if !errors.Is(err, signals.ErrInvalid) && !errors.Is(err, signals.ErrUnavailable) {
				t.Fatalf("Logout() = %v: neither a refusal nor unavailable", err)
			}
			if len(got) != 0 || len(stored) != 0 {
				t.Fatalf("Logout() = %v and stored %v", err, stored)
			}
			return
		}
		if len(stored) != 1 || !slices.Equal(got, stored) || stored[0].Issuer != issuerA || stored[0].Source != revoke.SourceBackchannelLogout {
			t.Fatalf("accepted, stored %+v returned %+v", stored, got)
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			t.Fatalf("accepted claims that encoding/json refuses: %v", err)
		}
		ev, _ := c["events"].(map[string]any)
		_, isObj := ev[signals.BackchannelLogoutEvent].(map[string]any)
		_, hasNonce := c["nonce"]
		sub, _ := c["sub"].(string)
		sid, _ := c["sid"].(string)
		iat, hasIat := c["iat"].(float64)
		jti, _ := c["jti"].(string)
		aud := c["aud"]
		audOK := aud == clientID
		if l, ok := aud.([]any); ok {
			audOK = slices.Contains(l, any(clientID))
		}
		switch {
		case !isObj, hasNonce, sub == "" && sid == "", !hasIat, jti == "", !audOK, c["iss"] != issuerA:
			t.Fatalf("accepted a logout token that breaks a rule: %s", payload)
		case time.Unix(int64(iat), 0).After(epoch.Add(verifyLeeway)):
			t.Fatalf("accepted an iat ahead: %s", payload)
		case typ != "" && !slices.Contains([]string{"jwt", "logout+jwt", "application/logout+jwt", "application/jwt"}, lower(typ)):
			t.Fatalf("accepted typ %q", typ)
		}
		if e := stored[0]; (e.Kind == revoke.KindSID && e.Value != sid) || (e.Kind == revoke.KindSub && e.Value != sub) {
			t.Fatalf("stored %+v for sub %q sid %q", e, sub, sid)
		}
	})
}

// verifyLeeway is the verifier's default leeway, the test issuers'.
const verifyLeeway = 30 * time.Second

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// FuzzSET signs fuzzed SET claims with issuerA's key. Oracle: never a
// panic; a refusal has an RFC 8935 code and stores nothing; an accepted SET
// has typ secevent+jwt, an events object, and stores at most one entry per
// event, each of issuerA from the push source, a sid or a sub entry with a
// value.
func FuzzSET(f *testing.F) {
	for _, ev := range []string{signals.EventSessionRevoked, signals.EventCredentialChange, signals.EventVerification, "urn:other"} {
		b, _ := json.Marshal(setClaims(map[string]any{ev: map[string]any{"event_timestamp": epoch.Unix()}}, map[string]any{"sub_id": complexSes}))
		f.Add(string(b))
	}
	b, _ := json.Marshal(setClaims(map[string]any{signals.EventAccountPurged: map[string]any{"subject": opaqueBob}}, nil))
	f.Add(string(b))
	f.Add(`{"iss":"` + issuerA + `","aud":"` + ssfAud + `","iat":1,"jti":"j","sub_id":{"format":"complex","user":{"format":"email"},"session":{"format":"opaque","id":""}},"events":{"` + signals.EventSessionRevoked + `":{"event_timestamp":-1}}}`)
	e := newEnv(f, signals.RevokeSession)
	f.Fuzz(func(t *testing.T, payload string) {
		e.reset(t)
		tok := signRaw(t, `{"alg":"RS256","kid":"rsa-a","typ":"secevent+jwt"}`, payload)
		got, outcomes, err := e.r.Receive(context.Background(), issuerA, tok, revoke.SourceSSFPush, epoch)
		stored := e.store.stored()
		if err != nil {
			if errors.Is(err, signals.ErrInvalid) && signals.Code(err) == "" {
				t.Fatalf("a refusal without a code: %v", err)
			}
			if len(stored) != 0 {
				t.Fatalf("Receive() = %v and stored %v", err, stored)
			}
			return
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			t.Fatalf("accepted claims that encoding/json refuses: %v", err)
		}
		ev, _ := c["events"].(map[string]any)
		if len(ev) == 0 || len(outcomes) != len(ev) || len(stored) > len(ev) || !slices.Equal(got, stored) {
			t.Fatalf("accepted %s: %d outcomes, stored %+v", payload, len(outcomes), stored)
		}
		for _, s := range stored {
			if s.Issuer != issuerA || s.Source != revoke.SourceSSFPush || s.Value == "" || (s.Kind != revoke.KindSID && s.Kind != revoke.KindSub) {
				t.Fatalf("stored %+v", s)
			}
		}
	})
}

// FuzzPollResponse: never a panic; an accepted response is one that the
// strict reader (jsonscan: RFC 8259, UTF-8, every name once) reads, and its
// sets survive a round trip through encoding/json unchanged.
func FuzzPollResponse(f *testing.F) {
	f.Add([]byte(`{"sets":{"a":"x.y.z"},"moreAvailable":true}`))
	f.Add([]byte(`{"sets":{}}`))
	f.Add([]byte(`{"sets":{"a":"1","a":"2"}}`))
	f.Add([]byte(`{"sets":{"\u0061":"1"},"moreAvailable":null}`))
	for _, s := range []string{`{"sets":{"a":"x"},"sets":{}}`, `{"sets":{"a":"x"},"Sets":{}}`, `{"sets":null}`, `{"sets":{"a":1}}`,
		`{"sets":{},"moreAvailable":"true"}`, `{"sets":{"a":{"a":1,"a":2}}}`, `{"sets":{}} x`, `{"sets":{"\ud800":"x"}}`, `[]`,
		`{"sets":{"` + "\x97" + `":"x"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sets, more, err := signals.ParsePollResponse(body)
		if err != nil {
			if sets != nil || more {
				t.Fatalf("ParsePollResponse() = %v, %v with error %v", sets, more, err)
			}
			return
		}
		// Names compared exactly: a poll response is read here, by exact
		// name (jsonscan's Names also refuses names equal ignoring case,
		// for documents passed on to programs that match names so).
		it, err := jsonscan.NewMembers(string(body))
		names := map[string]bool{}
		for err == nil {
			mb, ok, nerr := it.Next()
			if err = nerr; !ok || err != nil {
				break
			}
			if names[mb.Name] {
				t.Fatalf("ParsePollResponse(%q) accepted member %q twice", body, mb.Name)
			}
			names[mb.Name] = true
		}
		if errors.Is(err, jsonscan.ErrDupMember) && !exactDuplicate(body) {
			return // nested names equal ignoring case only
		}
		if err != nil {
			t.Fatalf("ParsePollResponse(%q) = %v; a strict reader: %v", body, sets, err)
		}
		b, _ := json.Marshal(map[string]any{"sets": sets, "moreAvailable": more})
		again, more2, err := signals.ParsePollResponse(b)
		if err != nil || more2 != more || !reflect.DeepEqual(again, sets) {
			t.Fatalf("round trip: %v %v %v, want %v %v", again, more2, err, sets, more)
		}
	})
}

// exactDuplicate reports whether an object of the JSON text body has a
// member name twice, names compared exactly, by encoding/json's tokens.
func exactDuplicate(body []byte) bool {
	type frame struct {
		names  map[string]bool // nil for an array
		expect bool            // an object's next token is a name
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if name, ok := tok.(string); ok && len(stack) > 0 && stack[len(stack)-1].names != nil && stack[len(stack)-1].expect {
			n := len(stack)
			if stack[n-1].names[name] {
				return true
			}
			stack[n-1].names[name], stack[n-1].expect = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{names: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if n := len(stack); n > 0 && stack[n-1].names != nil {
			stack[n-1].expect = true // a member's value ended
		}
	}
}
