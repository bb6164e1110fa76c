package revoke

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func entry(id string, k Kind, v string, before time.Time) Entry {
	return Entry{ID: id, Issuer: "https://a/", Kind: k, Value: v, IssuedBefore: before,
		CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour), Source: SourceAdmin}
}

func TestIndexCheck(t *testing.T) {
	early, late := t0.Add(-2*time.Hour), t0.Add(-time.Hour)
	tests := []struct {
		name    string
		entries []Entry
		issuer  string
		tok     Token
		now     time.Time
		want    error
	}{
		{"no-entries", nil, "https://a/", Token{JTI: "j", Sub: "s"}, t0, nil},
		{"jti", []Entry{entry("1", KindJTI, "j", time.Time{})}, "https://a/", Token{JTI: "j"}, t0, ErrRevoked},
		{"jti-other-issuer", []Entry{entry("1", KindJTI, "j", time.Time{})}, "https://b/", Token{JTI: "j"}, t0, nil},
		{"jti-other", []Entry{entry("1", KindJTI, "j", time.Time{})}, "https://a/", Token{JTI: "k", Sub: "j"}, t0, nil},
		{"sid", []Entry{entry("1", KindSID, "s1", time.Time{})}, "https://a/", Token{SID: "s1", IssuedAt: t0}, t0, ErrRevoked},
		{"sub-before", []Entry{entry("1", KindSub, "u", late)}, "https://a/", Token{Sub: "u", IssuedAt: early}, t0, ErrRevoked},
		{"sub-after", []Entry{entry("1", KindSub, "u", early)}, "https://a/", Token{Sub: "u", IssuedAt: late}, t0, nil},
		{"sub-at", []Entry{entry("1", KindSub, "u", late)}, "https://a/", Token{Sub: "u", IssuedAt: late}, t0, nil},
		{"sub-no-iat", []Entry{entry("1", KindSub, "u", early)}, "https://a/", Token{Sub: "u"}, t0, ErrRevoked},
		{"sub-latest-decides", []Entry{entry("1", KindSub, "u", early), entry("2", KindSub, "u", late)}, "https://a/", Token{Sub: "u", IssuedAt: early.Add(time.Minute)}, t0, ErrRevoked},
		{"client-id", []Entry{entry("1", KindClientID, "c", late)}, "https://a/", Token{ClientID: "c", IssuedAt: early}, t0, ErrRevoked},
		{"client-azp", []Entry{entry("1", KindClientID, "c", late)}, "https://a/", Token{AZP: "c", IssuedAt: early}, t0, ErrRevoked},
		{"client-after", []Entry{entry("1", KindClientID, "c", early)}, "https://a/", Token{ClientID: "c", IssuedAt: late}, t0, nil},
		{"issuer", []Entry{entry("1", KindIssuer, "", late)}, "https://a/", Token{IssuedAt: early}, t0, ErrRevoked},
		{"issuer-no-iat", []Entry{entry("1", KindIssuer, "", late)}, "https://a/", Token{JTI: "x"}, t0, ErrRevoked},
		{"issuer-after", []Entry{entry("1", KindIssuer, "", early)}, "https://a/", Token{IssuedAt: late}, t0, nil},
		{"issuer-other", []Entry{entry("1", KindIssuer, "", late)}, "https://b/", Token{IssuedAt: early}, t0, nil},
		{"empty-claim-names-nothing", []Entry{entry("1", KindSub, "u", late)}, "https://a/", Token{IssuedAt: early}, t0, nil},
		{"expired", []Entry{entry("1", KindJTI, "j", time.Time{})}, "https://a/", Token{JTI: "j"}, t0.Add(25 * time.Hour), nil},
		{"sub-value-is-not-jti", []Entry{entry("1", KindSub, "j", late)}, "https://a/", Token{JTI: "j", IssuedAt: early}, t0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewIndex(0)
			for _, e := range tt.entries {
				x.Put(e, t0)
			}
			if got := x.Check(tt.issuer, &tt.tok, tt.now); !errors.Is(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("Check() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIndexRemoveReplaceGrow(t *testing.T) {
	x := NewIndex(0)
	const n = 5000
	for i := range n {
		x.Put(entry(fmt.Sprint(i), KindJTI, fmt.Sprint("j", i), time.Time{}), t0)
	}
	for i := range n {
		if err := x.Check("https://a/", &Token{JTI: fmt.Sprint("j", i)}, t0); err != ErrRevoked {
			t.Fatalf("Check(j%d) = %v, want revoked", i, err)
		}
	}
	for i := range n - 1 {
		if !x.Remove(fmt.Sprint(i)) {
			t.Fatalf("Remove(%d) = false", i)
		}
	}
	if x.Remove("0") {
		t.Error("Remove of a removed entry = true")
	}
	if err := x.Check("https://a/", &Token{JTI: "j0"}, t0); err != nil {
		t.Errorf("Check of a lifted entry = %v, want nil", err)
	}
	if err := x.Check("https://a/", &Token{JTI: fmt.Sprint("j", n-1)}, t0); err != ErrRevoked {
		t.Errorf("Check of the last entry = %v, want revoked", err)
	}
	x.Replace([]Entry{entry("x", KindSID, "s", time.Time{})}, t0)
	if got := x.Len(); got != 1 {
		t.Errorf("Len() after Replace = %d, want 1", got)
	}
	if err := x.Check("https://a/", &Token{JTI: fmt.Sprint("j", n-1)}, t0); err != nil {
		t.Errorf("Check after Replace = %v, want nil", err)
	}
	if got := x.List("", t0); len(got) != 1 || got[0].ID != "x" {
		t.Errorf("List() = %v", got)
	}
}

func TestIndexStale(t *testing.T) {
	x := NewIndex(30 * time.Second)
	if err := x.Check("https://a/", &Token{}, t0); err != ErrStale {
		t.Errorf("Check before a sync = %v, want stale", err)
	}
	x.Synced(t0)
	if err := x.Check("https://a/", &Token{}, t0.Add(30*time.Second)); err != nil {
		t.Errorf("Check within max_staleness = %v, want nil", err)
	}
	if err := x.Check("https://a/", &Token{}, t0.Add(31*time.Second)); err != ErrStale {
		t.Errorf("Check past max_staleness = %v, want stale", err)
	}
	if !x.Stale(t0.Add(time.Minute)) || x.Stale(t0) {
		t.Error("Stale() disagrees with Check")
	}
}

// BenchmarkMatch is the request path's cost of revocation: a token that
// no entry names, against 1 000 000 entries of every kind (SPEC: at most
// 50 ns and no allocation).
func BenchmarkMatch(b *testing.B) {
	x := millionEntries()
	runtime.GC() // the set-up's garbage is not the check's: no collection during the loop
	tok := &Token{JTI: "3f2b1c9e-7a40-4d1e-9b8a-1c2d3e4f5a6b", SID: "sid-8d1f2c3b4a5e", Sub: "248289761001",
		ClientID: "web-app", AZP: "web-app", IssuedAt: t0.Add(-time.Minute)}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if x.Check("https://a/", tok, t0) != nil {
			b.Fatal("revoked")
		}
	}
}

// millionEntries is an index of 1 000 000 entries, a fifth of each kind.
func millionEntries() *Index {
	x := NewIndex(0)
	const n = 1_000_000
	kinds := Kinds()
	es := make([]Entry, 0, n)
	for i := range n {
		k := kinds[i%len(kinds)]
		e := entry(fmt.Sprint(i), k, fmt.Sprintf("value-%d", i), t0.Add(-time.Hour))
		if k == KindIssuer {
			e.Value = ""
			e.Issuer = fmt.Sprintf("https://issuer-%d/", i)
		}
		if k == KindJTI || k == KindSID {
			e.IssuedBefore = time.Time{}
		}
		es = append(es, e)
	}
	x.Replace(es, t0)
	return x
}

// TestIndexConcurrent: readers check while the writer adds, lifts and
// grows the table (run with -race); an entry put stays visible to them.
func TestIndexConcurrent(t *testing.T) {
	x := NewIndex(0)
	x.Put(entry("kept", KindSub, "always", t0.Add(time.Hour)), t0)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := x.Check("https://a/", &Token{Sub: "always", JTI: "j-7", IssuedAt: t0}, t0); err != ErrRevoked {
					t.Errorf("Check(kept) = %v during writes", err)
					return
				}
			}
		})
	}
	for i := range 3000 {
		id := fmt.Sprint(i)
		x.Put(entry(id, KindJTI, "j-"+id, time.Time{}), t0)
		if i%3 == 0 {
			x.Remove(id)
		}
	}
	close(done)
	wg.Wait()
}

