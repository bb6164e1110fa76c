package revoke

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	if kept.ID == "" || !kept.ExpiresAt.Equal(t0.Add(time.Hour+expiryMargin)) || !kept.IssuedBefore.Equal(t0) {
		t.Errorf("Add() = %+v, want an ID, expires_at now+retention+margin, issued_before now", kept)
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
		{"issuer-over-max-bytes", Entry{Issuer: strings.Repeat("i", MaxValueBytes+1), Kind: KindIssuer}},
		{"value-over-max-bytes", Entry{Issuer: "i", Kind: KindSub, Value: strings.Repeat("v", MaxValueBytes+1)}},
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

func TestWriteMemoryLog(t *testing.T) {
	valid := []Entry{
		{Issuer: "https://a/", Kind: KindSub, Value: "u1", Source: SourceAdmin},
		{Issuer: "https://a/", Kind: KindJTI, Value: "j1", Source: SourceAdmin},
		{Issuer: "https://a/", Kind: KindSID, Value: "s1", Source: SourceAdmin},
	}
	tests := []struct {
		name      string
		es        []Entry
		retention time.Duration
		wantErr   error // nil: written, read back by OpenMemory
	}{
		{"entries", valid, time.Hour, nil},
		{"none", nil, time.Hour, nil},
		{"invalid-entry", append(valid[:1:1], Entry{Kind: KindSub, Value: "x"}), time.Hour, ErrInvalid},
		{"no-retention", valid, 0, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			err := WriteMemoryLog(dir, tt.es, t0, tt.retention)
			if tt.wantErr != nil {
				if err == nil || (tt.wantErr != errAny && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("WriteMemoryLog() = %v, want %v", err, tt.wantErr)
				}
				if _, serr := os.Stat(filepath.Join(dir, MemoryFile)); !errors.Is(serr, os.ErrNotExist) {
					t.Errorf("a refused WriteMemoryLog left a log (stat: %v)", serr)
				}
				return
			}
			if err != nil {
				t.Fatalf("WriteMemoryLog() = %v", err)
			}
			m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: tt.retention, Now: func() time.Time { return t0.Add(time.Minute) }})
			if err != nil {
				t.Fatalf("OpenMemory() = %v", err)
			}
			defer m.Close()
			got, _ := m.List(context.Background(), "")
			if len(got) != len(tt.es) {
				t.Fatalf("List() has %d entries, want %d", len(got), len(tt.es))
			}
			want := map[string]bool{}
			for _, e := range tt.es {
				want[e.Value] = true
			}
			for _, e := range got {
				if e.ID == "" || !want[e.Value] || !e.ExpiresAt.Equal(t0.Add(tt.retention+expiryMargin)) {
					t.Errorf("entry %+v: want an ID, a value written, expires_at t0+retention+margin", e)
				}
				delete(want, e.Value)
			}
			tok := Token{Sub: "u1", IssuedAt: t0.Add(-time.Second)}
			if len(tt.es) > 0 && m.Index().Check("https://a/", &tok, t0.Add(time.Minute)) == nil {
				t.Errorf("Check(%+v) = nil, want the written sub entry to match", tok)
			}
		})
	}
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")
