package revoke

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzMemoryLogRoundTrip holds the memory store's log to its promise that
// an acknowledged entry stays as it was acknowledged across a restart: an
// entry whose issuer, kind and value come from a client (the admin API, a
// logout token's sid, a SET's subject) that Add accepts is, once the log
// is read back, listed with every field equal, and a token it names is
// revoked before the restart exactly when it is after. An entry lifted
// stays lifted. Add refuses only with ErrInvalid.
func FuzzMemoryLogRoundTrip(f *testing.F) {
	for _, s := range []struct {
		issuer, kind, value string
		before              int64
		lift                bool
	}{
		{"https://a/", "sub", "bob", -60, false},
		{"https://a/", "jti", "j-1", 0, true},
		{"https://a/", "sid", "s\u2028\"<>&\\", 0, false},
		{"https://a/", "client_id", "\uFFFD", 3600, false},
		{"https://a/", "issuer", "", -1, false},
		{"https://a/\x97", "sub", "x", 0, false},
		{"", "jti", "x", 0, false},
		{"https://a/", "SUB", "x", 0, false},
		{"https://a/", "sub", "line\nbreak\r\x00", 1 << 40, false},
	} {
		f.Add(s.issuer, s.kind, s.value, s.before, s.lift)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, issuer, kind, value string, before int64, lift bool) {
		dir := t.TempDir()
		clock := func() time.Time { return t0 }
		m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour, Now: clock})
		if err != nil {
			t.Fatalf("OpenMemory() = %v", err)
		}
		e := Entry{Issuer: issuer, Kind: Kind(kind), Value: value, Source: SourceAdmin}
		if before != 0 {
			e.IssuedBefore = t0.Add(time.Duration(before) * time.Second)
		}
		added, err := m.Add(ctx, e)
		if err != nil {
			m.Close()
			if !errors.Is(err, ErrInvalid) || Check(e) == nil {
				t.Fatalf("Add(%+v) = %v; Check() = %v", e, err, Check(e))
			}
			return
		}
		// The other entry is an admin's, with a value of its own, so that the
		// log holds more than one record.
		other, err := m.Add(ctx, Entry{Issuer: "https://b/", Kind: KindJTI, Value: "other", Source: SourceAdmin})
		if err != nil {
			t.Fatalf("Add(other) = %v", err)
		}
		if lift {
			if err := m.Delete(ctx, added.ID); err != nil {
				t.Fatalf("Delete(%s) = %v", added.ID, err)
			}
		}
		tok := tokenNaming(added)
		wantCheck := m.Index().Check(issuer, &tok, t0)
		want, _ := m.List(ctx, "")
		m.Close()

		m2, err := OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour, Now: clock})
		if err != nil {
			t.Fatalf("OpenMemory() again = %v (log %q)", err, readFileString(t, filepath.Join(dir, MemoryFile)))
		}
		defer m2.Close()
		got, _ := m2.List(ctx, "")
		if !sameEntries(got, want) {
			t.Fatalf("after a restart List() = %+v, before %+v", got, want)
		}
		if gotCheck := m2.Index().Check(issuer, &tok, t0); !errors.Is(gotCheck, wantCheck) || (gotCheck == nil) != (wantCheck == nil) {
			t.Fatalf("Check(%+v) after a restart = %v, before %v", tok, gotCheck, wantCheck)
		}
		found := map[string]bool{}
		for _, g := range got {
			found[g.ID] = true
		}
		if found[added.ID] == lift || !found[other.ID] {
			t.Fatalf("after a restart List() = %+v; lifted %v", got, lift)
		}
	})
}

// FuzzReadLog feeds arbitrary bytes as the memory store's log: OpenMemory
// never panics, refuses exactly what CheckMemory (jwksverify check)
// refuses, and a log it opened, rewritten by it, reads back to the same
// entries.
func FuzzReadLog(f *testing.F) {
	for _, s := range []string{
		`{"op":"add","entry":{"id":"a","issuer":"https://a/","kind":"sub","value":"u","issued_before":"2026-12-05T10:00:00Z","created_at":"2026-12-05T10:00:00Z","expires_at":"2026-12-05T12:00:00Z","source":"admin"}}` + "\n",
		`{"op":"add","entry":{"id":"a","issuer":"https://a/","kind":"jti","value":"j","created_at":"2026-12-05T10:00:00Z","expires_at":"2026-12-05T12:00:00Z"}}` + "\n" + `{"op":"delete","id":"a"}` + "\n",
		`{"op":"add","entry":{"id":"a"` + "\n",
		`{"op":"add","entry":{"id":"a","issuer":"https://a/"}}` + "\n" + `{"op":"add"` + "",
		`{"op":"x"}` + "\n",
		`{"op":"add"}` + "\n",
		"\n",
		`{"op":"delete","id":"nope"}` + "\n",
		`{"op":"add","entry":{"id":"a","expires_at":"9999-12-31T23:59:59Z"}}` + "\n" + `{"op":"add","entry":{"id":"a","issuer":"\ud800","expires_at":"2026-12-05T10:30:00Z"}}` + "\n",
	} {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, log []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, MemoryFile), log, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := MemoryOptions{Dir: dir, Retention: time.Hour, Now: func() time.Time { return t0 }}
		checkErr := CheckMemory(opts)
		m, err := OpenMemory(opts)
		if (err == nil) != (checkErr == nil) {
			t.Fatalf("OpenMemory() = %v, CheckMemory() = %v", err, checkErr)
		}
		if err != nil {
			return
		}
		want, _ := m.List(ctx, "")
		m.Close()
		m2, err := OpenMemory(opts)
		if err != nil {
			t.Fatalf("OpenMemory() of the log it rewrote = %v", err)
		}
		defer m2.Close()
		if got, _ := m2.List(ctx, ""); !sameEntries(got, want) {
			t.Fatalf("reopened List() = %+v, first %+v", got, want)
		}
	})
}

// tokenNaming is a token that e names.
func tokenNaming(e Entry) Token {
	tok := Token{IssuedAt: t0.Add(-2 * time.Hour)}
	switch e.Kind {
	case KindJTI:
		tok.JTI = e.Value
	case KindSID:
		tok.SID = e.Value
	case KindSub:
		tok.Sub = e.Value
	case KindClientID:
		tok.ClientID = e.Value
	}
	return tok
}

// sameEntries reports whether a and b hold the same entries in the same
// order, their times equal as instants.
func sameEntries(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Issuer != y.Issuer || x.Kind != y.Kind || x.Value != y.Value || x.Source != y.Source ||
			!x.IssuedBefore.Equal(y.IssuedBefore) || !x.CreatedAt.Equal(y.CreatedAt) || !x.ExpiresAt.Equal(y.ExpiresAt) {
			return false
		}
	}
	return true
}

func readFileString(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
