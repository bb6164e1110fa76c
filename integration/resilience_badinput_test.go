package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// signRaw signs header and payload, given as raw JSON bytes (anything,
// including invalid UTF-8 or huge numbers), with key: a token whose
// signature is good, so that only its content can be refused.
func signRaw(key rhKey, header, payload []byte) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sig, err := jwt.GetSigningMethod(key.alg).Sign(signing, testkeys.Private(key.name))
	if err != nil {
		panic(err)
	}
	return signing + "." + enc.EncodeToString(sig)
}

// TestResilienceBadInput sends hostile requests to the real binary:
// oversized bodies and tokens, invalid UTF-8, deeply nested JSON, huge
// numbers, 10 000 dots, CR/LF in claims copied into headers, and random
// garbage. Each gets the SPEC's status and class; none gets a 5xx (there is
// no keys_unavailable here: the issuer is healthy), none echoes the token,
// and the service is alive and unchanged afterwards.
func TestResilienceBadInput(t *testing.T) {
	t.Parallel()
	key := rhKey{testkeys.EC256A, "bad-a", "ES256"}
	idp := newFakeIdP(t, "max-age=3600", key.jwk())
	r := rhRefresh{minInterval: time.Second, maxInterval: time.Hour, defaultTTL: time.Hour,
		unknownKid: time.Second, staleFor: time.Hour, fetchTimeout: 2 * time.Second}
	svc := startJWKSVerify(t, rhConfig(idp.Issuer, "jwks_url: "+idp.JWKSURL, r, ""))
	base := "http://" + svc.HTTP
	c := httpClient()

	iss := idp.Issuer
	hdr := []byte(`{"alg":"ES256","typ":"JWT","kid":"bad-a"}`)
	exp := time.Now().Add(time.Hour).Unix()
	claims := func(extra string) []byte {
		return []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"bad"%s}`, iss, rhAudience, exp, extra))
	}
	nested := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	verifyBody := func(token string) []byte {
		b, _ := json.Marshal(map[string]string{"token": token})
		return b
	}
	validToken := key.mint(iss)

	type want struct {
		status  int
		classes []string // the verdict's class; nil: no verdict body expected
		valid   bool
	}
	verdict := func(classes ...string) want { return want{status: 200, classes: classes} }
	tests := []struct {
		name  string
		path  string // POST path, or "authz" for GET /v1/authz with the token as Bearer
		body  []byte // the POST body (path != "authz")
		token string // the token (authz), also checked never to be echoed
		want  []want // any of these
	}{
		// Sizes.
		{name: "body-over-max-body-bytes", path: "/v1/verify", body: verifyBody(strings.Repeat("a", 70_000)),
			want: []want{{status: 413, classes: []string{"token_too_large"}}}},
		{name: "body-10mib", path: "/v1/verify", body: verifyBody(strings.Repeat("a", 10<<20)),
			want: []want{{status: 413, classes: []string{"token_too_large"}}}},
		{name: "token-over-max-token-bytes", path: "/v1/verify", body: verifyBody(signRaw(key, hdr, claims(`,"pad":"`+strings.Repeat("x", 20_000)+`"`))),
			want: []want{{status: 413, classes: []string{"token_too_large"}}}},
		{name: "authz-token-over-max-token-bytes", path: "authz", token: signRaw(key, hdr, claims(`,"pad":"`+strings.Repeat("x", 20_000)+`"`)),
			want: []want{{status: 401, classes: []string{"token_too_large"}}}},
		{name: "authz-header-over-64kib", path: "authz", token: strings.Repeat("a", 70_000),
			want: []want{{status: 431}}},
		{name: "batch-over-max-tokens", path: "/v1/verify/batch", body: []byte(`{"tokens":[` + strings.Repeat(`"a",`, 10_000) + `"a"]}`),
			want: []want{{status: 400}, {status: 413}}},
		// Encoding and structure.
		{name: "body-invalid-utf8", path: "/v1/verify", body: []byte("{\"token\":\"\xff\xfe\xfd.\xc3\x28.\xa0\xa1\"}"),
			want: []want{verdict("malformed"), {status: 400}}},
		{name: "body-not-json", path: "/v1/verify", body: []byte("token=abc"), want: []want{{status: 400}}},
		{name: "body-empty", path: "/v1/verify", body: nil, want: []want{{status: 400}}},
		{name: "body-token-not-string", path: "/v1/verify", body: []byte(`{"token":12345678901234567890}`), want: []want{{status: 400}}},
		{name: "body-nested-100000", path: "/v1/verify", body: []byte(`{"token":` + nested(30_000) + `}`), want: []want{{status: 400}}},
		{name: "payload-invalid-utf8", path: "/v1/verify", body: verifyBody(signRaw(key, hdr, claims(",\"name\":\"\xff\xfe\""))),
			want: []want{verdict("malformed")}},
		{name: "header-invalid-utf8", path: "/v1/verify", body: verifyBody(signRaw(key, []byte("{\"alg\":\"ES256\",\"kid\":\"bad-a\",\"x\":\"\xc3\x28\"}"), claims(""))),
			want: []want{verdict("malformed")}},
		{name: "payload-nested-1000", path: "/v1/verify", body: verifyBody(signRaw(key, hdr, claims(`,"deep":`+nested(1000)))),
			want: []want{verdict("malformed")}},
		{name: "header-nested-1000", path: "/v1/verify", body: verifyBody(signRaw(key, []byte(`{"alg":"ES256","kid":"bad-a","x":`+nested(1000)+`}`), claims(""))),
			want: []want{verdict("malformed")}},
		{name: "payload-not-object", path: "/v1/verify", body: verifyBody(signRaw(key, hdr, []byte(`["iss"]`))),
			want: []want{verdict("malformed")}},
		{name: "dots-10000", path: "/v1/verify", body: verifyBody("a" + strings.Repeat(".", 10_000)), want: []want{verdict("malformed")}},
		{name: "authz-dots-10000", path: "authz", token: strings.Repeat(".", 10_000), want: []want{{status: 401, classes: []string{"malformed"}}}},
		{name: "segments-base64-garbage", path: "/v1/verify", body: verifyBody("!!!!.????.****"), want: []want{verdict("malformed")}},
		{name: "alg-none", path: "/v1/verify", body: verifyBody(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(claims("")) + "."),
			want: []want{verdict("alg_not_allowed", "malformed")}},
		// Numbers.
		{name: "huge-number-claim", path: "/v1/verify", body: verifyBody(signRaw(key, hdr, claims(`,"big":123456789012345678901234567890123456789,"tiny":1e-400,"huge":1e400`))),
			want: []want{{status: 200, valid: true}, verdict("malformed")}},
		{name: "huge-exp", path: "/v1/verify", body: verifyBody(signRaw(key, hdr, []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":1e400}`, iss, rhAudience)))),
			want: []want{verdict("malformed", "expired"), {status: 200, valid: true}}},
		{name: "negative-huge-nbf", path: "/v1/verify", body: verifyBody(signRaw(key, hdr, claims(`,"nbf":-1e400`))),
			want: []want{verdict("malformed"), {status: 200, valid: true}}},
		{name: "exp-as-string", path: "/v1/verify", body: verifyBody(signRaw(key, hdr, []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":"%d"}`, iss, rhAudience, exp)))),
			want: []want{verdict("malformed", "missing_claim")}},
		// Claims that end up in headers.
		{name: "authz-crlf-in-sub", path: "authz", token: signRaw(key, hdr, []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"alice\r\nX-Injected: yes\r\n\r\nbody"}`, iss, rhAudience, exp))),
			want: []want{{status: 200, valid: true}, {status: 401, classes: []string{"malformed"}}}},
		{name: "authz-nul-and-long-sub", path: "authz", token: signRaw(key, hdr, []byte(fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"sub":"a\u0000b%s"}`, iss, rhAudience, exp, strings.Repeat("z", 8000)))),
			want: []want{{status: 200, valid: true}, {status: 401, classes: []string{"malformed"}}}},
	}
	classes := verify.Classes()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req *http.Request
			if tc.path == "authz" {
				req, _ = http.NewRequest(http.MethodGet, base+"/v1/authz/orders", nil)
				req.Header.Set("Authorization", "Bearer "+tc.token)
			} else {
				req, _ = http.NewRequest(http.MethodPost, base+tc.path, bytes.NewReader(tc.body))
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			var got struct {
				Valid *bool  `json:"valid"`
				Error string `json:"error"`
			}
			_ = json.Unmarshal(data, &got)
			class := got.Error
			if tc.path == "authz" {
				class = authzClass(resp.Header.Get("WWW-Authenticate"))
			}
			valid := resp.StatusCode == 200 && (tc.path == "authz" || (got.Valid != nil && *got.Valid))
			ok := false
			for _, w := range tc.want {
				switch {
				case resp.StatusCode != w.status:
				case w.valid:
					ok = ok || valid
				case w.classes != nil:
					ok = ok || (!valid && slices.Contains(w.classes, class))
				default:
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s = %d %q (class %q), want one of %+v", tc.path, resp.StatusCode, clip(data), class, tc.want)
			}
			if resp.StatusCode >= 500 {
				t.Errorf("%s = %d: a 5xx for bad input", tc.path, resp.StatusCode)
			}
			if class != "" && !slices.Contains(classes, class) && class != "bad_request" {
				t.Errorf("class %q is not a SPEC class", class)
			}
			for _, tok := range []string{tc.token, tokenIn(tc.body)} {
				if len(tok) >= 32 && bytes.Contains(data, []byte(tok[:32])) {
					t.Errorf("the response echoes the token: %q", clip(data))
				}
			}
			if tc.path == "authz" && resp.StatusCode == 200 {
				for name, vals := range resp.Header {
					for _, v := range vals {
						if strings.ContainsAny(v, "\r\n\x00") || len(v) > 4096 {
							t.Errorf("response header %s = %q: CR, LF, NUL or over 4 KiB", name, clip([]byte(v)))
						}
					}
				}
				if resp.Header.Get("X-Injected") != "" {
					t.Errorf("a claim injected the header X-Injected: %q", resp.Header.Get("X-Injected"))
				}
				t.Logf("X-Auth-Subject = %q (%d bytes)", clip([]byte(resp.Header.Get("X-Auth-Subject"))), len(resp.Header.Get("X-Auth-Subject")))
			}
		})
	}

	// Header injection at the HTTP layer: raw bytes a Go client would refuse
	// to send.
	t.Run("raw-requests", func(t *testing.T) {
		raw := []string{
			"GET /v1/authz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\rX-Injected: yes\r\n\r\n",
			"GET /v1/authz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + validToken + "\r\n X-Injected: folded\r\n\r\n",
			"GET /v1/authz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + validToken + "\r\nAuthorization: Bearer " + validToken + "\r\n\r\n",
			"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n{}",
			"POST /v1/verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n" + strings.Repeat("{", 70_000),
			"GET /v1/authz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", 5000) + "\r\n",
		}
		for i, req := range raw {
			status, line := rawExchange(t, svc.HTTP, req)
			if status < 400 || status >= 500 || (i == 2 && status != 401) {
				t.Errorf("raw request %d: %q, want a 4xx (401 for two Authorization headers)", i, line)
			}
		}
	})

	// Bounded garbage: random bodies and random tokens.
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		statuses := map[int]int{}
		for i := range 300 {
			n := rng.IntN(2048)
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(rng.UintN(256))
			}
			body := b
			if i%2 == 1 {
				body = verifyBody(string(b)) // a random token in a well-formed request
			}
			resp, err := c.Post(base+"/v1/verify", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatalf("random %d: %v", i, err)
			}
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			statuses[resp.StatusCode]++
			if resp.StatusCode != 200 && resp.StatusCode != 400 && resp.StatusCode != 413 {
				t.Errorf("random %d = %d %q, want 200, 400 or 413", i, resp.StatusCode, clip(data))
			}
			if resp.StatusCode == 200 && !bytes.HasPrefix(data, []byte(`{"valid":false,"error":"malformed"`)) {
				t.Errorf("random %d = %q, want malformed", i, clip(data))
			}
		}
		t.Logf("300 random requests: statuses %v", statuses)
	})

	// Alive, and still verifying.
	if v, err := rhVerify(c, base, validToken); err != nil || !v.Valid {
		t.Errorf("after the bad input: Verify(valid) = %v, %v; want valid", v, err)
	}
	if resp, err := c.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("after the bad input: /healthz = %v, %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if svc.exited() || strings.Contains(svc.Output(), "panic") {
		t.Errorf("the service exited or panicked:\n%s", svc.Output())
	}
}

// authzClass reads error_description="CLASS" from a WWW-Authenticate value.
func authzClass(www string) string {
	_, rest, ok := strings.Cut(www, `error_description="`)
	if !ok {
		return ""
	}
	class, _, _ := strings.Cut(rest, `"`)
	return class
}

// tokenIn returns the "token" member of a JSON body, or "".
func tokenIn(body []byte) string {
	var b struct {
		Token string `json:"token"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Token
}

// clip bounds data for a message.
func clip(data []byte) string {
	if len(data) > 200 {
		return string(data[:200]) + "…"
	}
	return string(data)
}

// rawExchange writes req on a new connection and returns the status and
// the status line of the answer (0 when the server closed without one).
func rawExchange(t *testing.T, addr, req string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(conn, req)
	buf := make([]byte, 512)
	n, _ := io.ReadAtLeast(conn, buf, 12)
	line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
	var status int
	if _, err := fmt.Sscanf(line, "HTTP/1.1 %d", &status); err != nil {
		return 0, line
	}
	return status, line
}
