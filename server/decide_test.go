package server

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/request"
)

// TestDecideLeavesCallAlone: no stage modifies the call it is handed (the
// binding stage once filled the *Binding it got): every call, decided with
// its binding checks explained, is afterwards what it was before.
func TestDecideLeavesCallAlone(t *testing.T) {
	e := newBindEnv(t, ConstraintOptional)
	jkt := jktOf(t, testkeys.EC256B)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jkt}}))
	o, err := request.FromParts("POST", "https", "api.example.com", "/orders/1")
	if err != nil {
		t.Fatal(err)
	}
	proof := mintProof(testkeys.EC256B, "ES256", "leave-alone", "POST", htu, bound)
	tests := []struct {
		name string
		call Call
	}{
		{"headers-dpop", Call{Endpoint: EndpointAuthz, Headers: http.Header{"Authorization": {"DPoP " + bound}, "Dpop": {proof}},
			Original: o, Routed: true, Explain: true}},
		{"token-dpop", Call{Endpoint: EndpointVerify, Token: bound, DPoP: true, Proofs: []string{"not-a-proof"}, Original: o, Explain: true}},
		{"token-bearer-bound", Call{Endpoint: EndpointBatch, Token: bound, OriginalErr: request.ErrMissing, Explain: true}},
		{"no-token", Call{Endpoint: EndpointAuthz, Headers: http.Header{}, Routed: true}},
		{"named-unknown-policy", Call{Endpoint: EndpointGRPC, Token: bound, Policy: "nope", ClientCert: "%%"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.call
			before := c
			if h, ok := c.Headers.(http.Header); ok {
				before.Headers = http.Header(maps.Clone(map[string][]string(h)))
				for k, v := range h {
					before.Headers.(http.Header)[k] = slices.Clone(v)
				}
			}
			before.Proofs = slices.Clone(c.Proofs)
			d := e.srv.Decide(context.Background(), &c)
			if !reflect.DeepEqual(c, before) {
				t.Errorf("Decide() changed the call: %+v, was %+v", c, before)
			}
			if d.Status == 0 {
				t.Errorf("Decide() = %+v, want a status", d)
			}
		})
	}
}

// TestCallOriginal: a zero Original with no error is not known: a query
// token source finds nothing in it, and a DPoP proof cannot name it.
func TestCallOriginal(t *testing.T) {
	tests := []struct {
		name    string
		c       Call
		wantErr error
	}{
		{"zero", Call{}, request.ErrMissing},
		{"given-error", Call{OriginalErr: request.ErrAmbiguousPath}, request.ErrAmbiguousPath},
		{"query-only", Call{Original: request.Original{RawQuery: "a=b"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.c.original(); !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Errorf("original() error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
