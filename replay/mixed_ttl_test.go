package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/replay"
)

// TestMemoryMixedTTLsNotFullOfExpired: a DPoP jti is kept max_age + 2 ×
// the issuer's leeway, so one store holds entries of several lifetimes
// (leeway is per issuer, [0s, 10m]; a reload's retired max_age is another).
// The purge walks the insertion queue from the front and stops at the
// first entry not yet expired, and the bound counted every entry of the
// map, expired or not: one proof of an issuer with a 10m leeway (kept
// 21 minutes) held back the purge of every 60s proof behind it, and the
// store refused new proofs (ErrFull: every DPoP request 503) with a tenth
// of its bound live. A low-privilege client of the long-leeway issuer needs
// one proof every 20 minutes to keep it so. The bound is of live proofs
// (CONFIG: "A full store refuses new proofs instead of forgetting
// unexpired ones").
func TestMemoryMixedTTLsNotFullOfExpired(t *testing.T) {
	const max = 1000
	m, err := replay.NewMemory(max)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	long := time.Minute + 2*10*time.Minute // max_age 60s, leeway 10m
	short := time.Minute                   // max_age 60s, leeway 0s
	if ok, err := m.Use(ctx, [32]byte{0xff, 0xff, 0xff}, long, t0); !ok || err != nil {
		t.Fatalf("long-lived proof: %t, %v", ok, err)
	}
	// 10 proofs a second, each kept 60s: at most 601 live at any time.
	n := 0
	for s := range 300 {
		now := t0.Add(time.Duration(s) * time.Second)
		for range 10 {
			n++
			k := [32]byte{byte(n), byte(n >> 8), byte(n >> 16)}
			if ok, err := m.Use(ctx, k, short, now); !ok || err != nil {
				t.Fatalf("at +%ds, proof %d: Use = %t, %v, with at most %d proofs live (bound %d; the store holds %d entries)",
					s, n, ok, err, 1+10*60, max, m.Stats().Entries)
			}
		}
	}
}

// TestMemoryQueuesBounded: a lifetime per use (signal jtis kept until a
// token's far exp) makes no more than MaxQueues queues, so that a Use does
// not walk one queue per entry; every entry still expires on time.
func TestMemoryQueuesBounded(t *testing.T) {
	m, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 1000
	for i := range n {
		k := [32]byte{byte(i), byte(i >> 8), 1}
		if ok, err := m.Use(ctx, k, 24*time.Hour+time.Duration(n-i)*time.Second, t0); !ok || err != nil {
			t.Fatalf("use %d: %t, %v", i, ok, err)
		}
	}
	if q := m.Queues(); q > replay.MaxQueues {
		t.Fatalf("%d queues for %d lifetimes, want at most %d", q, n, replay.MaxQueues)
	}
	// Each entry is refused until its own expiry and taken after it,
	// whichever queue holds it.
	for _, i := range []int{n - 1, n / 2, 0} { // in the order of their expiry
		k := [32]byte{byte(i), byte(i >> 8), 1}
		exp := t0.Add(24*time.Hour + time.Duration(n-i)*time.Second)
		if ok, _ := m.Use(ctx, k, time.Minute, exp.Add(-time.Nanosecond)); ok {
			t.Errorf("entry %d taken again before its expiry", i)
		}
		if ok, _ := m.Use(ctx, k, time.Minute, exp); !ok {
			t.Errorf("entry %d refused at its expiry", i)
		}
	}
}
