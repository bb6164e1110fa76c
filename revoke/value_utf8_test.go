package revoke

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAddValueNotUTF8: an entry whose issuer or value is not UTF-8 is
// ErrInvalid. A claim value always is (the verifier refuses a claims set
// that is not), so such an entry names no token, but its store writes it
// with encoding/json, which puts U+FFFD in place of each such byte: the
// Memory log (and Redis, for every other replica) held "bob\uFFFD", so
// after a restart the acknowledged revocation of "bob\x97" revoked the
// subject "bob\uFFFD" instead.
func TestAddValueNotUTF8(t *testing.T) {
	dir := t.TempDir()
	open := func() *Memory {
		t.Helper()
		m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour, Now: func() time.Time { return t0 }})
		if err != nil {
			t.Fatalf("OpenMemory() = %v", err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	ctx := context.Background()
	m := open()
	for _, e := range []Entry{
		{Issuer: "https://a/", Kind: KindSub, Value: "bob\x97", Source: SourceAdmin},
		{Issuer: "https://a/", Kind: KindJTI, Value: "\xff", Source: SourceAdmin},
		{Issuer: "https://a/\xc3", Kind: KindIssuer, Source: SourceAdmin},
	} {
		if _, err := m.Add(ctx, e); !errors.Is(err, ErrInvalid) {
			t.Errorf("Add(%q %q %q) = %v, want ErrInvalid", e.Issuer, e.Kind, e.Value, err)
		}
	}
	m.Close()
	m2 := open()
	other := Token{Sub: "bob\uFFFD", IssuedAt: t0.Add(-time.Minute)}
	if err := m2.Index().Check("https://a/", &other, t0); err != nil {
		t.Errorf("after restart, Check(sub bob\\uFFFD) = %v: an entry nobody asked for", err)
	}
	if es, _ := m2.List(ctx, ""); len(es) != 0 {
		t.Errorf("List() after restart = %+v, want none", es)
	}
}
