package server

import "testing"

// TestListsCredential: a Bearer or DPoP credential (or a source's prefix)
// after a ',' is a merged repeated header, in any spelling an application
// could read as one ("Bearer:x"); an auth-param of another scheme that
// spells a scheme's name ("bearer=2") is not.
func TestListsCredential(t *testing.T) {
	for _, tt := range []struct {
		v, prefix string
		want      bool
	}{
		{"Bearer abc.def.ghi", "", false},
		{"Basic YTpi,Bearer abc.def.ghi", "", true},
		{"Basic YTpi, bearer abc", "", true},
		{"Basic YTpi,\tDPoP abc", "", true},
		{"Basic YTpi,Bearer", "", true},
		{"Basic YTpi,Bearer,", "", true},
		{"Custom a=1, bearer=2", "", false},
		{"Custom a=1, bearer = 2", "", false},
		{"Basic YTpi,Bearer:abc", "", true},
		{"Basic YTpi,Bearer!abc", "", true}, // '!': Envoy's stand-in for 0xA0, no scheme character
		{"Basic YTpi,DPoP!abc", "", true},
		// A quoted string is not parsed: a Digest user named ", DPoP" is
		// refused (fail closed).
		{`Digest username="Bearer, DPoP", realm="x"`, "", true},
		{"AWS4-HMAC-SHA256 Credential=a/b, SignedHeaders=host, Signature=c", "", false},
		{"Basic YTpi,Bearerish x", "", false},
		{"tok1,Token tok2", "Token ", true},
		{"tok1,tok2", "", false},
	} {
		if got := listsCredential(tt.v, tt.prefix); got != tt.want {
			t.Errorf("listsCredential(%q, %q) = %v, want %v", tt.v, tt.prefix, got, tt.want)
		}
	}
}
