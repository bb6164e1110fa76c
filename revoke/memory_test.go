package revoke

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestMemoryPersists(t *testing.T) {
	dir := t.TempDir()
	now := t0
	clock := func() time.Time { return now }
	open := func() *Memory {
		t.Helper()
		m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour, Now: clock})
		if err != nil {
			t.Fatalf("OpenMemory() = %v", err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	ctx := context.Background()
	m := open()
	kept, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindSub, Value: "u", Source: SourceAdmin})
	if err != nil {
		t.Fatalf("Add() = %v", err)
	}
	if kept.ID == "" || !kept.ExpiresAt.Equal(t0.Add(time.Hour)) || !kept.IssuedBefore.Equal(t0) {
		t.Errorf("Add() = %+v, want an ID, expires_at now+retention, issued_before now", kept)
	}
	lifted, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "j", Source: SourceAdmin})
	if err != nil {
		t.Fatalf("Add() = %v", err)
	}
	if err := m.Delete(ctx, lifted.ID); err != nil {
		t.Fatalf("Delete() = %v", err)
	}
	if err := m.Delete(ctx, lifted.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete() again = %v, want ErrNotFound", err)
	}
	m.Close()
	if _, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add() after Close = %v, want ErrClosed", err)
	}
	// A record cut short by a crash was never acknowledged: ignored.
	f, _ := os.OpenFile(filepath.Join(dir, MemoryFile), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"op":"add","entry":{"id":"torn"`)
	f.Close()

	m2 := open()
	tok := Token{Sub: "u", IssuedAt: t0.Add(-time.Minute)}
	if err := m2.Index().Check("https://a/", &tok, now); !errors.Is(err, ErrRevoked) {
		t.Errorf("after restart, Check(sub) = %v, want revoked", err)
	}
	if err := m2.Index().Check("https://a/", &Token{JTI: "j"}, now); err != nil {
		t.Errorf("after restart, Check(lifted jti) = %v, want nil", err)
	}
	if es, _ := m2.List(ctx, ""); len(es) != 1 || es[0] != kept {
		t.Errorf("List() after restart = %+v, want [%+v]", es, kept)
	}
	m2.Close()
	now = t0.Add(2 * time.Hour)
	m3 := open()
	if es, _ := m3.List(ctx, ""); len(es) != 0 {
		t.Errorf("List() after retention = %+v, want none", es)
	}
}

func TestMemoryRefuses(t *testing.T) {
	m, err := OpenMemory(MemoryOptions{Dir: t.TempDir(), Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tt := range []struct {
		name string
		e    Entry
	}{
		{"no-issuer", Entry{Kind: KindJTI, Value: "j"}},
		{"unknown-kind", Entry{Issuer: "i", Kind: "user", Value: "j"}},
		{"no-value", Entry{Issuer: "i", Kind: KindSub}},
		{"issuer-with-value", Entry{Issuer: "i", Kind: KindIssuer, Value: "v"}},
		{"jti-issued-before", Entry{Issuer: "i", Kind: KindJTI, Value: "j", IssuedBefore: t0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := m.Add(context.Background(), tt.e); !errors.Is(err, ErrInvalid) {
				t.Errorf("Add() = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestMemoryCorruptLog(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, MemoryFile), []byte("not json\n"), 0o600)
	if _, err := OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour}); err == nil {
		t.Error("OpenMemory() of a corrupt log = nil, want an error")
	}
}