// TestIndexStaleAcrossClockSteps: a proof is fresh within max_staleness of
// now on either side, and the follower's latest proof counts, also when its
// clock stepped back since the one before.
func TestIndexStaleAcrossClockSteps(t *testing.T) {
	const maxStale = 30 * time.Second
	for _, tc := range []struct {
		name   string
		proofs []time.Time
		now    time.Time
		stale  bool
	}{
		{"proof just now", []time.Time{t0}, t0.Add(time.Second), false},
		{"proof a moment ahead of a request's now", []time.Time{t0}, t0.Add(-time.Second), false},
		{"proof at a clock an hour ahead, clock back", []time.Time{t0.Add(time.Hour)}, t0, true},
		{"proof ahead, then one at the corrected clock", []time.Time{t0.Add(time.Hour), t0}, t0.Add(time.Second), false},
		{"proof ahead, then one at the corrected clock, then silence", []time.Time{t0.Add(time.Hour), t0}, t0.Add(time.Minute), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := NewIndex(maxStale)
			for _, p := range tc.proofs {
				x.Synced(p)
			}
			if got := x.Stale(tc.now); got != tc.stale {
				t.Errorf("Stale = %v, want %v", got, tc.stale)
			}
			if err := x.Check("https://a/", &Token{}, tc.now); (err == ErrStale) != tc.stale {
				t.Errorf("Check = %v, want stale %v", err, tc.stale)
			}
			if got := x.Age(tc.now) > maxStale; got != tc.stale {
				t.Errorf("Age = %s, stale %v, want %v", x.Age(tc.now), got, tc.stale)
			}
		})
	}
}
