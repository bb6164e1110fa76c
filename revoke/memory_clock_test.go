package revoke

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A start while the clock is ahead (an NTP server or time seeding that
// stepped it forward, corrected minutes later) read the log, kept only the
// entries live at that wrong now and rewrote the log with them: every
// acknowledged revocation younger than the jump was gone for good, and
// once the clock was right again the tokens they revoked, still within
// their lifetime, passed. The log keeps an entry for one retention past
// its expiry; the index still enforces only the live ones.
func TestMemoryStartWithClockAheadKeepsEntries(t *testing.T) {
	const retention = time.Hour
	dir := t.TempDir()
	var now time.Time
	open := func(at time.Time) *Memory {
		t.Helper()
		now = at
		m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: retention, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatalf("OpenMemory() = %v", err)
		}
		return m
	}
	m := open(t0)
	if _, err := m.Add(context.Background(), Entry{Issuer: "https://a/", Kind: KindJTI, Value: "stolen", Source: SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	m.Close()

	ahead := open(t0.Add(100 * time.Minute)) // restarted while the clock is 90 minutes ahead
	if err := ahead.Index().Check("https://a/", &Token{JTI: "stolen"}, now); err != nil {
		t.Errorf("Check() while the clock is ahead = %v, want nil (the entry has expired at that time)", err)
	}
	ahead.Close()
	right := open(t0.Add(15 * time.Minute)) // the clock corrected, restarted again
	defer right.Close()
	if err := right.Index().Check("https://a/", &Token{JTI: "stolen"}, now); !errors.Is(err, ErrRevoked) {
		t.Errorf("after a start with the clock 90 minutes ahead, then the clock corrected: Check() = %v, want revoked (the entry was acknowledged and is within its retention)", err)
	}
}

// The log is compacted once it holds many more records than entries: the
// lifted entries leave it, the live ones and those expired for less than a
// retention stay, and a start reads the same entries back.
func TestMemoryCompactionKeepsEntries(t *testing.T) {
	const retention = time.Hour
	dir := t.TempDir()
	now := t0
	open := func() *Memory {
		t.Helper()
		m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: retention, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatalf("OpenMemory() = %v", err)
		}
		return m
	}
	ctx := context.Background()
	m := open()
	add := func(jti string) Entry {
		t.Helper()
		e, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: jti, Source: SourceAdmin})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	add("expired-recently")
	now = now.Add(retention + expiryMargin + time.Minute)
	add("live")
	for range 2100 {
		if err := m.Delete(ctx, add("lifted").ID); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	lines := m.lines
	m.mu.Unlock()
	if lines > 4096 {
		t.Errorf("%d records in the log after 4202 writes of 2 entries: never compacted", lines)
	}
	m.Close()
	es, err := readLog(filepath.Join(dir, MemoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Value)
	}
	if want := []string{"expired-recently", "live"}; !slices.Equal(got, want) {
		t.Errorf("log after compaction holds %q, want %q", got, want)
	}
	m2 := open()
	defer m2.Close()
	if err := m2.Index().Check("https://a/", &Token{JTI: "live"}, now); !errors.Is(err, ErrRevoked) {
		t.Errorf("after restart, Check(live) = %v, want revoked", err)
	}
}

// A running store whose clock steps ahead and back (a VM resumed with a
// stale clock, then corrected; an NTP step at boot undone) keeps enforcing
// what it acknowledged. The index used to drop, at its next sweep, every
// entry the wrong clock took for expired, and once the clock was right the
// tokens they revoked, still within their lifetime, passed until a
// restart read the log again. So did a start while the clock was ahead,
// without a second restart. The index now holds an entry one retention
// past its expiry, as the log does; Check still enforces only live ones.
func TestMemoryClockStepKeepsEntries(t *testing.T) {
	const retention = time.Hour
	ctx := context.Background()
	steps := []struct {
		name string
		// run drives the store through the step; at returns the clock.
		run func(t *testing.T, dir string, now *time.Time) *Memory
	}{
		{"running process", func(t *testing.T, dir string, now *time.Time) *Memory {
			m := openAt(t, dir, retention, now)
			if _, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "stolen", Source: SourceAdmin}); err != nil {
				t.Fatal(err)
			}
			*now = t0.Add(100 * time.Minute) // stepped 100 minutes ahead
			// A write sweeps the index (once a minute at most).
			if _, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "other", Source: SourceAdmin}); err != nil {
				t.Fatal(err)
			}
			if got := m.Index().Check("https://a/", &Token{JTI: "stolen"}, *now); got != nil {
				t.Errorf("Check() while the clock is ahead = %v, want nil (the entry has expired at that time)", got)
			}
			return m
		}},
		{"start while ahead", func(t *testing.T, dir string, now *time.Time) *Memory {
			m := openAt(t, dir, retention, now)
			if _, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "stolen", Source: SourceAdmin}); err != nil {
				t.Fatal(err)
			}
			m.Close()
			*now = t0.Add(100 * time.Minute)
			return openAt(t, dir, retention, now)
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			now := t0
			m := s.run(t, t.TempDir(), &now)
			defer m.Close()
			now = t0.Add(15 * time.Minute)             // the clock corrected
			if _, err := m.List(ctx, ""); err != nil { // a writer's sweep at the right time
				t.Fatal(err)
			}
			if err := m.Index().Check("https://a/", &Token{JTI: "stolen"}, now); !errors.Is(err, ErrRevoked) {
				t.Errorf("after the clock stepped 100 minutes ahead and back: Check() = %v, want revoked (acknowledged, within its retention)", err)
			}
		})
	}
}

// openAt opens the memory store in dir with its clock read from *now.
func openAt(t *testing.T, dir string, retention time.Duration, now *time.Time) *Memory {
	t.Helper()
	m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: retention, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatalf("OpenMemory() = %v", err)
	}
	return m
}
