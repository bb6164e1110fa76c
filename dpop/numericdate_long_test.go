package dpop_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestIATLongSpellingsReadExactly: a proof's iat is judged by the number it
// is, however it is spelled (internal/numericdate). It went through
// strconv.ParseFloat, which counts at most 800 digits before the point:
// now's seconds followed by 2 000 zeros and e-2000 (now exactly) read as 0,
// a proof of now refused as 56 years old; followed by 2 000 zeros and e-790
// (now times 10^1210, far beyond the 10^11 a NumericDate may be here) it
// read as now, a proof of no time accepted, its jti remembered for a window
// it was not in.
func TestIATLongSpellingsReadExactly(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	zeros := strings.Repeat("0", 2000)
	now := t0.Unix()
	tests := []struct {
		name string
		iat  string
		want time.Time // zero: refused at dpop-claims or dpop-iat
	}{
		{"now-2000-zeros", fmt.Sprintf("%d%se-2000", now, zeros), t0},
		{"ten-seconds-ago-fraction-2000-zeros", fmt.Sprintf("%d%s.25e-2000", now-10, zeros), t0.Add(-10 * time.Second)},
		{"point-far-left", fmt.Sprintf("0.%s%de2010", zeros, now), t0},
		{"fraction-beyond-a-float64", fmt.Sprintf("%d.999999999999", now-10), t0.Add(-9*time.Second - time.Nanosecond)},
		{"now-times-10^1210", fmt.Sprintf("%d%se-790", now, zeros), time.Time{}},
		{"a-day-ago-2000-zeros", fmt.Sprintf("%d%se-2000", now-86400, zeros), time.Time{}},
		{"an-hour-ahead-2000-zeros", fmt.Sprintf("%d%se-2000", now+3600, zeros), time.Time{}},
		{"negative-now-2000-zeros", fmt.Sprintf("-%d%se-2000", now, zeros), time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChecker(t, dpop.Options{})
			p := proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": json.Number(tt.iat)})
			steps, got, err := c.Explain(t.Context(), input(p, jkt), t0)
			if tt.want.IsZero() {
				if !errors.Is(err, verify.ErrInvalidDPoPProof) {
					t.Fatalf("err = %v, want invalid_dpop_proof", err)
				}
				if last := steps[len(steps)-1].Check; last != "dpop-iat" && last != "dpop-claims" {
					t.Errorf("failed at %s, want dpop-claims or dpop-iat", last)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want the proof accepted", err)
			}
			if !got.IssuedAt.Equal(tt.want) {
				t.Errorf("IssuedAt = %s, want %s", got.IssuedAt.Format(time.RFC3339Nano), tt.want.Format(time.RFC3339Nano))
			}
		})
	}
}
