package revoke

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// model is the matching rule of SPEC written the obvious way: a map of
// entries, scanned whole. TestIndexModel holds the index to it.
type model map[string]Entry

func (m model) check(issuer string, t *Token, now time.Time) bool {
	for _, e := range m {
		if e.Issuer != issuer || !e.ExpiresAt.After(now) {
			continue
		}
		before := t.IssuedAt.IsZero() || t.IssuedAt.Before(e.IssuedBefore)
		switch e.Kind {
		case KindJTI:
			if t.JTI != "" && t.JTI == e.Value {
				return true
			}
		case KindSID:
			if t.SID != "" && t.SID == e.Value {
				return true
			}
		case KindSub:
			if t.Sub != "" && t.Sub == e.Value && before {
				return true
			}
		case KindClientID:
			if (t.ClientID != "" && t.ClientID == e.Value || t.AZP != "" && t.AZP == e.Value) && before {
				return true
			}
		case KindIssuer:
			if before {
				return true
			}
		}
	}
	return false
}

func (m model) list(now time.Time) []string {
	var ids []string
	for id, e := range m {
		if e.ExpiresAt.After(now) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestIndexModel puts, replaces, removes, expires and reloads entries at
// random, over few values (so pairs share nodes and IDs are reused), and
// after every step compares the index's answers for random tokens, its
// List and its Get with the model's. Entries are made as the stores make
// them (created now, kept for one retention, issued_before not after
// now) and tokens live at most one retention (config refuses a
// max_lifetime above it): under those rules the index's shortcut (the
// latest issued_before decides for tokens with iat) is exact.
func TestIndexModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			x, m := NewIndex(0), model{}
			now := t0
			const retention = 20 * time.Minute
			issuers := []string{"https://a/", "https://b/", "https://issuer.example/" + strings.Repeat("x", 70000)}
			values := []string{"v0", "v1", "v2", "v3", strings.Repeat("long", 300)}
			steps := 1500
			if testing.Short() {
				steps = 500
			}
			for step := range steps {
				switch op := rng.IntN(20); {
				case op < 12:
					k := Kinds()[rng.IntN(5)]
					e := Entry{ID: fmt.Sprint("id-", rng.IntN(400)), Issuer: issuers[rng.IntN(len(issuers))], Kind: k,
						CreatedAt: now, ExpiresAt: now.Add(retention), Source: Sources()[rng.IntN(4)]}
					if k != KindIssuer {
						e.Value = values[rng.IntN(len(values))]
					}
					if k != KindJTI && k != KindSID {
						e.IssuedBefore = now.Add(-time.Duration(rng.IntN(int(retention/time.Second))) * time.Second)
					}
					x.Put(e, now)
					if e.ExpiresAt.After(now) {
						m[e.ID] = e
					}
				case op < 16:
					id := fmt.Sprint("id-", rng.IntN(400))
					// An expired entry may be removed, or swept already.
					e, had := m[id]
					if got := x.Remove(id); got && !had || !got && had && e.ExpiresAt.After(now) {
						t.Fatalf("step %d: Remove(%s) = %v, the model has it: %v", step, id, got, had)
					}
					delete(m, id)
				case op < 19:
					now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
				default:
					es := x.List("", now)
					x = NewIndex(0)
					x.Replace(es, now)
				}
				for range 8 {
					tok := Token{JTI: values[rng.IntN(len(values))], SID: values[rng.IntN(len(values))],
						Sub: values[rng.IntN(len(values))], ClientID: values[rng.IntN(len(values))], AZP: values[rng.IntN(len(values))]}
					if rng.IntN(3) > 0 {
						tok.IssuedAt = now.Add(-time.Duration(rng.IntN(int(retention/time.Second))) * time.Second)
					}
					if rng.IntN(4) == 0 {
						tok.JTI, tok.SID = "", ""
					}
					iss := issuers[rng.IntN(len(issuers))]
					want := m.check(iss, &tok, now)
					if got := x.Check(iss, &tok, now) == ErrRevoked; got != want {
						t.Fatalf("step %d: Check(%.20s, %+v) revoked = %v, the model says %v", step, iss, tok, got, want)
					}
				}
				if step%50 == 0 {
					var ids []string
					for _, e := range x.List("", now) {
						ids = append(ids, e.ID)
						if want := m[e.ID]; !reflect.DeepEqual(e, want) {
							t.Fatalf("step %d: List has %+v, the model %+v", step, e, want)
						}
						if got, ok := x.Get(e.ID, now); !ok || !reflect.DeepEqual(got, e) {
							t.Fatalf("step %d: Get(%s) = %+v, %v", step, e.ID, got, ok)
						}
					}
					slices.Sort(ids)
					if want := m.list(now); !slices.Equal(ids, want) {
						t.Fatalf("step %d: List IDs = %v, the model's %v", step, ids, want)
					}
				}
			}
		})
	}
}

// TestIndexPointerFree: 100 000 entries are a few hundred heap objects,
// none of them one per entry, so a collection does not mark them one by
// one (docs/BENCHMARKS.md: an index of strings and maps of entries made
// every collection of a loaded server mark ~50 MB).
func TestIndexPointerFree(t *testing.T) {
	const n = 100_000
	es := make([]Entry, n)
	for i := range es {
		es[i] = entry(fmt.Sprintf("%032x", i), KindJTI, fmt.Sprintf("jti-%d", i), time.Time{})
		if i%2 == 0 {
			es[i] = entry(fmt.Sprintf("%032x", i), KindSub, fmt.Sprintf("sub-%d", i), t0)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := NewIndex(0)
	x.Replace(es, t0)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(es) // counted in both
	objects := int64(after.HeapObjects) - int64(before.HeapObjects)
	t.Logf("100 000 entries: %d heap objects, %.1f MB", objects, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1e6)
	if objects > 2000 {
		t.Errorf("100 000 entries are %d heap objects, want at most 2000", objects)
	}
	if x.Check("https://a/", &Token{JTI: "jti-99999"}, t0) != ErrRevoked {
		t.Error("the last entry is not found")
	}
	runtime.KeepAlive(x)
}
