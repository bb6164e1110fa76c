package introspect

import (
	"bytes"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// FuzzSharedEntry holds the shared cache's entry format (what a replica
// reads back from Redis, which whoever can write the Redis controls) to
// three rules: an entry a replica stored reads back as it was (activity,
// claims, fresh and stale ends to the millisecond); it reads back under
// its own key only; and any one byte changed, or the value cut or
// lengthened, is no entry (nil: a miss, never another answer). A value
// decode accepts is exactly the encoding of what it decoded.
func FuzzSharedEntry(f *testing.F) {
	f.Add(true, int64(1764590400000), int64(1764590460000), []byte(`{"sub":"alice","exp":1764594000}`), "k1", "k2", uint16(30), byte(1))
	f.Add(false, int64(0), int64(-1), []byte(nil), "k1", "", uint16(1), byte(0x80))
	f.Add(true, int64(-1<<63), int64(1<<63-1), []byte(`{}`), "", "k", uint16(0), byte(0xff))
	f.Add(false, int64(5), int64(5), []byte(`{"x":1}`), "a", "a\x00", uint16(40), byte(2))
	s := &shared{entryMAC: bytes.Repeat([]byte{7}, 32), maxClaims: 1 << 16}
	f.Fuzz(func(t *testing.T, active bool, freshMS, staleMS int64, claims []byte, key, other string, at uint16, flip byte) {
		e := &entry{fresh: time.UnixMilli(freshMS), stale: time.UnixMilli(staleMS)}
		if active {
			if len(claims) == 0 {
				return // no answer is active without claims: an object at least
			}
			e.ans = &verify.Introspection{Claims: claims}
		}
		b := s.encode(key, e)
		got := s.decode(key, b)
		if got == nil {
			t.Fatalf("decode(encode(%+v)) = nil", e)
		}
		if got.fresh.UnixMilli() != freshMS || got.stale.UnixMilli() != staleMS || (got.ans != nil) != active ||
			!bytes.Equal(got.claims(), e.claims()) {
			t.Fatalf("decode(encode()) = fresh %d stale %d active %v claims %q; want %d %d %v %q",
				got.fresh.UnixMilli(), got.stale.UnixMilli(), got.ans != nil, got.claims(), freshMS, staleMS, active, e.claims())
		}
		if other != key {
			if s.decode(other, b) != nil {
				t.Fatalf("an entry stored under %q reads back under %q", key, other)
			}
		}
		// One byte changed.
		if flip != 0 {
			m := bytes.Clone(b)
			m[int(at)%len(m)] ^= flip
			if d := s.decode(key, m); d != nil {
				t.Fatalf("entry with byte %d changed by %#x read back: active %v claims %q", int(at)%len(m), flip, d.ans != nil, d.claims())
			}
		}
		// Cut short, or lengthened.
		if d := s.decode(key, b[:int(at)%len(b)]); d != nil {
			t.Fatalf("entry cut to %d bytes read back", int(at)%len(b))
		}
		if d := s.decode(key, append(bytes.Clone(b), flip)); d != nil {
			t.Fatalf("entry with a byte appended read back")
		}
		// Arbitrary bytes as a value: accepted only as an exact encoding.
		raw := append([]byte{sharedVersion, flip & 1}, claims...)
		if d := s.decode(key, raw); d != nil && !bytes.Equal(s.encode(key, d), raw) {
			t.Fatalf("decode(%q) accepted what does not encode back", raw)
		}
	})
}
