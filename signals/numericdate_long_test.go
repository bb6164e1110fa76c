package signals_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// TestNumericDateLongSpellingsReadExactly: a SET event's event_timestamp
// is read as the number it is, however spelled (internal/numericdate), and
// held to signals' range (not negative, not past year 9999). It went
// through json.Number.Float64 (strconv.ParseFloat, at most 800 digits
// before the point): an hour ago spelled with 2 000 zeros and e-2000 read
// as 0, so a credential change revoked the subject's tokens issued before
// 1970, none; now times 10^1210 read as now; -1e-400 read as -0 and passed
// as 1970, although negative. The iat and exp of a SET or a logout token,
// read by the verifier, are held to the same reading (they were read
// exactly before: these rows pass without the change).
func TestNumericDateLongSpellingsReadExactly(t *testing.T) {
	zeros := strings.Repeat("0", 2000)
	long := func(sec int64) json.Number { return json.Number(fmt.Sprintf("%d%se-2000", sec, zeros)) }
	ts := epoch.Add(-time.Hour)
	iat := epoch.Add(-time.Second)
	credChange := func(stamp any) map[string]any {
		return map[string]any{signals.EventCredentialChange: map[string]any{"event_timestamp": stamp}}
	}
	bob := func(before time.Time) revoke.Entry {
		return revoke.Entry{Issuer: issuerA, Kind: revoke.KindSub, Value: "bob", IssuedBefore: before, Source: revoke.SourceSSFPush}
	}
	alice := revoke.Entry{Issuer: issuerA, Kind: revoke.KindSub, Value: "alice", IssuedBefore: iat, Source: revoke.SourceBackchannelLogout}
	tests := []struct {
		name  string
		token string
		want  revoke.Entry // zero: refused, invalid_request
	}{
		{"event-timestamp-2000-zeros", mintSET(setClaims(credChange(long(ts.Unix())), map[string]any{"sub_id": opaqueBob})), bob(ts)},
		{"event-timestamp-fraction-2000-zeros", mintSET(setClaims(credChange(json.Number(fmt.Sprintf("%d%s.5e-2000", ts.Unix(), zeros))), map[string]any{"sub_id": opaqueBob})), bob(ts)},
		{"event-timestamp-point-far-left", mintSET(setClaims(credChange(json.Number(fmt.Sprintf("0.%s%de2010", zeros, ts.Unix()))), map[string]any{"sub_id": opaqueBob})), bob(ts)},
		{"event-timestamp-fraction-beyond-a-float64", mintSET(setClaims(credChange(json.Number(fmt.Sprintf("%d.999999999999", ts.Unix()))), map[string]any{"sub_id": opaqueBob})), bob(ts.Add(time.Second - time.Nanosecond))},
		{"event-timestamp-negative-zero", mintSET(setClaims(credChange(json.Number("-0.0e5")), map[string]any{"sub_id": opaqueBob})), bob(time.Unix(0, 0).UTC())},
		{"event-timestamp-now-times-10^1210", mintSET(setClaims(credChange(json.Number(fmt.Sprintf("%d%se-790", ts.Unix(), zeros))), map[string]any{"sub_id": opaqueBob})), revoke.Entry{}},
		{"event-timestamp-negative-below-a-float64", mintSET(setClaims(credChange(json.Number("-1e-400")), map[string]any{"sub_id": opaqueBob})), revoke.Entry{}},
		{"event-timestamp-negative-2000-zeros", mintSET(setClaims(credChange(json.Number("-"+string(long(ts.Unix())))), map[string]any{"sub_id": opaqueBob})), revoke.Entry{}},
		{"set-iat-and-exp-2000-zeros", mintSET(setClaims(map[string]any{signals.EventCredentialChange: map[string]any{}},
			map[string]any{"sub_id": opaqueBob, "iat": long(iat.Unix()), "exp": long(epoch.Add(time.Hour).Unix())})), bob(iat)},
		{"set-exp-passed-2000-zeros", mintSET(setClaims(credChange(ts.Unix()), map[string]any{"sub_id": opaqueBob, "exp": long(epoch.Add(-time.Hour).Unix())})), revoke.Entry{}},
		{"logout-iat-and-exp-2000-zeros", mintA(nil, logoutClaims(map[string]any{"sid": nil, "iat": long(iat.Unix()), "exp": long(epoch.Add(2 * time.Minute).Unix())})), alice},
		{"logout-iat-ahead-2000-zeros", mintA(nil, logoutClaims(map[string]any{"sid": nil, "iat": long(epoch.Add(time.Hour).Unix())})), revoke.Entry{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, signals.RevokeSubject)
			var err error
			if strings.HasPrefix(tt.name, "logout-") {
				_, err = e.r.Logout(context.Background(), tt.token, epoch)
			} else {
				_, _, err = e.r.Receive(context.Background(), issuerA, tt.token, revoke.SourceSSFPush, epoch)
			}
			stored := e.store.stored()
			if tt.want == (revoke.Entry{}) {
				if !errors.Is(err, signals.ErrInvalid) || signals.Code(err) != "invalid_request" || len(stored) != 0 {
					t.Fatalf("err = %v (code %q), stored %+v; want a refusal invalid_request and nothing stored", err, signals.Code(err), stored)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if len(stored) != 1 {
				t.Fatalf("stored %+v, want one entry", stored)
			}
			s := stored[0]
			s.ID, s.CreatedAt, s.ExpiresAt = "", time.Time{}, time.Time{}
			if s != tt.want {
				t.Errorf("stored %+v, want %+v", s, tt.want)
			}
		})
	}
}
