package policy

import (
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// TestSpelledRouteSamePolicy: /v1/users%3Aexport reaches /v1/** raw
// and /v1/users:export decoded, both under the same policy: no differential
// an attacker can use, yet the request is refused as ambiguous.
func TestSpelledRouteSamePolicy(t *testing.T) {
	s, err := New(Options{
		Policies: []Spec{{Name: "user"}},
		Routes: []Route{
			{Methods: []string{"POST"}, Path: "/v1/users:export", Policy: "user"},
			{Path: "/v1/**", Policy: "user"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := request.FromParts("POST", "", "", "/v1/users%3Aexport")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Choose("", o, nil); err != nil {
		t.Errorf("POST /v1/users%%3Aexport (both readings policy user): %v", err)
	}
}
