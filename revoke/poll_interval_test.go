package revoke_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
)

// TestRedisHealthyCopyNeverStale: with a healthy Redis the copy is proven
// whole often enough that it is never older than its max staleness.
// revocation.max_staleness may be as low as 1s, and the follower proved the
// copy whole once a poll interval (1s) plus the poll's own round trips: a
// copy older than 1s for a moment each second, so a replica over a Redis
// that never failed answered a share of its requests 503 and flapped
// unready. The proofs are sampled from SyncedAt: two in a row further
// apart than the max staleness mean the copy was stale between them.
func TestRedisHealthyCopyNeverStale(t *testing.T) {
	for _, tt := range []struct {
		name     string
		maxStale time.Duration
	}{
		{"config-minimum-1s", time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			st, _ := newURLStore(t, srv.URL(), tt.maxStale)
			eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
			last := st.Index().SyncedAt()
			var gaps []time.Duration
			for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if s := st.Index().SyncedAt(); !s.Equal(last) {
					gaps = append(gaps, s.Sub(last))
					last = s
				}
			}
			if len(gaps) < 3 {
				t.Fatalf("%d proofs of the copy in 4s, want at least 3", len(gaps))
			}
			// The median gap, not the widest: a busy machine may stall the
			// follower once, and a poll interval that leaves no margin under
			// the max staleness shows in every gap.
			slices.Sort(gaps)
			if med := gaps[len(gaps)/2]; med > tt.maxStale*3/4 {
				t.Errorf("proofs of the copy %v apart (median of %d; widest %v), want well within max staleness %v: the copy is stale for a moment at each with Redis healthy", med, len(gaps), gaps[len(gaps)-1], tt.maxStale)
			}
		})
	}
}
