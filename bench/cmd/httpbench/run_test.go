package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/bench/internal/fixture"
	"github.com/jwksverify/jwksverify/bench/internal/httpres"
	"github.com/jwksverify/jwksverify/revoke"
)

func TestOnlySelects(t *testing.T) {
	tests := []struct {
		name      string
		only      string
		wantHTTP  []string
		wantGRPC  []string
		wantError string
	}{
		{"all", "", slices.DeleteFunc(slices.Clone(httpServers), func(s string) bool { return s == httpres.ServerFloorNoStore }), grpcServers, ""},
		{"opt-in", "floor,floor-no-store", []string{httpres.ServerFloor, httpres.ServerFloorNoStore}, nil, ""},
		{"revocation-pair", "jwksverify,jwksverify-revocation", []string{httpres.ServerJwksverify, httpres.ServerRevocation}, []string{httpres.ServerJwksverify}, ""},
		{"grpc-only", "grpc-floor", nil, []string{httpres.ServerGRPCFloor}, ""},
		{"unknown", "jwksverify,nginx", nil, nil, `unknown server "nginx"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseRunFlags([]string{"-only", tt.only})
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("parseRunFlags(-only %q) = %v, want an error with %q", tt.only, err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseRunFlags(-only %q) = %v", tt.only, err)
			}
			if got := o.selected(httpServers); !slices.Equal(got, tt.wantHTTP) {
				t.Errorf("HTTP servers = %v, want %v", got, tt.wantHTTP)
			}
			if got := o.selected(grpcServers); !slices.Equal(got, tt.wantGRPC) {
				t.Errorf("gRPC servers = %v, want %v", got, tt.wantGRPC)
			}
		})
	}
}

// TestRevocationsMissTheLoad checks that the revocation server's entries
// are valid, as many as asked, of every kind the brief names, and that none
// names a token the load sends (its answer must stay 200) while the
// sanity check's revoked jti is among them.
func TestRevocationsMissTheLoad(t *testing.T) {
	for _, n := range []int{10, 1000} {
		es := revocations(n)
		if len(es) != n {
			t.Fatalf("revocations(%d) has %d entries", n, len(es))
		}
		sent := fixture.Claims(time.Now(), fixture.Issuer, 0)
		kinds := map[revoke.Kind]int{}
		sawSanity := false
		for _, e := range es {
			if err := revoke.Check(e); err != nil {
				t.Fatalf("entry %+v: %v", e, err)
			}
			kinds[e.Kind]++
			if e.Kind == revoke.KindSub && e.Value == sent["sub"] {
				t.Errorf("entry %+v names the load's subject", e)
			}
			if e.Kind == revoke.KindJTI && strings.HasPrefix(e.Value, strings.TrimSuffix(sent["jti"].(string), "000000000000")) {
				t.Errorf("entry %+v names a jti of the load", e)
			}
			sawSanity = sawSanity || (e.Kind == revoke.KindJTI && e.Value == revokedJTI(0))
		}
		if kinds[revoke.KindSub] == 0 || kinds[revoke.KindJTI] == 0 || kinds[revoke.KindSID] == 0 {
			t.Errorf("revocations(%d) kinds = %v, want sub, jti and sid entries", n, kinds)
		}
		if n >= 1000 && !sawSanity {
			t.Errorf("revocations(%d) lacks the sanity check's jti %q", n, revokedJTI(0))
		}
	}
}
