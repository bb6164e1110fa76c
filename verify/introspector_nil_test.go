package verify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// introspectorFunc is a verify.Introspector of a library caller's own.
type introspectorFunc func(context.Context, string, time.Time) (*verify.Introspection, error)

func (f introspectorFunc) Introspect(ctx context.Context, token string, now time.Time) (*verify.Introspection, error) {
	return f(ctx, token, now)
}

// TestIntrospectorNoAnswerFailsClosed: an Introspector of a library
// caller's own that returns neither an answer nor an error (a nil
// *Introspection, or one without claims) is a failure to decide
// (keys_unavailable), as any other error of its is; the nil answer made the
// verifier dereference it and panic.
func TestIntrospectorNoAnswerFailsClosed(t *testing.T) {
	keys := keysOf(keyFor(t, "RS256", "k-RS256"))
	for _, tt := range []struct {
		name string
		ans  *verify.Introspection
	}{
		{"nil-answer", nil},
		{"no-claims", &verify.Introspection{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := issuerA(keys)
			a.Introspector = introspectorFunc(func(context.Context, string, time.Time) (*verify.Introspection, error) { return tt.ans, nil })
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{a}})
			if res, err := v.Verify(context.Background(), "opaque-token"); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Errorf("Verify() with an introspector's answer %v = %v, %v; want keys_unavailable", tt.ans, res, err)
			}
		})
	}
}
