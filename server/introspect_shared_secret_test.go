package server

import (
	"errors"
	"testing"
)

// TestIntrospectionClientsShareNoSecret: a Bearer caller is known by its
// secret alone, so two clients holding one secret cannot be told apart:
// the RFC 9701 answer to one of them named the other as its aud (clientOf
// takes the first client whose secret it is), and a resource server that
// checks aud refused answers made for it. CheckOptions refuses the pair,
// as it refuses an id listed twice.
func TestIntrospectionClientsShareNoSecret(t *testing.T) {
	err := CheckOptions(Options{IntrospectionClients: []IntrospectionClient{
		{ID: "gateway", Secret: "one-shared-secret-value"},
		{ID: "billing", Secret: "one-shared-secret-value"},
	}}, 0)
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("CheckOptions of two clients with one secret = %v, want ErrInvalidOptions", err)
	}
}
