package replay_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/replay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func key(b byte) [32]byte { return [32]byte{b} }

func TestMemory(t *testing.T) {
	type use struct {
		key       byte
		at        time.Duration
		wantFresh bool
		wantErr   error
	}
	tests := []struct {
		name string
		max  int
		uses []use
	}{
		{"fresh-then-replayed", 10, []use{{1, 0, true, nil}, {1, time.Second, false, nil}, {2, time.Second, true, nil}}},
		{"expired-is-fresh-again", 10, []use{{1, 0, true, nil}, {1, 59 * time.Second, false, nil}, {1, 60 * time.Second, true, nil}}},
		{"full-fails-closed", 2, []use{{1, 0, true, nil}, {2, 0, true, nil}, {3, 0, false, replay.ErrFull}, {1, 0, false, nil}}},
		{"full-until-expiry", 1, []use{{1, 0, true, nil}, {2, 30 * time.Second, false, replay.ErrFull}, {2, 60 * time.Second, true, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := replay.NewMemory(tt.max)
			if err != nil {
				t.Fatal(err)
			}
			for i, u := range tt.uses {
				fresh, err := m.Use(context.Background(), key(u.key), time.Minute, t0.Add(u.at))
				if fresh != u.wantFresh || !errors.Is(err, u.wantErr) {
					t.Errorf("use %d: Use(%d, +%s) = %t, %v; want %t, %v", i, u.key, u.at, fresh, err, u.wantFresh, u.wantErr)
				}
			}
		})
	}
}

// TestMemorySetMax: a changed bound keeps every proof held (a reload must
// not let them be replayed); below the entries held it refuses new proofs
// until enough expire; out of range it is refused and nothing changes.
func TestMemorySetMax(t *testing.T) {
	tests := []struct {
		name      string
		newMax    int
		wantErr   error
		wantFresh bool  // a new proof after the change
		wantUse   error // its error
	}{
		{name: "raised", newMax: 10, wantFresh: true},
		{name: "lowered-below-held", newMax: 1, wantUse: replay.ErrFull},
		{name: "zero-is-default", newMax: 0, wantFresh: true},
		{name: "out-of-range", newMax: -1, wantErr: replay.ErrInvalidOptions, wantUse: replay.ErrFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := replay.NewMemory(2)
			ctx := context.Background()
			m.Use(ctx, key(1), time.Minute, t0)
			m.Use(ctx, key(2), time.Minute, t0)
			if err := m.SetMax(tt.newMax); !errors.Is(err, tt.wantErr) {
				t.Fatalf("SetMax(%d) = %v, want %v", tt.newMax, err, tt.wantErr)
			}
			for _, k := range []byte{1, 2} {
				if fresh, err := m.Use(ctx, key(k), time.Minute, t0.Add(time.Second)); fresh || err != nil {
					t.Errorf("after SetMax: Use(%d) held before = %t, %v; want replayed", k, fresh, err)
				}
			}
			if fresh, err := m.Use(ctx, key(3), time.Minute, t0.Add(time.Second)); fresh != tt.wantFresh || !errors.Is(err, tt.wantUse) {
				t.Errorf("after SetMax: Use(3) = %t, %v; want %t, %v", fresh, err, tt.wantFresh, tt.wantUse)
			}
		})
	}
}

// TestMemoryConcurrent: of many concurrent uses of one key, exactly one is
// fresh.
func TestMemoryConcurrent(t *testing.T) {
	m, _ := replay.NewMemory(0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh := 0
	for range 200 {
		wg.Go(func() {
			ok, err := m.Use(context.Background(), key(7), time.Minute, t0)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				fresh++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if fresh != 1 {
		t.Errorf("%d fresh answers, want 1", fresh)
	}
	if s := m.Stats(); s.Fresh != 1 || s.Replayed != 199 || s.Entries != 1 {
		t.Errorf("Stats() = %+v", s)
	}
}

// TestMemoryPurges checks that expired entries leave the store.
func TestMemoryPurges(t *testing.T) {
	m, _ := replay.NewMemory(5000)
	for i := range 3000 {
		k := [32]byte{byte(i), byte(i >> 8)}
		if ok, err := m.Use(context.Background(), k, time.Second, t0); !ok || err != nil {
			t.Fatalf("Use(%d) = %t, %v", i, ok, err)
		}
	}
	if ok, _ := m.Use(context.Background(), key(0xff), time.Second, t0.Add(2*time.Second)); !ok {
		t.Fatal("a new key after expiry is not fresh")
	}
	if n := m.Stats().Entries; n != 1 {
		t.Errorf("Entries = %d after expiry, want 1", n)
	}
}

// BenchmarkMemoryUse is one fresh proof recorded in the memory store.
func BenchmarkMemoryUse(b *testing.B) {
	m, _ := replay.NewMemory(1 << 22)
	var k [32]byte
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		k[0], k[1], k[2], k[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		if ok, err := m.Use(context.Background(), k, time.Second, t0); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
