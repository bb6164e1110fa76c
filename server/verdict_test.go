package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// TestAppendVerdict: the one body of a verdict, as /v1/verify writes it and
// `jwksverify verify` prints it.
func TestAppendVerdict(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVz"
	res := &verify.Result{Issuer: "https://idp.example.com/", Kid: "k1", Alg: "RS256",
		Header: json.RawMessage(`{"alg":"RS256","kid":"k1"}`), Claims: json.RawMessage(`{"sub":"alice","n":12345678901234567890}`)}
	expired := fmt.Errorf("%w: exp is in the past", verify.ErrExpired)
	tests := []struct {
		name  string
		b     []byte
		res   *verify.Result
		class string
		err   error
		want  string
	}{
		{name: "valid", res: res, want: `{"valid":true,"issuer":"https://idp.example.com/","kid":"k1","alg":"RS256","header":{"alg":"RS256","kid":"k1"},"claims":{"sub":"alice","n":12345678901234567890}}` + "\n"},
		{name: "valid-empty-objects", res: &verify.Result{}, want: `{"valid":true,"issuer":"","kid":"","alg":"","header":{},"claims":{}}` + "\n"},
		{name: "rejected", class: "expired", err: expired, want: `{"valid":false,"error":"expired","message":"` + expired.Error() + `"}` + "\n"},
		{name: "message-quoting-the-token-is-the-class", class: "malformed", err: fmt.Errorf("%w: bad %s", verify.ErrMalformed, token), want: `{"valid":false,"error":"malformed","message":"malformed"}` + "\n"},
		{name: "empty-class-is-the-error's", err: expired, want: `{"valid":false,"error":"expired","message":"` + expired.Error() + `"}` + "\n"},
		{name: "no-class-word-fails-closed", err: errors.New("dial tcp: refused"), want: `{"valid":false,"error":"keys_unavailable","message":"dial tcp: refused"}` + "\n"},
		{name: "no-result-no-error-is-no-pass", want: `{"valid":false,"error":"keys_unavailable","message":"keys_unavailable"}` + "\n"},
		{name: "batch-item-appends-without-newline", b: []byte("["), class: "expired", err: expired, want: `[{"valid":false,"error":"expired","message":"` + expired.Error() + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendVerdict(tt.b, tt.res, tt.class, tt.err, token))
			if got != tt.want {
				t.Errorf("AppendVerdict() = %s, want %s", got, tt.want)
			}
			if strings.Contains(got, token) {
				t.Errorf("AppendVerdict() = %s holds the token", got)
			}
		})
	}
}
